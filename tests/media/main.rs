//! The typed media layer (DVPP V1, DV1-DV11): tokens, channels, frames, decode and resize
//! tasks in async scopes, their checks before any call, drop orders and faults.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`). The JPEG fixtures are written by the tests
//! (`jpeg-encoder`).

#[path = "../support/mod.rs"]
mod support;

mod attacks;
mod callbacks;
mod checks;
mod common;
mod decode_resize;
mod drop_orders;
mod dv6_thread_attacks;
mod media_fault_sweep;
mod pipeline;
mod pipeline_attacks;
mod written_attacks;
