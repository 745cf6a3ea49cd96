#!/usr/bin/env bash
# Builds the fuzz targets of fuzz/ (cargo-fuzz, nightly, AddressSanitizer) and runs each for
# a bounded time; fails on any crash, panic, leak check, timeout or memory limit
# (CONTRIBUTING.md, "Fuzzing").
#
#   scripts/fuzz.sh [TARGET...]     every target when none is named
#
# FUZZ_SECONDS: seconds per target (default 45). The committed corpus (fuzz/corpus/TARGET)
# seeds each run read-only: new inputs go to a temporary directory, crashes to
# fuzz/artifacts/TARGET (ignored by git). Installs cargo-fuzz from crates.io when missing;
# never a toolchain: without nightly it says so and skips (FUZZ_REQUIRE_NIGHTLY=1: fails).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-45}
targets=("$@")
if ((${#targets[@]} == 0)); then
    targets=(model_load c_api_sequences typed_sequences jpeg_decode)
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "note: no nightly toolchain (rustup toolchain install nightly): fuzzing skipped"
    [[ ${FUZZ_REQUIRE_NIGHTLY:-0} == 1 ]] && exit 1
    exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "==> cargo install cargo-fuzz --locked"
    cargo install cargo-fuzz --locked
fi
cargo +nightly --version
cargo fuzz --version

cd fuzz
start=$SECONDS
# AddressSanitizer is cargo-fuzz's default; release with debug assertions.
if (($# == 0)); then
    cargo +nightly fuzz build
else
    for t in "${targets[@]}"; do cargo +nightly fuzz build "$t"; done
fi
echo "build: $((SECONDS - start)) s"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
for t in "${targets[@]}"; do
    mkdir -p "$work/$t" "artifacts/$t" "corpus/$t"
    echo "==> $t: ${seconds} s"
    # -timeout: one input at most 20 s (a hang); -rss_limit_mb: unbounded allocation;
    # -max_len: inputs stay small (the sequences are bounded by the harnesses too).
    if ! cargo +nightly fuzz run "$t" "$work/$t" "corpus/$t" -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="artifacts/$t/" 2>"$work/$t.log"; then
        failed+=("$t")
        tail -n 60 "$work/$t.log"
    fi
    grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::number_of_executed_units' "$work/$t.log" || true
done
echo "fuzzing: $((SECONDS - start)) s"
if ((${#failed[@]})); then
    echo "error: fuzz targets failed: ${failed[*]} (inputs in fuzz/artifacts/); reproduce with" \
        "cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-..." >&2
    exit 1
fi
