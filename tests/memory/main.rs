//! Memory (M1-M3): buffers, copies and async scopes, their error paths and injected faults,
//! host-side races, random copy programs.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod buffers_and_scopes;
mod copies;
mod handler_panic_in_scope;
mod host_races;
mod nested_scopes;
mod random_program_gen;
mod random_program_run;
mod random_programs;
mod scope_faults;
