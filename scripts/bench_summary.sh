#!/usr/bin/env bash
# Markdown tables of the criterion medians of benches/typed_vs_raw.rs and benches/bandwidth.rs
# (run them first), with typed/raw ratios and GiB/s.
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
us() { awk -v t="$1" 'BEGIN {printf "%.2f", t / 1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

if [ -d "$dir/events" ]; then
  echo "| sequence | typed (µs) | raw \`api\` (µs) | raw \`api\` + join (µs) | bare fn table (µs) | typed/raw | typed/(raw+join) | typed/fn table |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for group in events copy_4k callback; do
    t="$(median "$group" typed)"
    r="$(median "$group" raw_api)"
    j="$(median "$group" raw_api_join || true)"
    f="$(median "$group" raw_fn_table || true)"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$group" "$(us "$t")" "$(us "$r")" \
      "${j:+$(us "$j")}" "${f:+$(us "$f")}" "$(ratio "$t" "$r")" \
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
        printf "| %s | %d MiB | %.3f ms | %.2f | %.2f |\n", k, m, t / 1e6,
          m / 1024 / (t / 1e9), t / 1e6 * 64 / m }'
    done
  done
fi
