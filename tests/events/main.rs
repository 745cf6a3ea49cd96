//! Events (E1-E10, P3): records, waits and wait scopes, re-use, resets raced and swept with
//! faults, the drop-error handler called from event code, random multi-stream programs.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod cleanup_faults;
mod drop_error_handler;
mod elapsed;
mod fault_sweep;
mod join_array_attacks;
mod join_attacks;
mod join_fault_sweep;
mod join_reuse;
mod joins;
mod ownership;
mod proof_attacks;
mod random_programs;
mod record_and_wait;
mod reset_pending_race;
mod retry_faults;
mod reuse;
mod wait_scope_unwind;
mod wait_timeout;
mod wait_timeout_env;
