#!/usr/bin/env bash
# Markdown tables of the criterion medians of benches/typed_vs_raw.rs and benches/bandwidth.rs
# (run them first), with typed/raw ratios and GiB/s. The typed-vs-raw table gives each median
# with criterion's confidence interval, as `median [lower, upper]`; its `events, wait_and_reset`
# row divides by the raw medians of the `events` row (the same runtime calls).
# scripts/benchmarks.sh puts both tables into docs/benchmarks.md.
#
# Usage: scripts/bench_summary.sh [TARGET_DIR]   (default $CARGO_TARGET_DIR, else <repo>/target)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${1:-${CARGO_TARGET_DIR:-$here/../target}}"
dir="$target/criterion"
command -v jq >/dev/null || { echo "bench_summary.sh: jq is not installed" >&2; exit 1; }
[ -d "$dir" ] || { echo "bench_summary.sh: no $dir: run cargo bench first" >&2; exit 1; }

# median GROUP BENCH [PARAM]: the median time in ns, or empty.
median() {
  local f="$dir/$1/$2${3:+/$3}/new/estimates.json"
  [ -f "$f" ] && jq -r '.median.point_estimate' "$f"
}
# interval GROUP BENCH: "median [lower, upper]" in µs (criterion's confidence interval of the
# median), or empty.
interval() {
  local f="$dir/$1/$2/new/estimates.json"
  [ -f "$f" ] || return 0
  jq -r '.median | [.point_estimate, .confidence_interval.lower_bound,
    .confidence_interval.upper_bound] | @tsv' "$f" \
    | awk '{printf "%.2f [%.2f, %.2f]", $1 / 1000, $2 / 1000, $3 / 1000}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

if [ -d "$dir/events" ]; then
  echo "| sequence | typed (µs) | raw \`api\` (µs) | raw \`api\` + join (µs) | bare fn table (µs) | typed/raw | typed/(raw+join) | typed/fn table |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for group in events events_direct copy_4k callback; do
    if [ "$group" = events_direct ]; then
      # `Event::wait_and_reset`: bench `typed_wait_and_reset` of the `events` group, against
      # the raw medians of that group (the same runtime calls), not repeated.
      t="$(median events typed_wait_and_reset || true)"
      [ -n "$t" ] || continue
      # shellcheck disable=SC2016 # the backquotes are markdown
      printf '| %s | %s | | | | %s | %s | %s |\n' 'events, `wait_and_reset`' \
        "$(interval events typed_wait_and_reset)" "$(ratio "$t" "$r")" \
        "${j:+$(ratio "$t" "$j")}" "${f:+$(ratio "$t" "$f")}"
      continue
    fi
    t="$(median "$group" typed)"
    r="$(median "$group" raw_api)"
    j="$(median "$group" raw_api_join || true)"
    f="$(median "$group" raw_fn_table || true)"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$group" "$(interval "$group" typed)" \
      "$(interval "$group" raw_api)" "$(interval "$group" raw_api_join)" \
      "$(interval "$group" raw_fn_table)" "$(ratio "$t" "$r")" \
      "${j:+$(ratio "$t" "$j")}" "${f:+$(ratio "$t" "$f")}"
  done
  echo
fi

if [ -d "$dir/bandwidth" ]; then
  echo "| copy | size | median | GiB/s | ms per 64 MiB |"
  echo "|---|---:|---:|---:|---:|"
  for kind in h2d d2h d2d; do
    for mib in 1 64 256; do
      t="$(median bandwidth "$kind" "${mib}MiB")" || continue
      awk -v k="$kind" -v m="$mib" -v t="$t" 'BEGIN {
        printf "| %s | %d MiB | %.3f ms | %.2f | %.2f |\n", toupper(k), m, t / 1e6,
          m / 1024 / (t / 1e9), t / 1e6 * 64 / m }'
    done
  done
fi
