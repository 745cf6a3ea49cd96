//! Models (MD1-MD13): execution (synchronous, pipelined, in async scopes; bounds, element
//! types, injected faults), bad inputs (sizes, paths, contents, slow files, library paths),
//! deferred release (unloads, resets, plain forms), cleanup retries.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod bad_contents;
mod bad_inputs_common;
mod bad_library_paths;
mod bad_paths;
mod bad_sizes;
mod bounds;
mod cleanup_retries;
mod common;
mod deferred_common;
mod deferred_plain_forms;
mod deferred_resets;
mod deferred_unloads;
mod element_types;
mod execution_faults;
mod pipelined;
mod scoped_attacks;
mod scoped_execution;
mod scoped_faults;
mod scoped_tensors;
mod slow_inputs;
mod synchronous;
