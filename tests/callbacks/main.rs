//! Host callbacks and report threads (C1-C9), host-function threads (C12):
//! subscribe/launch/unsubscribe, refusals inside callbacks (C8), leaks, panics, faults,
//! threads, the raw layer's queries.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod c8_every_entry_point;
mod c8_leaked_handles;
mod capacity_attacks;
mod detached_report_threads;
mod failing_report_thread;
mod ffi_panic_stderr_full;
mod forget;
mod host_func_attacks;
mod host_func_attacks2;
mod host_func_fault_sweep;
mod host_func_leaks;
mod host_func_threads;
mod idle_cost;
mod launch_fail;
mod launch_fail_window;
mod lost_errors;
mod machinery_faults;
mod panic_bombs;
mod raw_queries;
mod raw_query_table;
mod refused_inside;
mod report_fault;
mod report_thread_leaks;
mod report_thread_limit;
mod slots;
mod stderr_full;
mod subscribe_and_launch;
mod thread_local_drops;
mod threads;
mod worker_end_attacks;
