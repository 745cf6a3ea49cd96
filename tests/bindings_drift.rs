//! Issue 2: the checked-in FFI bindings (`src/sys/bindings.rs`) must be exactly what bindgen
//! generates from `include/ascendcl.h` (feature `bindgen`, which `build.rs` uses to write
//! `$OUT_DIR/bindings.rs`).
//!
//! Run with `cargo test --features bindgen --test bindings_drift` (needs libclang).
//! Skipped when `build.rs` generated the bindings from an installed CANN toolkit
//! (`ASCEND_TOOLKIT_HOME` / `ASCEND_HOME_PATH`): those headers are not the crate's own.
#![cfg(feature = "bindgen")]

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/bindings.rs"));
const CHECKED_IN: &str = include_str!("../src/sys/bindings.rs");

/// A short report of the first difference, with a few lines of context.
fn first_difference(expected: &str, actual: &str) -> String {
    let expected: Vec<&str> = expected.lines().collect();
    let actual: Vec<&str> = actual.lines().collect();
    let line = expected
        .iter()
        .zip(&actual)
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(actual.len()));
    let from = line.saturating_sub(2);
    let show = |lines: &[&str]| -> String {
        lines
            .iter()
            .enumerate()
            .skip(from)
            .take(line - from + 4)
            .map(|(i, l)| format!("  {:>4} | {l}\n", i + 1))
            .collect()
    };
    format!(
        "first difference at line {} ({} lines generated, {} checked in)\n\
         --- generated ($OUT_DIR/bindings.rs)\n{}\
         --- checked in (src/sys/bindings.rs)\n{}",
        line + 1,
        expected.len(),
        actual.len(),
        show(&expected),
        show(&actual),
    )
}

#[test]
#[cfg_attr(
    ascend_bindings_from_toolkit,
    ignore = "bindings were generated from an installed CANN toolkit, not include/ascendcl.h"
)]
fn checked_in_bindings_match_the_header() {
    if GENERATED == CHECKED_IN {
        return;
    }
    panic!(
        "src/sys/bindings.rs is out of date with include/ascendcl.h.\n{}\n\
         Regenerate it: this test build has just generated the bindings from the current \
         header, so from the repository root:\n\
         \n    cp {}/bindings.rs src/sys/bindings.rs\n\
         \nthen review `git diff src/sys/bindings.rs` and commit it with the header change.",
        first_difference(GENERATED, CHECKED_IN),
        env!("OUT_DIR"),
    );
}
