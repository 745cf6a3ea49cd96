//! Host functions (C10): ordering, panics, closures freed, runtime calls refused inside
//! them (C8), attacks on the trampoline.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod misuse;
mod ordering;
