#!/usr/bin/env bash
# Instruction counts (Ir) of the typed API against raw calls, on the simulator (issue 7).
#
# Builds benches/callgrind_typed.rs and benches/callgrind_raw.rs in the bench profile
# (release), runs each workload under `valgrind --tool=callgrind` with collection switched on
# only inside the function that does the N cycles (--toggle-collect=typed_events etc.), one
# output file per thread (--separate-threads=yes), and prints the host thread's Ir: the
# simulator's worker threads never enter those functions, so they count 0. Setup, teardown
# and one warm-up cycle are outside the counted function.
#
# Usage: scripts/callgrind.sh [N]       (default N=1000 cycles per workload)
# Env:   CARGO_TARGET_DIR               (default <repo>/target)
#        CALLGRIND_RUNS=2               how many times to run everything (stability)
#
# Variants: typed = the typed API; raw+join = raw calls issuing exactly the typed API's
# runtime calls (including the join event it inserts before re-recording an event, see
# src/event.rs); raw = what a C programmer writes (no join). The library's own cost is
# typed / raw+join; typed / raw adds the extra join's runtime calls.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
n="${1:-1000}"
runs="${CALLGRIND_RUNS:-2}"
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
command -v jq >/dev/null || { echo "callgrind.sh: jq is not installed (apt-get install jq)" >&2; exit 1; }

cd "$root"
artifacts="$(cargo bench --quiet --no-run --bench callgrind_typed --bench callgrind_raw \
  --message-format=json 2>/dev/null)"
exe() {
  jq -r --arg t "$1" 'select(.reason == "compiler-artifact" and .target.name == $t) | .executable' \
    <<<"$artifacts" | grep -v '^null$' | tail -1
}
typed="$(exe callgrind_typed)"
raw="$(exe callgrind_raw)"
[ -x "$typed" ] && [ -x "$raw" ] || { echo "callgrind.sh: bench executables not found" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# ir NAME EXE ARGS...: "lib runtime" Ir of the host thread (file -01) of one callgrind run:
# lib = instructions of the bench executable itself (the typed API or the raw calls, both
# compiled into it), runtime = everything it called into (the simulator, libc, the loader).
ir() {
  local name="$1" exe="$2"
  shift
  valgrind --tool=callgrind --separate-threads=yes --collect-atstart=no \
    --compress-strings=no --compress-pos=no \
    --toggle-collect=typed_events --toggle-collect=typed_copies \
    --toggle-collect=raw_events --toggle-collect=raw_copies \
    --callgrind-out-file="$work/$name" "$@" >"$work/$name.log" 2>&1 \
    || { echo "callgrind.sh: $name failed:" >&2; cat "$work/$name.log" >&2; exit 1; }
  local others
  others="$(cat "$work/$name"-* | awk '/^summary:/ {s += $2} END {print s}')"
  # Self cost per object: a cost line belongs to the object of the last `fn=`; the line
  # after `calls=` is the inclusive cost of a call, not the caller's own.
  awk -v exe="$exe" -v all="$others" '
    /^ob=/ { ob = substr($0, 4); next }
    /^fn=/ { fob = ob; next }
    /^calls=/ { skip = 1; next }
    /^(0x[0-9a-f]+|[0-9]+|[+-][0-9]+|[*]) / {
      if (skip) { skip = 0; next }
      if (fob == exe) lib += $NF; else rt += $NF
      next
    }
    /^summary:/ { total = $2 }
    END {
      if (lib + rt != total) { print "callgrind.sh: self costs do not add up" > "/dev/stderr"; exit 1 }
      if (all != total) print "callgrind.sh: note: other threads counted " all - total " Ir" > "/dev/stderr"
      print lib, rt
    }' "$work/$name-01"
}

per() { awk -v a="$1" -v n="$n" 'BEGIN {printf "%.0f", a / n}'; }
# ratio TYPED_LIB RAW_LIB RUNTIME: with the same runtime work on both sides.
ratio() { awk -v t="$1" -v r="$2" -v w="$3" 'BEGIN {printf "%.4f", (t + w) / (r + w)}'; }
total_ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.4f", a / b}'; }

echo "N=$n cycles per workload; Ir of the host thread inside the counted function, per cycle"
printf '%-4s %-7s %8s %8s %8s %9s %9s %10s %10s %10s\n' run work 'typed' 'raw' 'raw+join' \
  'rt(typed)' 'rt(raw)' 'same-rt' 'measured' 'vs raw+j'
for run in $(seq 1 "$runs"); do
  for w in events copies; do
    read -r tl tr < <(ir "t-$w-$run" "$typed" "$w" "$n")
    if [ "$w" = events ]; then
      read -r ml mr < <(ir "m-$w-$run" "$raw" "$w" "$n" minimal)
      read -r jl jr < <(ir "j-$w-$run" "$raw" "$w" "$n" join)
    else
      # Copies need no join: raw+join and raw are the same program.
      read -r ml mr < <(ir "m-$w-$run" "$raw" "$w" "$n")
      jl="$ml"
      jr="$mr"
    fi
    printf '%-4s %-7s %8s %8s %8s %9s %9s %10s %10s %10s\n' "$run" "$w" \
      "$(per "$tl")" "$(per "$ml")" "$(per "$jl")" "$(per "$tr")" "$(per "$mr")" \
      "$(ratio "$tl" "$ml" "$mr")" "$(total_ratio "$((tl + tr))" "$((ml + mr))")" \
      "$(total_ratio "$((tl + tr))" "$((jl + jr))")"
  done
done
cat <<'EOF'
typed, raw, raw+join: the bench executable's own instructions per cycle (the typed API's
  code, or the raw calls' code). rt(..): the runtime's (simulator, libc) per cycle.
same-rt: (typed + rt(raw)) / (raw + rt(raw)): the typed program with exactly the simulator
  work of the raw one (the issue's "identical simulator work"). measured: the two runs'
  totals as counted; they differ also by the simulator's own run-to-run variation (how often
  the host thread blocks waiting for a worker). vs raw+j: measured, against the raw program
  that issues the typed API's join events every cycle.
EOF
