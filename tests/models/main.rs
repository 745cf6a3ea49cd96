//! Models (MD1-MD13): execution (synchronous, pipelined, in async scopes), bad inputs (paths, sizes, bytes), deferred release,
//! cleanup retries.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod bad_inputs;
mod cleanup_retries;
mod deferred_release;
mod execution;
mod scoped_attacks;
mod scoped_common;
mod scoped_execution;
mod scoped_faults;
mod scoped_tensors;
