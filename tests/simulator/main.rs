//! Fault sweeps against the simulator's checker, and the simulator's own structure
//! (released tasks, the host-function ticket registry).
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod fault_sweep;
mod fault_sweep_features;
mod feature_model_programs;
mod feature_programs;
mod structure;
