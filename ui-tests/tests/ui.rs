//! Compile-fail suite: every illegal call order in `ui-tests/fail/` must be rejected with the
//! error recorded in its `.stderr` snapshot, and its twin in `ui-tests/pass/` (the same
//! program in the legal order) must compile.
//!
//! Two `TestCases`, run one after the other (trybuild picks `cargo check` for a `TestCases`
//! of compile-fail cases only, `cargo build` as soon as one must pass):
//!
//! 1. The compile-fail cases, checked: trybuild checks them all in one `cargo check
//!    --keep-going`, in parallel. An error rustc reports before code generation (every type,
//!    borrow and const-evaluation error) reads the same as under `cargo build`.
//! 2. The twins, built (`cargo build`, then run: each `main` only names its program, which
//!    needs a runtime), one by one. Code generation reaches every function `main` names, so
//!    an error found only there (post-monomorphization) would still fail a twin. With them
//!    the compile-fail cases of [`BUILT`], whose snapshots hold what only code generation
//!    adds.
//!
//! This is the workspace member `ascend-typestate-ui` (`ui-tests/`), so that trybuild is built
//! for it alone and trybuild's project depends on `ascend-typestate` only. Paths in the
//! snapshots are relative to `ui-tests/` (`fail/x.rs`); the crate's sources read
//! `$WORKSPACE/src/...`.
//!
//! The snapshots are pinned to the toolchain they were made with (rustc 1.95): compiler
//! messages change between releases, so on another version the test **fails**, saying how to
//! run it (`cargo +1.95.0 test -p ascend-typestate-ui`), never skips silently. Skipping is a deliberate choice:
//! `ASCEND_TYPESTATE_UI=skip`. Regenerate on purpose with `TRYBUILD=overwrite`, then read
//! every `.stderr` again.

use std::path::Path;
use std::process::Command;

/// The rustc release the `.stderr` snapshots were generated with.
const PINNED: &str = "1.95.";
/// Set to `skip` to skip the suite on another rustc, deliberately.
const SKIP_ENV: &str = "ASCEND_TYPESTATE_UI";
/// Compile-fail cases run with `cargo build`, beside the twins: their `.stderr` has a note
/// that code generation adds (`erroneous constant encountered`), which `cargo check` does not
/// print. Every other case of `fail/` is checked.
const BUILT: &[&str] = &["s3_timeout_zero.rs"];

/// The compile-fail cases to check: every `fail/*.rs` but those of [`BUILT`], relative to this
/// package, sorted.
fn checked_cases() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fail");
    let mut cases: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").file_name())
        .filter_map(|name| name.into_string().ok())
        .filter(|name| name.ends_with(".rs") && !BUILT.contains(&name.as_str()))
        .map(|name| format!("fail/{name}"))
        .collect();
    cases.sort();
    cases
}

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
             `cargo +1.95.0 test -p ascend-typestate-ui`;\n\
             or regenerate the snapshots on purpose (TRYBUILD=overwrite) and read every \
             .stderr again;\n\
             or skip it on purpose: {SKIP_ENV}=skip."
        );
    }
    // Paths are relative to this package (`ui-tests/`). A `TestCases` runs when dropped.
    let checked = trybuild::TestCases::new();
    let cases = checked_cases();
    assert!(!cases.is_empty(), "no case found in fail/");
    for case in &cases {
        checked.compile_fail(case);
    }
    // Its failures are reported after the twins have run too.
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(checked)));

    let built = trybuild::TestCases::new();
    built.pass("pass/*.rs");
    for case in BUILT {
        let path = format!("fail/{case}");
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(&path);
        assert!(file.is_file(), "{path} is listed in BUILT but missing");
        built.compile_fail(path);
    }
    drop(built);
    if let Err(panic) = checked {
        std::panic::resume_unwind(panic);
    }
}
