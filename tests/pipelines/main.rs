//! Pipelines: frames in flight, slots handed back only once their work is done.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod frames;
mod refactor_attacks;
