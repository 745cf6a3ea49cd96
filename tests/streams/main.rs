//! Streams (S1-S8, P4, P5): synchronisation, queries, configurations, stop on failure,
//! force destroy, operator timeouts.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod abort_attacks;
mod configuration;
mod queries_and_abort;
mod stop_and_force_destroy;
mod synchronize;
