//! Compile-fail suite: every illegal call order in `ui-tests/fail/` must be rejected with the
//! error recorded in its `.stderr` snapshot, and its twin in `ui-tests/pass/` (the same
//! program in the legal order) must compile.
//!
//! Both kinds are registered on one `TestCases`, so trybuild runs `cargo build` (not `cargo
//! check`) and post-monomorphization errors would be caught too.
//!
//! The snapshots are pinned to the toolchain they were made with (rustc 1.95): compiler
//! messages change between releases, so on another version the test **fails**, saying how to
//! run it (`cargo +1.95.0 test`), never skips silently. Skipping is a deliberate choice:
//! `ASCEND_TYPESTATE_UI=skip`. Regenerate on purpose with `TRYBUILD=overwrite`, then read
//! every `.stderr` again.

use std::process::Command;

/// The rustc release the `.stderr` snapshots were generated with.
const PINNED: &str = "1.95.";
/// Set to `skip` to skip the suite on another rustc, deliberately.
const SKIP_ENV: &str = "ASCEND_TYPESTATE_UI";

fn rustc_version() -> Option<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc).arg("-V").output().ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout).ok()
}

#[test]
fn ui() {
    let version = rustc_version().unwrap_or_default();
    let pinned = version
        .split_whitespace()
        .nth(1)
        .is_some_and(|v| v.starts_with(PINNED));
    if !pinned {
        let found = version.trim();
        if std::env::var_os(SKIP_ENV).is_some_and(|v| v == "skip") {
            eprintln!(
                "skipping the compile-fail suite on purpose ({SKIP_ENV}=skip): its .stderr \
                 snapshots are pinned to rustc {PINNED}x, this is `{found}`"
            );
            return;
        }
        panic!(
            "the compile-fail suite's .stderr snapshots are pinned to rustc {PINNED}x, but this \
             is `{found}`.\n\
             Run it with the pinned toolchain: `rustup toolchain install 1.95.0` and \
             `cargo +1.95.0 test --test ui`;\n\
             or regenerate the snapshots on purpose (TRYBUILD=overwrite) and read every \
             .stderr again;\n\
             or skip it on purpose: {SKIP_ENV}=skip."
        );
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("ui-tests/fail/*.rs");
    t.pass("ui-tests/pass/*.rs");
}
