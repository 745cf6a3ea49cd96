//! Loading the runtime library and the error model: the search order, strict loading,
//! unloading (P2), error codes.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod errors;
mod library_search;
mod unload;
