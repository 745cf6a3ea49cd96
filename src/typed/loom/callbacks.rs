//! Callback slots and the report thread (C1, C5, C8): `Flight::launch` (slot claimed with a
//! compare-and-swap, closure stored inline or boxed, counters), the trampolines the runtime
//! calls (one per closure type), `Flight::wait_for_callbacks` (unsubscribe's wait) and the
//! report thread's loop `serve` with its stop flag, all the library's own. The runtime is a
//! queue: `aclrtLaunchCallback` appends the trampoline and its data, `aclrtProcessReport`
//! runs the oldest on the report thread. Not modelled: the runtime's own threads and
//! subscription table (the calls around the wait in `Subscribed::release`).

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::Arc as StdArc;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

use super::{check, failed};
use crate::result::CallError;
use crate::sys::bindings::aclrtCallback;
use crate::sys::codes::AclError;
use crate::typed::callback::flight::Flight;
use crate::typed::callback::{Shared, serve};
use crate::typed::error::Error;
use crate::typed::handle::{refuse_inside_callback, set_drop_error_handler};

/// A callback the runtime accepted: its trampoline and data, for the one run.
struct Task(aclrtCallback, *mut c_void);
// SAFETY: handed to the report thread once, as the runtime hands it over.
unsafe impl Send for Task {}

/// The runtime's side of one report thread.
struct Runtime {
    queue: Mutex<VecDeque<Task>>,
    /// `aclrtLaunchCallback` refuses this many launches first.
    refuse: AtomicUsize,
}

impl Runtime {
    fn new(refuse: usize) -> Arc<Runtime> {
        Arc::new(Runtime {
            queue: Mutex::new(VecDeque::new()),
            refuse: AtomicUsize::new(refuse),
        })
    }

    /// `aclrtLaunchCallback`.
    fn submit(&self, callback: aclrtCallback, data: *mut c_void) -> Result<(), CallError> {
        let refused = self
            .refuse
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refused {
            return Err(failed("aclrtLaunchCallback", AclError::RtStreamNoCbReg));
        }
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(Task(callback, data));
        Ok(())
    }

    /// `aclrtProcessReport`: runs the oldest callback queued, else times out (after
    /// yielding: the loop spins on it).
    fn process(&self) -> Result<(), CallError> {
        let task = self
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        let Some(Task(Some(trampoline), data)) = task else {
            thread::yield_now();
            return Err(failed("aclrtProcessReport", AclError::RtReportTimeout));
        };
        // SAFETY: a trampoline and its data as `launch` submitted them, run once (C1 step 4).
        unsafe { trampoline(data) };
        Ok(())
    }
}

/// A closure small enough for a slot: counts its run, and checks that it runs marked as a
/// callback (C8: the report thread refuses the crate's calls there).
fn small(ran: &Arc<AtomicUsize>) -> impl FnOnce() + Send + 'static {
    let ran = Arc::clone(ran);
    move || {
        assert!(matches!(
            refuse_inside_callback(),
            Err(Error::InsideCallback)
        ));
        ran.fetch_add(1, SeqCst);
    }
}

/// A closure too large for a slot (boxed).
fn large(ran: &Arc<AtomicUsize>) -> impl FnOnce() + Send + 'static {
    let ran = Arc::clone(ran);
    let ballast = [1u64; 8];
    move || {
        assert_eq!(ballast.iter().sum::<u64>(), 8);
        ran.fetch_add(1, SeqCst);
    }
}

/// The report thread: `serve` until stopped with nothing outstanding.
fn report_thread(shared: &StdArc<Shared>, runtime: &Arc<Runtime>) -> thread::JoinHandle<()> {
    let (shared, runtime) = (StdArc::clone(shared), Arc::clone(runtime));
    thread::spawn(move || serve(&shared, || runtime.process(), |_| thread::yield_now()))
}

/// Launches `body`, counting a success; a full subscription is the only other outcome.
fn launch(
    flight: &Flight,
    runtime: &Runtime,
    body: impl FnOnce() + Send + 'static,
    launched: &mut usize,
) {
    match flight.launch(body, |callback, data| runtime.submit(callback, data)) {
        Ok(()) => *launched += 1,
        Err(Error::CallbackCapacity { capacity: 1 }) => {}
        Err(other) => panic!("unexpected launch error: {other}"),
    }
}

/// One slot: a callback launched on one thread, the subscription moved to a second that
/// launches again (storing its closure in the slot the report thread frees, or finding it
/// full) and unsubscribes, while the report thread runs them. Every launched closure runs once, on the
/// report thread, marked as a callback; the slot's data is never written while it is read
/// (loom checks every access); the wait returns only once none is pending; the report
/// thread stops only once every callback ran.
#[test]
fn c1_c5_a_slot_is_reused_while_the_subscription_moves() {
    check(4, || {
        let runtime = Runtime::new(0);
        let shared = StdArc::new(Shared::default());
        let ran = Arc::new(AtomicUsize::new(0));
        let flight = Flight::new(StdArc::clone(&shared), 1);
        let report = report_thread(&shared, &runtime);

        let mut launched = 0;
        launch(&flight, &runtime, small(&ran), &mut launched);
        assert!(
            refuse_inside_callback().is_ok(),
            "the launching thread is no callback"
        );
        let mover = {
            let (runtime, ran) = (Arc::clone(&runtime), Arc::clone(&ran));
            thread::spawn(move || {
                let mut launched = 0;
                launch(&flight, &runtime, small(&ran), &mut launched);
                flight
                    .wait_for_callbacks(thread::yield_now)
                    .unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(flight.pending(), 0);
                // Unsubscribed: the flight is dropped, as `Subscribed::unsubscribe` does.
                drop(flight);
                launched
            })
        };
        launched += mover.join().unwrap_or_else(|_| panic!("mover"));
        assert!(launched >= 1);
        assert_eq!(
            ran.load(SeqCst),
            launched,
            "every launched callback ran once"
        );
        // No stream subscribed any more: `ReportThread::stop`.
        shared.request_stop();
        report.join().unwrap_or_else(|_| panic!("report thread"));
        assert_eq!(shared.counts(), (0, 0));
    });
}

/// A launch the runtime refuses gives its closure back (dropped, never run: loom reports a
/// leaked `Arc` otherwise) and frees its slot for the next launch, while the report thread
/// runs what was accepted.
#[test]
fn c1_a_refused_launch_frees_its_slot_and_drops_its_closure() {
    check(4, || {
        let runtime = Runtime::new(1);
        let shared = StdArc::new(Shared::default());
        let ran = Arc::new(AtomicUsize::new(0));
        let flight = Flight::new(StdArc::clone(&shared), 1);
        let report = report_thread(&shared, &runtime);

        let refused = flight.launch(small(&ran), |c, d| runtime.submit(c, d));
        assert!(matches!(refused, Err(Error::Runtime { .. })), "{refused:?}");
        assert_eq!(flight.pending(), 0);
        let mut launched = 0;
        launch(&flight, &runtime, small(&ran), &mut launched);
        assert_eq!(launched, 1, "the refused launch freed the only slot");
        flight
            .wait_for_callbacks(thread::yield_now)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ran.load(SeqCst), 1);
        drop(flight);
        shared.request_stop();
        report.join().unwrap_or_else(|_| panic!("report thread"));
        assert_eq!(shared.counts(), (0, 0));
    });
}

/// `aclrtProcessReport` failures and callback panics kept by the report thread while `stop`
/// takes them and detaches it (a leaked subscription): each one is either returned by
/// `take_errors` or reported to the drop-error handler, exactly once.
#[test]
fn c1_failures_kept_while_the_thread_is_detached_are_never_lost() {
    loom::lazy_static! {
        static ref REPORTED: AtomicUsize = AtomicUsize::new(0);
    }
    fn count(_: &'static str, _: &Error) {
        REPORTED.fetch_add(1, SeqCst);
    }
    check(4, || {
        set_drop_error_handler(count);
        let shared = StdArc::new(Shared::default());
        let report = {
            let shared = StdArc::clone(&shared);
            thread::spawn(move || {
                shared.keep_failure(failed("aclrtProcessReport", AclError::Failure).into());
                shared.keep_panic("a callback panicked".to_owned());
            })
        };
        let taken = shared.take_errors(true).len();
        report.join().unwrap_or_else(|_| panic!("report thread"));
        let kept_later = shared.take_errors(true).len();
        assert_eq!(kept_later, 0, "once detached, nothing is kept");
        assert_eq!(taken + REPORTED.load(SeqCst), 2, "each error once");
    });
}

/// The report thread's stop flag: `stop` asks while callbacks launched before it are still
/// queued (a launch, then the subscription's end, raced with the loop); the loop ends only
/// once they have run.
#[test]
fn c1_the_report_thread_ends_only_after_the_callbacks_it_owes() {
    check(4, || {
        let runtime = Runtime::new(0);
        let shared = StdArc::new(Shared::default());
        let ran = Arc::new(AtomicUsize::new(0));
        let flight = Flight::new(StdArc::clone(&shared), 2);
        let stopped = Arc::new(AtomicBool::new(false));
        let report = {
            let (shared, runtime, stopped) = (
                StdArc::clone(&shared),
                Arc::clone(&runtime),
                Arc::clone(&stopped),
            );
            thread::spawn(move || {
                serve(&shared, || runtime.process(), |_| thread::yield_now());
                stopped.store(true, SeqCst);
            })
        };
        let mut launched = 0;
        launch(&flight, &runtime, small(&ran), &mut launched);
        launch(&flight, &runtime, large(&ran), &mut launched);
        assert_eq!(launched, 2);
        // The flag alone, as a leaked subscription's forced end would leave it.
        shared.request_stop();
        if stopped.load(SeqCst) {
            assert_eq!(ran.load(SeqCst), 2, "the loop ended with callbacks owed");
        }
        report.join().unwrap_or_else(|_| panic!("report thread"));
        assert_eq!(ran.load(SeqCst), 2);
        assert_eq!(flight.pending(), 0);
    });
}
