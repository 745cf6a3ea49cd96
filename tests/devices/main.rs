//! Devices, contexts and the runtime (D1-D8, P2): device states, leaked children keeping
//! their parents, every drop order of the handles (the harness in `drop_orders`, its groups
//! per handle family in `drop_orders_*`).
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod drop_orders;
mod drop_orders_events;
mod drop_orders_memory;
mod drop_orders_models;
mod drop_orders_runtime;
mod leaked_children;
mod states;
