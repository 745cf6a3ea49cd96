#!/usr/bin/env bash
# Instruction counts (Ir) of the typed API against raw calls, on the simulator.
#
# Builds benches/callgrind_typed.rs and benches/callgrind_raw.rs in the bench profile
# (release) and runs each workload under `valgrind --tool=callgrind`, twice over:
#
# 1. Host thread: collection switched on only inside the function that runs the N cycles
#    (--toggle-collect=typed_events etc.), one output file per thread; the host thread's
#    file is read (the simulator's worker threads never enter those functions). Setup,
#    teardown and the warm-up cycle are outside the counted function.
# 2. Whole program: every thread counted from the start, once with N and once with 2N
#    cycles; the difference over N is the per-cycle cost of the whole program (setup,
#    teardown and warm-up cancel out), the simulator's worker threads included.
#
# Each count is split by object: the bench executable's own instructions (the typed API's
# code, or the raw calls', both compiled into it) and the runtime's (the simulator, libc,
# the loader). Both programs make the same runtime calls, so both runtime counts measure the
# same simulator work, up to its run-to-run variation (how often a thread blocks or wakes).
# The ratio "with identical simulator work" adds their mean to both sides; "measured"
# divides the totals as counted, variation included.
#
# Usage: scripts/callgrind.sh [--check] [N]   (default N=1000 cycles per workload)
#        --check: exit 1 if the typed API's own instructions per cycle exceed the raw
#        program's by more than the budget of the workload (BUDGET below: deterministic for a
#        compiler, so CI catches any change that costs instructions), or if a whole-program
#        ratio with identical simulator work exceeds 1.02. The ratio alone is no gate: it
#        shrinks as the typed code gets cheaper, but grows as the simulator gets faster (it
#        runs far fewer instructions per call than the vendor runtime), so a faster
#        simulator, not a costlier API, would fail it.
# Env:   CARGO_TARGET_DIR               (default <repo>/target)
#        CALLGRIND_RUNS=2               how many times to run everything (stability)
#
# Workloads: events (record; wait scope with a reset; two synchronisations), events_direct
# (the same with `Event::wait_and_reset`), copies (a 4 KiB H2D copy in an async scope, then
# its synchronisation), callbacks (launch an empty blocking callback, then synchronise; the
# callback runs on the report thread, counted in the whole-program rows only), pipeline (a
# double-buffered frame: H2D, simulated kernel, D2H), jpeg_pipeline (a `JpegPipeline` frame:
# the file's query and copy, JPEGD, VPC, a model execution, D2H; the same small JPEG every
# frame, so that no picture description is set again).
# Variants: typed = the typed API; raw = what a C programmer writes; raw+join = raw calls
# that also issue the join event the typed API inserts before re-recording an event whose
# last reset on another stream may be pending (src/typed/event/mod.rs; skipped once that stream has
# been synchronised, as in this loop).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
check=0
if [ "${1:-}" = --check ]; then
  check=1
  shift
fi
n="${1:-1000}"
runs="${CALLGRIND_RUNS:-2}"
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
command -v jq >/dev/null || { echo "callgrind.sh: jq is not installed (apt-get install jq)" >&2; exit 1; }

cd "$root"
artifacts="$(cargo bench --quiet --no-run -p ascend-typestate-benches \
  --bench callgrind_typed --bench callgrind_raw \
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

# split FILE EXE: "lib runtime" self Ir of one callgrind output file. A cost line belongs to
# the object of the last `fn=`; the line after `calls=` is the inclusive cost of a call, not
# the caller's own.
split() {
  awk -v exe="$2" '
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
      if (lib + rt != total) { print "callgrind.sh: self costs do not add up in " FILENAME > "/dev/stderr"; exit 1 }
      print lib + 0, rt + 0
    }' "$1"
}

# host NAME EXE ARGS...: "lib runtime" Ir of the host thread inside the counted function.
host() {
  local name="$1" exe="$2"
  shift
  valgrind --tool=callgrind --separate-threads=yes --collect-atstart=no \
    --compress-strings=no --compress-pos=no \
    --toggle-collect=typed_events --toggle-collect=typed_events_direct \
    --toggle-collect=typed_copies --toggle-collect=typed_callbacks \
    --toggle-collect=typed_pipeline --toggle-collect=raw_pipeline \
    --toggle-collect=typed_jpeg_pipeline --toggle-collect=raw_jpeg_pipeline \
    --toggle-collect=typed_many_events --toggle-collect=raw_many_events \
    --toggle-collect=typed_deep_callbacks --toggle-collect=raw_deep_callbacks \
    --toggle-collect=raw_events --toggle-collect=raw_copies --toggle-collect=raw_callbacks \
    --callgrind-out-file="$work/$name" "$@" >"$work/$name.log" 2>&1 \
    || { echo "callgrind.sh: $name failed:" >&2; cat "$work/$name.log" >&2; exit 1; }
  split "$work/$name-01" "$exe"
}

# whole NAME EXE WORKLOAD [VARIANT]: "lib runtime" Ir per cycle of the whole program, all
# threads, from runs of N and 2N cycles.
whole() {
  local name="$1" exe="$2" workload="$3" variant="${4:-}" k
  for k in 1 2; do
    valgrind --tool=callgrind --separate-threads=no --compress-strings=no --compress-pos=no \
      --callgrind-out-file="$work/$name-$k" "$exe" "$workload" "$((k * n))" $variant \
      >"$work/$name-$k.log" 2>&1 \
      || { echo "callgrind.sh: $name failed:" >&2; cat "$work/$name-$k.log" >&2; exit 1; }
  done
  read -r l1 r1 < <(split "$work/$name-1" "$exe")
  read -r l2 r2 < <(split "$work/$name-2" "$exe")
  echo "$((l2 - l1)) $((r2 - r1))"
}

per() { awk -v a="$1" -v n="$n" 'BEGIN {printf "%.0f", a / n}'; }
# ratio TYPED_LIB RAW_LIB RUNTIME: with the same runtime work on both sides.
ratio() { awk -v t="$1" -v r="$2" -v w="$3" 'BEGIN {printf "%.4f", (t + w) / (r + w)}'; }
mean() { echo "$((($1 + $2) / 2))"; }
total_ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.4f", a / b}'; }

worst=0
# Instructions per cycle the typed API may add to the raw program's own, per workload
# (set at 117, 97 and 51; 112, 91 and 51 since the raw layer got its own error type;
# callbacks measured at 101 when added, with inline slots instead of two boxes, 81 once the
# report thread's liveness check was inlined, 50 once `launch` was inlined with its boxed
# and refused paths out of line; the pipeline frame at 196 when added; then 108, 79, 46, 46
# and 204 once a stream's synchronisation looked at join events only when some wait, reset
# counts became 64-bit (no wrap check) and `wait_and_reset` reset before changing state;
# then 73, 60, 39, 36 once the event stayed out of memory (no reference to it escapes into
# an out-of-line call), callback slots needed no take function, and a stream's usual
# synchronisation checked its binding and the join bookkeeping in one compare; the
# pipeline frame 126 once a simulated kernel launch built no error and was inlined; events
# 84 once joins moved onto their streams: the same instructions, but the bench loop keeps
# the producer stream's pointer on the stack, five moves per cycle; events_direct 67 once a
# stream's synchronisation finished its waiting joins inline: one jump more per cycle there,
# against about 110 fewer per join in a loop that joins every cycle; the pipeline frame 146
# once the raw program's kernel launch no longer tested its return code's range before its
# success (a compiler decision when the raw layer grew: raw 116 -> 102, typed unchanged, 248));
# the JPEG pipeline frame at 924 when added (954 until `load_jpeg` built its length error only
# on failure and the decoded layout's checks were inlined; 493 of it `JpegHeader::parse`, the
# check of the file before any task, which the C program leaves to the runtime), then 694 once
# the parse skipped the usual segment in a few compares and matched the frame header's
# accepted samplings first, `load_jpeg` copied through the raw layer, a resize input's cached
# description was compared inline, and the issuing thread was told by a thread-local number).
declare -A BUDGET=([events]=85 [events_direct]=67 [copies]=45 [callbacks]=42 [pipeline]=146
  [jpeg_pipeline]=694)
over=""
added_report=""
row() { # run work typed_lib typed_rt raw_lib raw_rt
  last="$(ratio "$3" "$5" "$(mean "$4" "$6")")"
  printf '%-4s %-13s %8s %8s %9s %9s %10s %10s\n' "$1" "$2" "$(per "$3")" "$(per "$5")" \
    "$(per "$4")" "$(per "$6")" "$last" "$(total_ratio "$(($3 + $4))" "$(($5 + $6))")"
}
header() {
  printf '%-4s %-13s %8s %8s %9s %9s %10s %10s\n' run work typed raw 'rt(typed)' 'rt(raw)' \
    'same-rt' measured
}

echo "N=$n cycles per workload; Ir per cycle. typed, raw: the bench executable's own code;"
echo "rt(..): the runtime's (simulator, libc). same-rt: (typed + rt) / (raw + rt), rt the mean"
echo "of rt(typed) and rt(raw): both programs with identical simulator work."
echo
echo "Host thread, inside the counted function:"
header
joins=()
for run in $(seq 1 "$runs"); do
  for w in events events_direct copies callbacks pipeline jpeg_pipeline; do
    read -r tl tr < <(host "t-$w-$run" "$typed" "$w" "$n")
    case "$w" in
      events)
        read -r ml mr < <(host "m-$w-$run" "$raw" events "$n" minimal)
        read -r jl jr < <(host "j-$w-$run" "$raw" events "$n" join)
        joins+=("$run $(per "$jl") $(per "$jr") $(total_ratio "$((tl + tr))" "$((jl + jr))")")
        ;;
      # The same runtime calls as `events`: the same raw program.
      events_direct) read -r ml mr < <(host "m-$w-$run" "$raw" events "$n" minimal) ;;
      *) read -r ml mr < <(host "m-$w-$run" "$raw" "$w" "$n") ;;
    esac
    row "$run" "$w" "$tl" "$tr" "$ml" "$mr"
    added=$(($(per "$tl") - $(per "$ml")))
    added_report+="$(printf '%-4s %-13s %8s %8s' "$run" "$w" "$added" "${BUDGET[$w]}")"$'\n'
    if ((added > BUDGET[$w])); then over+=" $w($added>${BUDGET[$w]})"; fi
  done
done
echo
echo "Instructions the typed API adds per cycle (typed minus raw, host thread) and the budget:"
printf '%-4s %-13s %8s %8s\n' run work added budget
printf '%s' "$added_report"
echo
echo "Whole program, every thread (the simulator's workers included):"
header
for run in $(seq 1 "$runs"); do
  for w in events events_direct copies callbacks pipeline jpeg_pipeline; do
    read -r tl tr < <(whole "wt-$w-$run" "$typed" "$w")
    case "$w" in
      events | events_direct) read -r ml mr < <(whole "wm-$w-$run" "$raw" events minimal) ;;
      *) read -r ml mr < <(whole "wm-$w-$run" "$raw" "$w") ;;
    esac
    row "$run" "$w" "$tl" "$tr" "$ml" "$mr"
    # Callbacks: measured, gated by their budget of added instructions only (their ratio,
    # about 1.027, is above the 1.02 the other workloads meet; see docs/benchmarks.md).
    [ "$w" = callbacks ] && continue
    worst="$(awk -v a="$worst" -v b="$last" 'BEGIN {print (b > a) ? b : a}')"
  done
done
echo
echo "Host thread, events, against raw calls that issue the join every cycle (raw+join):"
printf '%-4s %10s %12s %10s\n' run 'raw+join' 'rt(raw+join)' 'typed/r+j'
for j in "${joins[@]}"; do
  # shellcheck disable=SC2086
  printf '%-4s %10s %12s %10s\n' $j
done
echo
# K events per cycle (all recorded on the producer, then each waited on and reset by the
# consumer; the host synchronises the producer only): the typed API joins once per cycle, as
# the C program does (E5). Then the same loop (K = 1) with T - 1 more threads doing the same
# on their own streams of the same context: the counted thread's cost must not depend on T
# (no lock or scan shared by the context's threads). Measured, not gated: Ir per cycle on the
# host thread.
nk=$(( n / 5 > 0 ? n / 5 : 1 ))
k_row() { # label typed_args raw_args
  local label="$1" tl tr rl rr ratio_k added_k
  # shellcheck disable=SC2086
  read -r tl tr < <(host "t-events_k-$label" "$typed" events_k "$nk" $2)
  # shellcheck disable=SC2086
  read -r rl rr < <(host "r-events_k-$label" "$raw" events_k "$nk" join $3)
  ratio_k="$(ratio "$tl" "$rl" "$(mean "$tr" "$rr")")"
  added_k=$(awk -v t="$tl" -v r="$rl" -v n="$nk" -v k="$4" 'BEGIN {printf "%.1f", (t - r) / n / k}')
  printf '%-6s %8s %8s %9s %9s %10s %12s\n' "$label" \
    "$(awk -v a="$tl" -v n="$nk" 'BEGIN {printf "%.0f", a / n}')" \
    "$(awk -v a="$rl" -v n="$nk" 'BEGIN {printf "%.0f", a / n}')" \
    "$(awk -v a="$tr" -v n="$nk" 'BEGIN {printf "%.0f", a / n}')" \
    "$(awk -v a="$rr" -v n="$nk" 'BEGIN {printf "%.0f", a / n}')" "$ratio_k" "$added_k"
}
echo "Host thread, K events per cycle ($nk cycles each; raw = one join per cycle, as C):"
printf '%-6s %8s %8s %9s %9s %10s %12s\n' K typed raw 'rt(typed)' 'rt(raw)' same-rt 'added/event'
for k in 1 8 64 256; do
  k_row "$k" "$k" "$k" "$k"
done
echo
echo "Host thread, K = 1, T threads sharing the context ($nk cycles each):"
printf '%-6s %8s %8s %9s %9s %10s %12s\n' T typed raw 'rt(typed)' 'rt(raw)' same-rt 'added/cycle'
for t in 1 2 8 32; do
  k_row "$t" "1 $t" "1 $t" 1
done
echo
# D callbacks launched per cycle, then one synchronisation: up to D in flight on the stream,
# on a subscription created for D. Launch cost must be flat in D (no allocation at any depth:
# tests/steady_state.rs). Measured, not gated.
echo "Host thread, D callbacks in flight per cycle ($nk cycles each):"
printf '%-6s %9s %9s %10s %12s\n' D typed raw same-rt 'added/launch'
for d in 1 32 64 256; do
  read -r tl tr < <(host "t-deep-$d" "$typed" callbacks_deep "$nk" "$d")
  read -r rl rr < <(host "r-deep-$d" "$raw" callbacks_deep "$nk" join "$d")
  printf '%-6s %9s %9s %10s %12s\n' "$d" \
    "$(awk -v a="$tl" -v n="$nk" 'BEGIN {printf "%.0f", a / n}')" \
    "$(awk -v a="$rl" -v n="$nk" 'BEGIN {printf "%.0f", a / n}')" \
    "$(ratio "$tl" "$rl" "$(mean "$tr" "$rr")")" \
    "$(awk -v t="$tl" -v r="$rl" -v n="$nk" -v d="$d" 'BEGIN {printf "%.1f", (t - r) / n / d}')"
done
if [ "$check" = 1 ]; then
  echo
  if [ -n "$over" ]; then
    echo "callgrind.sh: FAILED: the typed API adds more instructions than its budget:$over"
    exit 1
  fi
  if awk -v w="$worst" 'BEGIN {exit !(w > 1.02)}'; then
    echo "callgrind.sh: FAILED: a whole-program ratio with identical simulator work is $worst (> 1.02)"
    exit 1
  fi
  echo "callgrind.sh: ok: within the budgets; whole-program ratios with identical simulator work <= $worst"
fi
