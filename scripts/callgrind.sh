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

# ir NAME CMD...: the counted Ir of the host thread (file -01) of one callgrind run.
ir() {
  local name="$1"
  shift
  valgrind --tool=callgrind --separate-threads=yes --collect-atstart=no \
    --toggle-collect=typed_events --toggle-collect=typed_copies \
    --toggle-collect=raw_events --toggle-collect=raw_copies \
    --callgrind-out-file="$work/$name" "$@" >"$work/$name.log" 2>&1 \
    || { echo "callgrind.sh: $name failed:" >&2; cat "$work/$name.log" >&2; exit 1; }
  local main others
  main="$(awk '/^summary:/ {print $2}' "$work/$name-01")"
  others="$(cat "$work/$name"-* | awk '/^summary:/ {s += $2} END {print s}')"
  [ "$main" = "$others" ] || echo "callgrind.sh: note: other threads counted $((others - main)) Ir in $name" >&2
  echo "$main"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
per() { awk -v a="$1" -v n="$n" 'BEGIN {printf "%.0f", a / n}'; }

echo "N=$n cycles per workload; Ir of the host thread inside the counted function"
printf '%-4s %-7s %12s %12s %12s %9s %9s %9s %9s\n' run work typed raw+join raw \
  'typed/c' 'raw+j/c' 'typed/r+j' 'typed/raw'
for run in $(seq 1 "$runs"); do
  for w in events copies; do
    t="$(ir "t-$w-$run" "$typed" "$w" "$n")"
    j="$(ir "j-$w-$run" "$raw" "$w" "$n" join)"
    if [ "$w" = events ]; then
      m="$(ir "m-$w-$run" "$raw" "$w" "$n" minimal)"
    else
      m="$j" # copies need no join: raw+join and raw are the same program
    fi
    printf '%-4s %-7s %12s %12s %12s %9s %9s %9s %9s\n' "$run" "$w" "$t" "$j" "$m" \
      "$(per "$t")" "$(per "$j")" "$(ratio "$t" "$j")" "$(ratio "$t" "$m")"
  done
done
echo "typed/c, raw+j/c: Ir per cycle. typed/r+j: the library's own cost (same runtime calls)."
