//! Adversarial tests: programs that try to break the crate's guarantees through the holes a
//! review found, written against the behaviour the crate must have once they are closed.
//! Each test names its class and rule IDs (`docs/protocol.md`), says in its doc comment
//! which hole it closes, asserts the correct behaviour and zero simulator findings, and runs
//! in a child process of its own ([`common::isolated`]): a crash, an abort or a hang then
//! fails that test only, and a handle leaked by a regression cannot break the others.
//!
//! Tests that must leak `'static` handles or set the process environment on purpose are in
//! their own binaries: `tests/adversarial_c8.rs`, `tests/adversarial_report_thread.rs`,
//! `tests/adversarial_p3_env.rs`.

#[path = "../support/mod.rs"]
mod support;

mod common;

mod cleanup_faults;
mod elapsed;
mod nested_scopes;
mod p3;
mod report_fault;
mod stderr_full;
mod unload;
