//! The host-function ticket registry (C10): `Shared::launch` (a closure registered under a
//! ticket, the ticket handed to the runtime), the trampoline that takes it out for its only
//! run, the launch error path that takes it back, and `forget_dropped`, which frees the
//! closures of tasks the runtime dropped, all the library's own, on the process-wide
//! registry. The runtime is a queue per stream run by a runtime thread; a forced destroy
//! (S8) is a task that never runs. Not modelled: the synchronisation that tells the stream
//! its tasks are done (the model joins the runtime thread instead).

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::Arc as StdArc;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

use super::{check, failed};
use crate::result::CallError;
use crate::sys::bindings::aclrtHostFunc;
use crate::sys::codes::AclError;
use crate::typed::host_fn::{Shared, registered};

/// A host function the runtime accepted.
struct Task(aclrtHostFunc, *mut c_void);
// SAFETY: the ticket (a number, not a pointer) and the trampoline, run once.
unsafe impl Send for Task {}

/// The runtime's queue of one stream and its thread.
struct Runtime {
    queue: Mutex<VecDeque<Task>>,
    /// No more launches: the runtime thread ends once the queue is empty.
    closed: AtomicBool,
}

impl Runtime {
    fn new() -> Arc<Runtime> {
        Arc::new(Runtime {
            queue: Mutex::new(VecDeque::new()),
            closed: AtomicBool::new(false),
        })
    }

    /// `aclrtLaunchHostFunc`; `fail_after_queueing`: a runtime that reports a failure for a
    /// task it queued all the same (the launch then races its run for the closure).
    fn submit(
        &self,
        function: aclrtHostFunc,
        args: *mut c_void,
        fail_after_queueing: bool,
    ) -> Result<(), CallError> {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(Task(function, args));
        if fail_after_queueing {
            return Err(failed("aclrtLaunchHostFunc", AclError::Failure));
        }
        Ok(())
    }

    /// The runtime's thread: runs the queued tasks in order until closed and empty.
    fn run(&self) {
        loop {
            // Read before the queue: every launch precedes the close.
            let closed = self.closed.load(SeqCst);
            let task = self
                .queue
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front();
            match task {
                Some(Task(Some(trampoline), args)) => {
                    // SAFETY: the library's trampoline and its ticket, run once.
                    unsafe { trampoline(args) }
                }
                Some(Task(None, _)) => panic!("a launch without a trampoline"),
                None if closed => return,
                None => thread::yield_now(),
            }
        }
    }
}

/// Counts the closure's run, or its drop unrun: each closure ends exactly one way.
struct Outcome {
    ran: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
    done: std::cell::Cell<bool>,
}

impl Outcome {
    fn body(ran: &Arc<AtomicUsize>, dropped: &Arc<AtomicUsize>) -> impl FnOnce() + Send + 'static {
        let outcome = Outcome {
            ran: Arc::clone(ran),
            dropped: Arc::clone(dropped),
            done: std::cell::Cell::new(false),
        };
        move || {
            outcome.ran.fetch_add(1, SeqCst);
            outcome.done.set(true);
        }
    }
}

impl Drop for Outcome {
    fn drop(&mut self) {
        if !self.done.get() {
            self.dropped.fetch_add(1, SeqCst);
        }
    }
}

/// Two streams on two threads share the registry: stream A's task is dropped by a forced
/// destroy and freed by its `forget_dropped`, while stream B launches twice (the second
/// launch reported failed after the runtime queued it) and its runtime thread runs them.
/// A's clean-up never takes B's closures; B's failed launch and the run of the same task
/// take its closure once between them, and `pending` counts it once; every closure runs or
/// is dropped exactly once, and the registry ends empty.
#[test]
fn c10_every_host_function_runs_or_is_freed_exactly_once() {
    check(3, || {
        let (ran, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let stream_a = {
            let (ran, dropped) = (Arc::clone(&ran), Arc::clone(&dropped));
            thread::spawn(move || {
                let shared = StdArc::new(Shared::default());
                // Accepted, then dropped unrun by `aclrtDestroyStreamForce` (S8).
                shared
                    .launch(Outcome::body(&ran, &dropped), |_, _| Ok(()))
                    .unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(shared.pending(), 1);
                shared.forget_dropped();
                assert_eq!(shared.pending(), 0);
            })
        };
        let runtime = Runtime::new();
        let runner = {
            let runtime = Arc::clone(&runtime);
            thread::spawn(move || runtime.run())
        };
        let shared_b = StdArc::new(Shared::default());
        shared_b
            .launch(Outcome::body(&ran, &dropped), |f, a| {
                runtime.submit(f, a, false)
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let refused = shared_b.launch(Outcome::body(&ran, &dropped), |f, a| {
            runtime.submit(f, a, true)
        });
        assert!(refused.is_err());
        runtime.closed.store(true, SeqCst);
        runner.join().unwrap_or_else(|_| panic!("runtime thread"));
        // B's stream is done: what is still registered for it was dropped.
        shared_b.forget_dropped();
        stream_a.join().unwrap_or_else(|_| panic!("stream A"));
        assert_eq!(shared_b.pending(), 0);
        assert_eq!(
            ran.load(SeqCst) + dropped.load(SeqCst),
            3,
            "each closure once"
        );
        assert!(ran.load(SeqCst) >= 1, "B's accepted launch ran");
        assert_eq!(registered(), 0);
    });
}
