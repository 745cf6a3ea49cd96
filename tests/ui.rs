//! Compile-fail suite: every illegal call order in `ui-tests/fail/` must be rejected with the
//! error recorded in its `.stderr` snapshot, and its twin in `ui-tests/pass/` (the same
//! program in the legal order) must compile.
//!
//! Both kinds are registered on one `TestCases`, so trybuild runs `cargo build` (not `cargo
//! check`) and post-monomorphization errors would be caught too.
//!
//! The snapshots are pinned to the toolchain they were made with (rustc 1.95): compiler
//! messages change between releases, so on another version the test prints a note and skips.
//! Regenerate on purpose with `TRYBUILD=overwrite`, then read every `.stderr` again.

use std::process::Command;

/// The rustc release the `.stderr` snapshots were generated with.
const PINNED: &str = "1.95.";

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
        eprintln!(
            "skipping the UI tests: the .stderr snapshots are pinned to rustc {PINNED}x, \
             but this is `{}`",
            version.trim()
        );
        return;
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("ui-tests/fail/*.rs");
    t.pass("ui-tests/pass/*.rs");
}
