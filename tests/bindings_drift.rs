//! The checked-in FFI bindings must be exactly what bindgen generates from
//! `include/ascendcl.h` (feature `bindgen`, which `build.rs` uses to write `$OUT_DIR/`):
//! `src/sys/bindings.rs` (the public types and constants) and `src/sys/functions.rs` (the
//! private function prototypes, never linked). No function is public: a declaration one could
//! call would be a link error.
//!
//! Run with `cargo test --features bindgen --test bindings_drift` (needs libclang).
//! Skipped when `build.rs` generated the bindings from an installed CANN toolkit
//! (`ASCEND_TOOLKIT_HOME` / `ASCEND_HOME_PATH`): those headers are not the crate's own.
#![cfg(feature = "bindgen")]

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/bindings.rs"));
const CHECKED_IN: &str = include_str!("../src/sys/bindings.rs");
const GENERATED_FUNCTIONS: &str = include_str!(concat!(env!("OUT_DIR"), "/functions.rs"));
const CHECKED_IN_FUNCTIONS: &str = include_str!("../src/sys/functions.rs");

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
         --- generated ($OUT_DIR)\n{}\
         --- checked in (src/sys)\n{}",
        line + 1,
        expected.len(),
        actual.len(),
        show(&expected),
        show(&actual),
    )
}

/// Panics with a report if the checked-in `file` differs from what bindgen generated.
fn same(file: &str, generated: &str, checked_in: &str) {
    if generated == checked_in {
        return;
    }
    panic!(
        "src/sys/{file} is out of date with include/ascendcl.h.\n{}\n\
         Regenerate it: this test build has just generated the bindings from the current \
         header, so from the repository root:\n\
         \n    cp {}/{file} src/sys/{file}\n\
         \nthen review `git diff src/sys/{file}` and commit it with the header change.",
        first_difference(generated, checked_in),
        env!("OUT_DIR"),
    );
}

#[test]
#[cfg_attr(
    ascend_bindings_from_toolkit,
    ignore = "bindings were generated from an installed CANN toolkit, not include/ascendcl.h"
)]
fn checked_in_bindings_match_the_header() {
    same("bindings.rs", GENERATED, CHECKED_IN);
    same("functions.rs", GENERATED_FUNCTIONS, CHECKED_IN_FUNCTIONS);
}

#[test]
fn no_function_is_public() {
    // A declaration in the public module could be called, and would fail to link.
    assert!(
        !CHECKED_IN.contains("pub fn "),
        "src/sys/bindings.rs declares a function"
    );
    assert!(CHECKED_IN_FUNCTIONS.contains("pub fn aclInit("));
}
