#!/usr/bin/env bash
# Builds the crate with `--features bindgen` against two toolkit-shaped header sets, the
# shapes real CANN installs have that the crate's own header does not (set up in a temporary
# `$ASCEND_TOOLKIT_HOME/include/acl/acl.h` from `include/ascendcl.h`):
#
# 1. flexible-array: the crate's header plus a struct with a flexible array member (CANN 9.x
#    headers have such structs; bindgen gives them unsafe accessors that edition 2024 rejects
#    unless their unsafe operations are wrapped);
# 2. without-optional: the crate's header without the functions the loader treats as optional
#    (the media functions among them; and `aclrtHostFunc`, which only they use), like an older
#    CANN (8.1 lacks several) or a toolkit header that does not include acl/ops/acl_dvpp.h:
#    functions optional at run time must not be required at compile time.
#
# Each build must succeed; the second must say which declarations came from the crate's
# header. Usage: scripts/check-toolkit-headers.sh (needs libclang, like the drift test).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/flexible-array/include/acl" "$work/without-optional/include/acl"
{
  cat include/ascendcl.h
  printf '\n/* A toolkit-only struct with a flexible array member. */\n'
  printf 'typedef struct aclToolkitFlexArray { size_t count; uint32_t items[]; } aclToolkitFlexArray;\n'
} >"$work/flexible-array/include/acl/acl.h"

# The optional symbols, from the loader's table (`optional { ... }` in src/sys/mod.rs).
optional="$(awk '/^ *optional \{/{on=1; next} on && /^ *\}/{on=0} on' src/sys/mod.rs \
  | grep -oE '^ *acl[A-Za-z0-9_]+' | tr -d ' ')"
# The media functions (src/sys/dvpp.rs, each optional): a toolkit's acl/acl.h does not include
# acl/ops/acl_dvpp.h, so they too come from the crate's header.
media="$(awk '/^dvpp_table! \{/{on=1; next} on && /^\}/{on=0} on' src/sys/dvpp.rs \
  | grep -oE '^ *acldvpp[A-Za-z0-9_]+' | tr -d ' ')"
[ -n "$media" ] || { echo "check-toolkit-headers.sh: no media symbols found" >&2; exit 1; }
optional="$optional
$media"
[ -n "$optional" ] || { echo "check-toolkit-headers.sh: no optional symbols found" >&2; exit 1; }
pattern="$(printf '%s\n' $optional | paste -sd'|')"
# A declaration may span lines: drop from its first line to the line that ends it (';').
awk -v pat="^[A-Za-z_ *]+ \\**($pattern)\\(|^typedef void \\(\\*aclrtHostFunc\\)" '
  skip { if ($0 ~ /;/) skip = 0; next }
  $0 ~ pat { if ($0 !~ /;/) skip = 1; next }
  { print }' include/ascendcl.h >"$work/without-optional/include/acl/acl.h"
removed=$(($(wc -l <include/ascendcl.h) - $(wc -l <"$work/without-optional/include/acl/acl.h")))
echo "without-optional: $removed declaration(s) removed"
[ "$removed" -gt 1 ] || { echo "check-toolkit-headers.sh: nothing removed" >&2; exit 1; }

for shape in flexible-array without-optional; do
  echo "== cargo build --features bindgen against $shape"
  log="$work/$shape.log"
  if ! ASCEND_TOOLKIT_HOME="$work/$shape" cargo build --features bindgen --lib >"$log" 2>&1; then
    cat "$log" >&2
    echo "check-toolkit-headers.sh: FAILED against $shape" >&2
    exit 1
  fi
  grep -E "warning: ascend-typestate@.*: (bindings|functions)\.rs" "$log" || true
done
grep -q "declared from include/ascendcl.h" "$work/without-optional.log" \
  || { echo "check-toolkit-headers.sh: the fallback declarations were not reported" >&2; exit 1; }
echo "check-toolkit-headers.sh: ok"
