//! Loom models of the crate's hand-written concurrent state: every interleaving
//! of two or three threads over the operations users can race, with the invariants as
//! assertions. Built and run only with `RUSTFLAGS="--cfg loom"`:
//!
//! ```text
//! LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" cargo test --release --lib loom
//! ```
//!
//! Each model drives the library's own code (the types and functions the runtime path
//! calls, built on `sys::sync`), with the runtime replaced by a small model of it where the
//! code would call C: a queue the "runtime" thread runs callbacks from, a device that
//! finishes what was issued before a synchronisation began, counters of `aclInit` and
//! `aclFinalize`. What is not modelled is said in each file.

mod callbacks;
mod drop_errors;
mod host_fn;
mod host_func_threads;
mod joins;
mod lifecycle;
mod model_release;
mod streams;

use crate::result::{CallError, Failure};
use crate::sys::codes::AclError;

/// Runs `f` under loom, every interleaving within the preemption bound: the environment's
/// `LOOM_MAX_PREEMPTIONS`, else `default_bound` (each model's own, chosen to finish in
/// seconds in a release build).
pub(super) fn check(default_bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(default_bound);
    }
    builder.check(f);
}

/// A runtime failure with `code`, as the raw layer returns it (no runtime message).
pub(super) fn failed(call: &'static str, code: AclError) -> CallError {
    CallError::Failed {
        call,
        code,
        failure: Failure::default(),
    }
}
