//! Devices, contexts and the runtime (D1-D8, P2): device states, leaked children keeping
//! their parents, every drop order of the handles.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod drop_orders;
mod leaked_children;
mod states;
