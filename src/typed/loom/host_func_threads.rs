//! Host-function threads (C12): the loop `serve` of `callback::host_func`, which calls
//! `aclrtProcessHostFunc` until stopped (at least once, even when `stop` comes first), and
//! its failures kept for `stop` while `stop` takes them and detaches the thread. The
//! library's own loop and state; `aclrtProcessHostFunc` is a counter that answers "not
//! subscribed", or a failure first. Not modelled: the runtime's host work itself.

use std::sync::Arc as StdArc;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::{check, failed};
use crate::result::CallError;
use crate::sys::codes::AclError;
use crate::typed::callback::host_func::{Shared, serve};
use crate::typed::error::Error;
use crate::typed::handle::set_drop_error_handler;

/// `aclrtProcessHostFunc`: the first `failures` calls fail, the others find no stream
/// subscribed (after yielding: the loop spins on it).
fn process(calls: &AtomicUsize, failures: usize) -> Result<(), CallError> {
    let call = calls.fetch_add(1, SeqCst);
    if call < failures {
        return Err(failed("aclrtProcessHostFunc", AclError::Failure));
    }
    thread::yield_now();
    Err(failed("aclrtProcessHostFunc", AclError::RtThreadSubscribe))
}

/// The loop's thread, over `shared`, counting its calls.
fn host_func_thread(
    shared: &StdArc<Shared>,
    calls: &Arc<AtomicUsize>,
    failures: usize,
) -> thread::JoinHandle<()> {
    let (shared, calls) = (StdArc::clone(shared), Arc::clone(calls));
    thread::spawn(move || {
        serve(
            &shared,
            || process(&calls, failures),
            |_| thread::yield_now(),
        )
    })
}

/// `stop` racing the thread's start: the loop calls `aclrtProcessHostFunc` at least once
/// whenever the stop comes (the runtime registers the thread's exit then), and ends.
#[test]
fn c12_the_loop_processes_once_even_when_stopped_first() {
    check(4, || {
        let shared = StdArc::new(Shared::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let thread = host_func_thread(&shared, &calls, 0);
        shared.request_stop();
        thread
            .join()
            .unwrap_or_else(|_| panic!("host-function thread"));
        assert!(
            calls.load(SeqCst) >= 1,
            "stopped before its first call (C12)"
        );
    });
}

/// A failure the loop keeps while `stop` takes the kept ones and detaches the thread (a
/// leaked subscription): it is either returned or reported to the drop-error handler,
/// exactly once.
#[test]
fn c12_a_failure_kept_while_the_thread_is_detached_is_never_lost() {
    loom::lazy_static! {
        static ref REPORTED: AtomicUsize = AtomicUsize::new(0);
    }
    fn count(_: &'static str, _: &Error) {
        REPORTED.fetch_add(1, SeqCst);
    }
    check(4, || {
        set_drop_error_handler(count);
        let shared = StdArc::new(Shared::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let thread = host_func_thread(&shared, &calls, 1);
        let taken = shared.take_errors(true).len();
        shared.request_stop();
        thread
            .join()
            .unwrap_or_else(|_| panic!("host-function thread"));
        assert_eq!(
            shared.take_errors(true).len(),
            0,
            "once detached, nothing is kept"
        );
        assert_eq!(taken + REPORTED.load(SeqCst), 1, "the failure once");
    });
}
