#!/usr/bin/env bash
# Runs small simulator workloads under helgrind (and drd) with zero tolerated errors.
#
# Usage: sim/valgrind.sh            (from anywhere; uses $CARGO_TARGET_DIR or <repo>/target)
# Env:   ACLSIM_VALGRIND_TOOLS="helgrind drd"   tools to run (default: both)
#
# The simulator synchronizes only through pthread mutexes/condvars and raw pthreads
# (sim/src/pt.rs), so the tools see every happens-before edge. Helgrind gets one narrow
# suppression file (sim/valgrind.supp): a broadcast glibc's condvar makes internally from a
# timed wait (a known false positive that failed about 1 run in 7).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build -p ascendcl-sim --quiet)
lib="$target/debug"
[ -f "$lib/libascendcl.so" ] || { echo "valgrind.sh: $lib/libascendcl.so missing" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc -std=c11 -O1 -g -pthread -I"$here/include" -I"$root/include" "$here/tests/c/harness.c" \
   -o "$work/harness" -L"$lib" -lascendcl -Wl,-rpath,"$lib"
export LD_LIBRARY_PATH="$lib" ACLSIM_STRESS_SMALL=1 ACLSIM_QUIET=1
cases="stress_many_streams_events_threads seed001_callback_flow seed000_stream_to_stream_wait e5_reset_overtaking_another_streams_wait_is_flagged c10_host_func_runs_in_order_on_a_runtime_thread s6_stop_on_failure_stops_every_stream_of_the_context md_load_and_execute_sync_and_async md8_execution_on_two_streams_is_flagged md6_set_batch_during_synchronous_execute_on_another_thread_is_flagged md_model_file_read_never_blocks_other_threads race_large_memset_vs_reset_device_no_crash race_large_memset_vs_finalize_no_crash"
fail=0
for tool in ${ACLSIM_VALGRIND_TOOLS:-helgrind drd}; do
  for c in $cases; do
    supp=()
    [ "$tool" = helgrind ] && supp=(--suppressions="$here/valgrind.supp")
    if valgrind --tool="$tool" "${supp[@]}" --error-exitcode=1 -q "$work/harness" "$c" >"$work/out" 2>&1; then
      echo "valgrind.sh: $tool $c: 0 errors"
    else
      echo "valgrind.sh: $tool $c: FAILED"; cat "$work/out"; fail=1
    fi
  done
done
exit $fail
