#!/usr/bin/env bash
# Regenerates the measured parts of docs/benchmarks.md: runs the benchmarks of its
# "Reproduce" section and rewrites each block between
#   <!-- BEGIN generated: NAME -->  and  <!-- END generated: NAME -->
# leaving everything outside the markers (the prose: what is compared, the methods) as it is.
#
# Parts and the blocks they write:
#   callgrind  scripts/callgrind.sh N (CALLGRIND_RUNS=RUNS): blocks callgrind (Ir per cycle),
#              callgrind-added (typed minus raw against the budgets), callgrind-join
#   criterion  cargo bench -p ascend-typestate-benches --bench typed_vs_raw and --bench
#              bandwidth, RUNS times, each run tabulated by scripts/bench_summary.sh: blocks
#              criterion-typed-vs-raw, criterion-bandwidth
#   latency    cargo bench -p ascendcl-sim --bench latency, RUNS times: block latency
#   pipeline   cargo bench -p ascend-typestate-benches --bench pipeline, RUNS times (each 31
#              interleaved rounds of 1,000 frames typed and raw): block pipeline
#   classify   cargo bench -p ascend-typestate-benches --bench classify, the same for the model
#              loop of examples/classify.rs (aclmdlExecuteAsync in a Pipeline): block classify
# (benches/ is the workspace member ascend-typestate-benches: criterion is built for it alone.)
# Each block starts with a line recording the date, `rustc -V`, the CPU model and the load
# average, on which the numbers depend.
#
# Usage: scripts/benchmarks.sh [--only PART[,PART...]] [--runs N] [--cycles N] [--dry-run]
#   --only PART   regenerate only these parts (callgrind, criterion, latency, pipeline, classify;
#                 repeatable)
#   --runs N      runs of each measurement (default 2)
#   --cycles N    cycles per callgrind workload (default 1000)
#   --dry-run     print the new docs/benchmarks.md on stdout instead of writing it
# Needs cargo, jq (callgrind, criterion) and valgrind (callgrind). Exits 1 with a message,
# leaving the document untouched, when a tool is missing or a measurement fails. Progress goes
# to stderr. Run it on an otherwise idle machine: the wall-clock numbers also measure whatever
# else runs (each block records the load average).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
doc_rel=docs/benchmarks.md
doc="$root/$doc_rel"
target="${CARGO_TARGET_DIR:-$root/target}"

die() {
  echo "benchmarks.sh: $*" >&2
  exit 1
}
usage() { sed -n '/^# Usage:/,/^#   --dry-run/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }

parts=()
runs=2
cycles=1000
dry_run=0
while (($#)); do
  case "$1" in
    --only)
      [ $# -ge 2 ] || die "--only needs a part: callgrind, criterion, latency, pipeline or classify"
      IFS=, read -r -a more <<<"$2"
      parts+=("${more[@]}")
      shift 2
      ;;
    --only=*)
      IFS=, read -r -a more <<<"${1#--only=}"
      parts+=("${more[@]}")
      shift
      ;;
    --runs)
      [ $# -ge 2 ] || die "--runs needs a number"
      runs="$2"
      shift 2
      ;;
    --cycles)
      [ $# -ge 2 ] || die "--cycles needs a number"
      cycles="$2"
      shift 2
      ;;
    --dry-run)
      dry_run=1
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      usage
      die "unknown argument: $1"
      ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs: not a positive number: $runs"
[[ "$cycles" =~ ^[1-9][0-9]*$ ]] || die "--cycles: not a positive number: $cycles"
((${#parts[@]})) || parts=(callgrind criterion latency pipeline classify)
want_callgrind=0 want_criterion=0 want_latency=0 want_pipeline=0 want_classify=0
for p in "${parts[@]}"; do
  case "$p" in
    callgrind) want_callgrind=1 ;;
    criterion) want_criterion=1 ;;
    latency) want_latency=1 ;;
    pipeline) want_pipeline=1 ;;
    classify) want_classify=1 ;;
    *) die "unknown part: $p (callgrind, criterion, latency, pipeline or classify)" ;;
  esac
done

# ---- Tools and the document, checked before any measurement ------------------------------
need() { command -v "$1" >/dev/null || die "$1 is not installed ($2)"; }
need cargo "install Rust with rustup"
need rustc "install Rust with rustup"
need awk "apt-get install mawk"
if ((want_callgrind || want_criterion)); then need jq "apt-get install jq"; fi
if ((want_callgrind)); then need valgrind "apt-get install valgrind"; fi
[ -f "$doc" ] || die "$doc_rel not found"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
blocks="$work/blocks"
mkdir "$blocks"

names=()
((want_callgrind)) && names+=(callgrind callgrind-added callgrind-join)
((want_criterion)) && names+=(criterion-typed-vs-raw criterion-bandwidth)
((want_latency)) && names+=(latency)
((want_pipeline)) && names+=(pipeline)
((want_classify)) && names+=(classify)

# splice DOC: DOC with the blocks named in $names replaced by the files in $blocks. Fails
# when a marker is missing, repeated, unbalanced or nested.
splice() {
  awk -v dir="$blocks" -v names="${names[*]}" -v file="$doc_rel" '
    function fail(msg) { print "benchmarks.sh: " file ":" FNR ": " msg > "/dev/stderr"; bad = 1; exit 1 }
    function name_of(line) { sub(/^<!-- (BEGIN|END) generated: /, "", line); sub(/ -->$/, "", line); return line }
    BEGIN { n = split(names, list, " "); for (i = 1; i <= n; i++) want[list[i]] = 1 }
    /^<!-- BEGIN generated: [a-z0-9-]+ -->$/ {
      name = name_of($0)
      if (inside != "") fail("BEGIN " name " inside block " inside)
      if (name in seen) fail("block " name " appears twice")
      seen[name] = 1; inside = name; print
      if (name in want) {
        f = dir "/" name
        while ((getline line < f) > 0) print line
        close(f)
      }
      next
    }
    /^<!-- END generated: [a-z0-9-]+ -->$/ {
      name = name_of($0)
      if (name != inside) fail("END " name " without its BEGIN")
      inside = ""; print; next
    }
    /^<!-- (BEGIN|END) generated/ { fail("malformed marker: " $0) }
    inside != "" && (inside in want) { next }
    { print }
    END {
      if (bad) exit 1
      if (inside != "") { print "benchmarks.sh: block " inside " has no END marker" > "/dev/stderr"; exit 1 }
      for (w in want) if (!(w in seen)) { print "benchmarks.sh: no block " w " in the document" > "/dev/stderr"; exit 1 }
    }' "$1"
}
for name in "${names[@]}"; do : >"$blocks/$name"; done
splice "$doc" >/dev/null || die "$doc_rel: the markers above need fixing first"

start=$SECONDS
step() { printf 'benchmarks.sh: [%4ss] %s\n' "$((SECONDS - start))" "$*" >&2; }

# run LOG CMD...: CMD with stdout and stderr in LOG; on failure, the end of LOG and exit 1.
run() {
  local log="$1"
  shift
  if ! (cd "$root" && "$@") >"$log" 2>&1; then
    echo "benchmarks.sh: failed: $*; the end of its output:" >&2
    tail -n 40 "$log" | sed 's/^/  /' >&2
    exit 1
  fi
}

# ---- The machine ------------------------------------------------------------------------
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
machine() {
  local cpu cores caches="" idx level type size
  cpu="$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
  cores="$(grep -c '^processor' /proc/cpuinfo)"
  for idx in /sys/devices/system/cpu/cpu0/cache/index*; do
    [ -r "$idx/size" ] || continue
    read -r level <"$idx/level"
    read -r type <"$idx/type"
    read -r size <"$idx/size"
    if [ "$level" -lt 2 ] || [ "$type" = Instruction ]; then continue; fi
    size="$(awk -v s="$size" 'BEGIN {
      v = s + 0; if (s ~ /K$/) v *= 1024; else if (s ~ /M$/) v *= 1048576
      if (v >= 1048576) printf "%g MiB", v / 1048576; else printf "%g KiB", v / 1024 }')"
    caches+=", L$level $size"
  done
  # shellcheck disable=SC2016 # the backquotes are markdown
  printf '%s, `%s`, CPU %s (%s cores%s)' "$(date -u '+%Y-%m-%d %H:%M UTC')" \
    "$(cd "$root" && rustc -V)" "${cpu:-unknown}" "$cores" "$caches"
}
# loads "L1" "L2"...: "load average (1, 5, 15 min) L1 at the start of run 1, L2 of run 2"
loads() {
  local i=1 out="load average (1, 5, 15 min)" l
  for l in "$@"; do
    if ((i == 1)); then
      out+=" $l at the start"
      (($# > 1)) && out+=" of run 1"
    else
      out+=", $l of run $i"
    fi
    i=$((i + 1))
  done
  echo "$out"
}
stamp() { echo "Generated by \`scripts/benchmarks.sh\`: $1."; }

# ---- callgrind ----------------------------------------------------------------------------
if ((want_callgrind)); then
  step "CALLGRIND_RUNS=$runs scripts/callgrind.sh $cycles"
  load="$(loadavg)"
  run "$work/callgrind.out" env CALLGRIND_RUNS="$runs" scripts/callgrind.sh "$cycles"
  out="$work/callgrind.out"
  if ! grep -q '^Whole program' "$out" || ! grep -q '^Host thread, inside' "$out"; then
    die "scripts/callgrind.sh printed no tables (its output format changed?)"
  fi
  info="$(machine), $(loads "$load")"
  # table MODE: one markdown block out of callgrind.sh's text tables.
  table() {
    awk -v mode="$1" -v n="$cycles" -v runs="$runs" '
      function commas(x,   s) {
        s = sprintf("%d", x)
        while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]($|,)/, ",&", s)
        return s
      }
      function label(w) {
        if (w == "events") return "events (`wait` scope)"
        if (w == "events_direct") return "events (`wait_and_reset`)"
        if (w == "copies") return "copy 4 KiB"
        if (w == "callbacks") return "callback launch + synchronize"
        if (w == "pipeline") return "pipeline frame (H2D, kernel, D2H)"
        if (w == "jpeg_pipeline") return "JPEG pipeline frame (JPEGD, VPC, model, D2H)"
        return w
      }
      # Runtime calls per cycle (the same on both sides): record, wait, reset and two
      # synchronisations; copy and synchronisation; launch and synchronisation; a frame; a
      # JPEG frame (common/jpeg_pipeline.rs, PER_FRAME).
      function calls(w) {
        if (w == "events" || w == "events_direct") return 5
        if (w == "copies" || w == "callbacks") return 2
        if (w == "pipeline") return 11
        if (w == "jpeg_pipeline") return 12
        return 0
      }
      /^Host thread, inside/ { sec = "host"; next }
      /^Instructions the typed API adds/ { sec = "added"; next }
      /^Whole program/ { sec = "whole"; next }
      /^Host thread, events, against/ { sec = "join"; next }
      $1 !~ /^[0-9]+$/ { next }
      sec == "host" || sec == "whole" {
        row = sprintf("| %s | %s | %s | %s | %s | %s | %s | **%s** | %s |",
          sec == "host" ? "host thread" : "whole program", $1, label($2), commas($3),
          commas($4), commas($5), commas($6), $7, $8)
        if (sec == "host") host[++nh] = row; else whole[++nw] = row
        if (sec == "whole" && $2 != "callbacks" && $7 > worst) worst = $7
        next
      }
      sec == "added" {
        added[++na] = sprintf("| %s | %s | %s | %s | %.0f | %s | %s |", $1, label($2), $3,
          calls($2), calls($2) ? $3 / calls($2) : 0, $4, $3 <= $4 ? "yes" : "**no**")
        if ($3 > $4) over = 1
        next
      }
      sec == "join" {
        join[++nj] = sprintf("| %s | %s | %s | %s |", $1, commas($2), commas($3), $4)
        next
      }
      END {
        if (mode == "callgrind") {
          if (!nh || !nw) exit 1
          printf "N = %d cycles per workload, %d run%s (`CALLGRIND_RUNS=%d scripts/callgrind.sh %d`), Ir per cycle:\n\n", n, runs, (runs > 1 ? "s" : ""), runs, n
          print "| | run | workload | typed | raw | rt(typed) | rt(raw) | **same-rt** | measured |"
          print "|---|---|---|---:|---:|---:|---:|---:|---:|"
          for (i = 1; i <= nw; i++) print whole[i]
          for (i = 1; i <= nh; i++) print host[i]
        } else if (mode == "callgrind-added") {
          if (!na) exit 1
          print "| run | workload | typed − raw (Ir per cycle, host thread) | runtime calls | per call | budget | within |"
          print "|---|---|---:|---:|---:|---:|---|"
          for (i = 1; i <= na; i++) print added[i]
          printf "\nWorst whole-program ratio with identical simulator work (events, copies and the pipeline frames; callbacks are gated by their budget only): **%s** (limit 1.02). %s\n", worst,
            (over || worst > 1.02) ? "**`--check` would fail.**" : "`--check` passes."
        } else {
          if (!nj) exit 1
          print "| run | raw + join (Ir per cycle) | rt(raw + join) | typed / (raw + join), with rt |"
          print "|---|---:|---:|---:|"
          for (i = 1; i <= nj; i++) print join[i]
        }
      }' "$out"
  }
  for name in callgrind callgrind-added callgrind-join; do
    {
      stamp "$info"
      echo
      table "$name" || die "could not read the $name table from scripts/callgrind.sh's output"
    } >"$blocks/$name"
  done
fi

# ---- criterion ----------------------------------------------------------------------------
# merge KEYCOLS FILE...: one markdown table out of the same table of several runs, a `run`
# column after the first KEYCOLS columns, each row followed by the same row of later runs.
merge() {
  local keys="$1"
  shift
  awk -v keys="$keys" '
    function cells(line, out,   m, i) {
      m = split(line, out, "|")
      for (i = 2; i < m; i++) { gsub(/^ +| +$/, "", out[i]); out[i - 1] = out[i] }
      return m - 2
    }
    function join_run(line, r,   c, m, i, s) {
      m = cells(line, c); s = "|"
      for (i = 1; i <= m; i++) {
        s = s " " c[i] " |"
        if (i == keys) s = s " " r " |"
      }
      return s
    }
    FNR == 1 { run++; rows = 0 }
    /^\|/ {
      rows++
      if (run == 1) line[rows] = $0
      else if (rows > nrows) { print "benchmarks.sh: run " run " has more rows than run 1" > "/dev/stderr"; exit 1 }
      got[run, rows] = $0
      if (run == 1) nrows = rows
      next
    }
    END {
      if (!nrows) exit 1
      print join_run(line[1], "run")
      print join_run(line[2], "---")
      for (i = 3; i <= nrows; i++)
        for (r = 1; r <= run; r++) {
          if (!((r, i) in got)) { print "benchmarks.sh: run " r " lacks row " i > "/dev/stderr"; exit 1 }
          print join_run(got[r, i], r)
        }
    }' "$@"
}

if ((want_criterion)); then
  crit_loads=()
  for r in $(seq 1 "$runs"); do
    crit_loads+=("$(loadavg)")
    step "cargo bench -p ascend-typestate-benches --bench typed_vs_raw (run $r of $runs)"
    run "$work/typed_vs_raw-$r.log" cargo bench -p ascend-typestate-benches --bench typed_vs_raw
    step "cargo bench -p ascend-typestate-benches --bench bandwidth (run $r of $runs)"
    run "$work/bandwidth-$r.log" cargo bench -p ascend-typestate-benches --bench bandwidth
    step "scripts/bench_summary.sh (run $r of $runs)"
    run "$work/summary-$r.md" scripts/bench_summary.sh "$target"
    # Its two tables, one per file.
    awk -v typed="$work/typed-$r.md" -v bw="$work/bandwidth-$r.md" '
      /^\| sequence / { f = typed } /^\| copy / { f = bw } /^$/ { f = "" }
      f != "" && /^\|/ { print > f }' "$work/summary-$r.md"
    if [ ! -s "$work/typed-$r.md" ] || [ ! -s "$work/bandwidth-$r.md" ]; then
      die "scripts/bench_summary.sh printed no typed-vs-raw or bandwidth table"
    fi
  done
  info="$(machine), $(loads "${crit_loads[@]}")"
  typed_files=() bw_files=()
  for r in $(seq 1 "$runs"); do
    typed_files+=("$work/typed-$r.md")
    bw_files+=("$work/bandwidth-$r.md")
  done
  {
    stamp "$info"
    echo
    merge 1 "${typed_files[@]}" || die "could not merge the typed-vs-raw tables"
  } >"$blocks/criterion-typed-vs-raw"
  {
    stamp "$info"
    echo
    merge 2 "${bw_files[@]}" || die "could not merge the bandwidth tables"
  } >"$blocks/criterion-bandwidth"
fi

# ---- latency ------------------------------------------------------------------------------
if ((want_latency)); then
  lat_loads=() lat_files=()
  for r in $(seq 1 "$runs"); do
    lat_loads+=("$(loadavg)")
    step "cargo bench -p ascendcl-sim --bench latency (run $r of $runs)"
    # stdout only: the bench's lines, without cargo's progress.
    if ! (cd "$root" && cargo bench -p ascendcl-sim --bench latency) \
      >"$work/latency-$r.out" 2>"$work/latency-$r.err"; then
      echo "benchmarks.sh: failed: cargo bench -p ascendcl-sim --bench latency; the end of its output:" >&2
      { tail -n 30 "$work/latency-$r.err"; tail -n 10 "$work/latency-$r.out"; } | sed 's/^/  /' >&2
      exit 1
    fi
    # "case<TAB>result" per line: the case is the text before the last ": ", durations
    # (Rust's Debug format: 7.512345µs, 350ns, 1.2ms) in µs.
    awk '
      function us(tok,   v) {
        v = tok + 0
        if (tok ~ /ns$/) v /= 1000; else if (tok ~ /ms$/) v *= 1000; else if (tok !~ /µs$/) v *= 1e6
        if (v >= 1000) return sprintf("%.2f ms", v / 1000)
        return sprintf(v < 10 ? "%.2f µs" : "%.1f µs", v)
      }
      /^load: / { next }
      {
        s = $0; c = 0
        while ((i = index(substr(s, c + 1), ": ")) > 0) c += i + 1
        if (c == 0) next
        name = substr(s, 1, c - 2); rest = substr(s, c + 1); out = ""
        while (match(rest, /[0-9]+(\.[0-9]+)?(ns|µs|ms|s)/)) {
          tok = substr(rest, RSTART, RLENGTH)
          after = substr(rest, RSTART + RLENGTH, 1)
          if (after ~ /[A-Za-z]/) { out = out substr(rest, 1, RSTART + RLENGTH - 1); rest = substr(rest, RSTART + RLENGTH); continue }
          out = out substr(rest, 1, RSTART - 1) us(tok); rest = substr(rest, RSTART + RLENGTH)
        }
        out = out rest
        sub(/^median /, "", out)
        print name "\t" out
      }' "$work/latency-$r.out" >"$work/latency-$r.tsv"
    [ -s "$work/latency-$r.tsv" ] || die "the latency bench printed no results"
    lat_files+=("$work/latency-$r.tsv")
  done
  info="$(machine), $(loads "${lat_loads[@]}")"
  {
    stamp "$info"
    echo
    awk -F'\t' -v runs="$runs" '
      FNR == 1 { run++; rows = 0 }
      {
        rows++
        if (run == 1) { name[rows] = $1; nrows = rows }
        else if (name[rows] != $1) { print "benchmarks.sh: latency run " run " differs in its cases" > "/dev/stderr"; exit 1 }
        val[run, rows] = $2
      }
      END {
        h = "| case (median) |"; s = "|---|"
        for (r = 1; r <= run; r++) { h = h " run " r " |"; s = s "---|" }
        print h; print s
        for (i = 1; i <= nrows; i++) {
          l = "| " name[i] " |"
          for (r = 1; r <= run; r++) l = l " " val[r, i] " |"
          print l
        }
      }' "${lat_files[@]}"
  } >"$blocks/latency" || die "could not tabulate the latency bench"
fi

# ---- pipeline, classify: wall clock, typed vs raw -----------------------------------------
# wall_part NAME: `cargo bench -p ascend-typestate-benches --bench NAME`, RUNS times; its line
# "NAME: F frames, K µs ..., R rounds: typed T ms ..., raw W ms ... (medians), typed/raw A
# (medians), B (median of the rounds' ratios; LO to HI)" becomes a row of block NAME.
wall_part() {
  local name="$1" r loads_seen=()
  : >"$work/$name.rows"
  for r in $(seq 1 "$runs"); do
    loads_seen+=("$(loadavg)")
    step "cargo bench -p ascend-typestate-benches --bench $name (run $r of $runs)"
    run "$work/$name-$r.log" cargo bench -p ascend-typestate-benches --bench "$name"
    awk -v run="$r" -v name="$name" '
      index($0, name ": ") == 1 {
        line = $0
        gsub(/[(),;:]/, " ", line)
        n = split(line, w, " ")
        for (i = 1; i <= n; i++) {
          if (w[i] == "frames") frames = w[i - 1]
          if (w[i] == "µs") kernel = w[i - 1]
          if (w[i] == "rounds") rounds = w[i - 1]
          if (w[i] == "typed" && w[i + 2] == "ms") typed = w[i + 1]
          if (w[i] == "raw" && w[i + 2] == "ms") raw = w[i + 1]
          if (w[i] == "typed/raw") ratio = w[i + 1]
          if (w[i] == "median" && w[i + 1] == "of") paired = w[i - 1]
          if (w[i] == "to") { lo = w[i - 1]; hi = w[i + 1] }
        }
        printf "| %s | %s | %s | %s | %s | %s | **%s** | %s | %s to %s |\n", run, frames, kernel, rounds, typed, raw, ratio, paired, lo, hi
        found = 1
      }
      END { exit !found }' "$work/$name-$r.log" >>"$work/$name.rows" \
      || die "cargo bench -p ascend-typestate-benches --bench $name printed no result line"
  done
  info="$(machine), $(loads "${loads_seen[@]}")"
  {
    stamp "$info"
    echo
    echo "| run | frames | $2 (µs) | rounds | typed (ms, median) | raw (ms, median) | **typed / raw** (medians) | median of the rounds' ratios | rounds' ratios |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
    cat "$work/$name.rows"
  } >"$blocks/$name"
}
((want_pipeline)) && wall_part pipeline kernel
((want_classify)) && wall_part classify execution

# ---- The document -------------------------------------------------------------------------
splice "$doc" >"$work/new.md" || die "could not rewrite $doc_rel"
step "done"
if ((dry_run)); then
  cat "$work/new.md"
else
  cat "$work/new.md" >"$doc"
  echo "benchmarks.sh: rewrote $doc_rel (blocks: ${names[*]})" >&2
fi
