#!/usr/bin/env bash
# The downstream crate, built as an outside crate would be (its own Cargo.toml, lock file and
# target directory; path dependencies only), from scratch. Run by .ci/run; runnable alone.
#
# Checks the README's "Testing without an NPU":
# 1. tests and examples load the simulator (a dev-dependency) with no environment variable,
#    in debug and release, and a built binary run directly finds it too;
# 2. many #[test]s sharing one runtime (`Acl::shared`) pass 20 runs out of 20 under cargo's
#    default parallel test runner;
# 3. a binary run where no runtime can be found fails with the short, readable message
#    (what was tried, the first reason, the ways out).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
# Its own target directory, inside the repository's (ignored by git), emptied first: no
# build output of the repository's own workspace is reused.
target="$here/../../target/downstream"
rm -rf "$target"
export CARGO_TARGET_DIR="$target"
unset ASCEND_ACL_LIB
fail() { echo "downstream check: $*" >&2; exit 1; }

echo "--- cargo fmt --check, cargo clippy --all-targets -D warnings"
cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings

for profile in debug release; do
    flag=(); [[ $profile == release ]] && flag=(--release)
    echo "--- cargo test ${flag[*]} (x20)"
    cargo test "${flag[@]}" --quiet >/dev/null 2>&1 || cargo test "${flag[@]}" # shows the failure
    for run in $(seq 2 20); do
        out="$(cargo test "${flag[@]}" --quiet 2>&1)" || { echo "$out"; fail "run $run of 20 failed ($profile)"; }
        grep -q '^aclsim: \[' <<<"$out" && { echo "$out"; fail "a passing run printed a finding"; }
    done
    echo "--- cargo run ${flag[*]} --example hello"
    out="$(cargo run "${flag[@]}" --quiet --example hello)"
    echo "$out"
    grep -q "^runtime library: /.*/$profile/deps/libascendcl.so (the simulator, version .*aclsim" <<<"$out" \
        || fail "the example did not load the simulator built for it"
    echo "--- $profile/examples/hello, run directly"
    out="$("$target/$profile/examples/hello")"
    grep -q "found by: beside the executable" <<<"$out" \
        || fail "the example binary, run directly, did not find the simulator"
    echo "--- $profile/downstream-check (a [[bin]]), run directly"
    cargo build "${flag[@]}" --quiet
    out="$("$target/$profile/downstream-check")"
    grep -q '^ok$' <<<"$out" || fail "the binary failed"
done

echo "--- the binary where no runtime can be found"
lonely="$(mktemp -d)"
trap 'rm -rf "$lonely"' EXIT
cp "$target/release/downstream-check" "$lonely/"
set +e
err="$(env -i PATH=/usr/bin:/bin "$lonely/downstream-check" 2>&1 >/dev/null)"
status=$?
set -e
echo "$err"
[[ $status -eq 1 ]] || fail "expected exit status 1, got $status"
lines=$(wc -l <<<"$err")
((lines >= 5 && lines <= 30)) || fail "the message has $lines lines (want a short multi-line one)"
for needle in '^Error: cannot load the AscendCL runtime library' 'first reason: ' \
    "$lonely/libascendcl.so \[beside the executable\]: does not exist" \
    'libascendcl.so \[system loader\]: ' 'ASCEND_ACL_LIB=' 'ascendcl-sim'; do
    grep -q -- "$needle" <<<"$err" || fail "the message lacks: $needle"
done

echo "--- the same binary with ASCEND_ACL_LIB"
out="$(env -i PATH=/usr/bin:/bin ASCEND_ACL_LIB="$target/release/deps/libascendcl.so" \
    "$lonely/downstream-check")"
grep -q "found by: ASCEND_ACL_LIB" <<<"$out" || fail "ASCEND_ACL_LIB was not used"
set +e
err="$(env -i PATH=/usr/bin:/bin ASCEND_ACL_LIB=/nonexistent/libascendcl.so "$lonely/downstream-check" 2>&1)"
set -e
grep -q 'ASCEND_ACL_LIB=/nonexistent/libascendcl.so was not loaded: does not exist' <<<"$err" \
    || { echo "$err"; fail "a wrong ASCEND_ACL_LIB is not named in the message"; }
echo "downstream check: ok"
