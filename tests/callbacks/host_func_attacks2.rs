//! Attacks on host-function threads (C12), second round, kept as regression tests: a
//! thread stopped before its first `aclrtProcessHostFunc`, a subscription owned by a host
//! function (C10) that panics or never runs (S8), a thread forgotten on a device's default
//! context, threads and subscriptions dropped by thread-local destructors, a panicking
//! drop-error handler on a thread left running, threads stopped inside callbacks. Safe
//! code only in the attacking parts.
//!
//! Each test in a child process of its own (`support::isolated`): the handles are leaked on
//! purpose, the drop-error handler is set, or call counts are read process-wide.

use crate::support;

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ascend_typestate::{Error, HostFuncSubscribed, HostFuncThread};
use support::isolated::{Reports, isolated};
use support::sim::{Sim, assert_no_findings, leaked_runtime};

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// Waits until `sim` has counted `more` further calls of `aclrtProcessHostFunc`: the loop of
/// a host-function thread still runs.
fn still_processing(sim: &Sim, more: u64) {
    let from = sim.call_count("aclrtProcessHostFunc");
    let deadline = Instant::now() + Duration::from_secs(5);
    while sim.call_count("aclrtProcessHostFunc") < from + more {
        assert!(
            Instant::now() < deadline,
            "no host-function thread processes any more"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The compact runtime keeps an id per thread value (`pthread_t`): the first
/// `aclrtSubscribeHostFunc` naming a thread makes it, and only the thread's own first
/// `aclrtProcessHostFunc` registers the thread-exit destructor that forgets it
/// (`hicann/runtime`, `src/runtime_compact/feature/src/subscribe_manager_linux.c`:
/// `GetSubscribeId`, `GetCurSubscribeId`, `SubscribeInfoDestructor`). A thread subscribed,
/// unsubscribed and stopped before its loop's first call would leave its id behind, to the
/// next thread the OS gives the same value (at once, on Linux). Before the fix, about one
/// round in a hundred here stopped a thread that had never called it.
#[test]
fn c12_a_thread_stopped_at_once_has_processed_once() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let mut never = 0u32;
        for _ in 0..1000 {
            sim.reset_call_counts();
            let host = HostFuncThread::spawn(ctx).unwrap();
            let stream = host.subscribe(ctx.create_stream().unwrap()).unwrap();
            stream.unsubscribe().unwrap().destroy().unwrap();
            host.stop().unwrap();
            never += u32::from(sim.call_count("aclrtProcessHostFunc") == 0);
        }
        // And a thread stopped as soon as it is spawned.
        for _ in 0..200 {
            sim.reset_call_counts();
            HostFuncThread::spawn(ctx).unwrap().stop().unwrap();
            never += u32::from(sim.call_count("aclrtProcessHostFunc") == 0);
        }
        assert_eq!(never, 0, "threads that exited without processing once");
        assert_no_findings(&sim.findings());
    });
}

/// A subscription moved into a host function (C10) that panics: the unwind drops it on the
/// runtime's thread, where it cannot bind a context (C8). The stream is leaked subscribed
/// (never destroyed under the subscription), the refusal reported, the panic caught and
/// reported by the host-function stream; the host-function thread keeps serving.
#[test]
fn c12_c10_a_subscription_dropped_by_a_panicking_host_function_is_kept() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let reports = Reports::capture();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let host = leak(HostFuncThread::spawn(ctx).unwrap());
        let subscribed = host.subscribe(ctx.create_stream().unwrap()).unwrap();
        let runner = ctx.create_stream().unwrap().with_host_functions();
        let (tx, rx) = mpsc::channel::<()>();
        support::quiet_panics(&["c12: a host function panics with a subscription"]);
        runner
            .launch(move || {
                let _owned = subscribed;
                let _tx = tx;
                panic!("c12: a host function panics with a subscription");
            })
            .unwrap();
        // The unwind drops the sender (disconnecting `rx`), then the subscription; the
        // stream's synchronisation waits for the host function's end, the unwind included.
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        );
        runner.synchronize().unwrap();
        let panics = runner.take_panics();
        assert_eq!(
            panics,
            ["c12: a host function panics with a subscription"],
            "{panics:?}"
        );
        runner.destroy().unwrap();
        let reported = reports.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert_eq!(
            reported[0].0,
            "HostFuncSubscribed (stream leaked: still subscribed)"
        );
        assert!(reported[0].1.starts_with("InsideCallback"), "{reported:?}");
        still_processing(&sim, 3);
        let probe = HostFuncThread::spawn(ctx).unwrap();
        assert_ne!(probe.thread_id(), host.thread_id());
        probe.stop().unwrap();
        assert_no_findings(&sim.findings());
    });
}

/// A thread forgotten on a device's default context: the device is not reset under it
/// (`Error::LiveChildren`), and the thread keeps processing with its context current.
#[test]
fn c12_a_forgotten_thread_on_the_default_context_keeps_the_device() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = acl.set_device(0).unwrap().into_default_context().unwrap();
        std::mem::forget(HostFuncThread::spawn(&device).unwrap());
        let (error, device) = device.try_reset().unwrap_err().into_parts();
        assert!(
            matches!(error, Error::LiveChildren { count: 1 }),
            "{error:?}"
        );
        std::mem::forget(device);
        still_processing(&sim, 3);
        assert_no_findings(&sim.findings());
    });
}

thread_local! {
    static HOST: RefCell<Option<HostFuncThread<'static>>> = const { RefCell::new(None) };
    static SUBSCRIBED: RefCell<Option<HostFuncSubscribed<'static, 'static>>> =
        const { RefCell::new(None) };
}

/// A thread and a subscription kept in thread-locals, dropped when their owner thread
/// exits (where other thread-locals, the crate's binding cache among them, may be gone):
/// the subscription is unsubscribed and its stream destroyed, the thread stopped; nothing
/// reported, nothing left, no finding.
#[test]
fn c12_thread_and_subscription_dropped_by_thread_local_destructors() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let reports = Reports::capture();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let serving = leak(HostFuncThread::spawn(ctx).unwrap());
        let live = sim.live_objects();
        let owner = std::thread::spawn(move || {
            let own = HostFuncThread::spawn(ctx).unwrap();
            HOST.with(|h| *h.borrow_mut() = Some(own));
            let stream = ctx.create_stream().unwrap();
            let subscribed = serving.subscribe(stream).unwrap();
            subscribed.is_complete().unwrap();
            SUBSCRIBED.with(|s| *s.borrow_mut() = Some(subscribed));
        });
        owner.join().unwrap();
        assert_eq!(reports.take(), []);
        assert_eq!(sim.live_objects(), live, "the stream was not destroyed");
        assert_eq!(sim.call_count("aclrtUnSubscribeHostFunc"), 1);
        assert_no_findings(&sim.findings());
    });
}

/// A thread left running (its subscription forgotten) reports its failures as they happen,
/// on itself, through the drop-error handler: a handler that panics there does not end the
/// thread's loop, which must keep serving the stream (and keep its id) for the life of the
/// process.
#[test]
fn c12_a_panicking_handler_does_not_end_a_thread_left_running() {
    static CALLED: AtomicUsize = AtomicUsize::new(0);
    fn panicking(_: &'static str, _: &Error) {
        CALLED.fetch_add(1, Ordering::AcqRel);
        panic!("c12: the drop-error handler panics");
    }
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let host = HostFuncThread::spawn(ctx).unwrap();
        let id = host.thread_id();
        std::mem::forget(host.subscribe(ctx.create_stream().unwrap()).unwrap());
        assert!(matches!(host.stop(), Err(Error::LiveChildren { count: 1 })));
        support::quiet_panics(&["c12: the drop-error handler panics"]);
        ascend_typestate::set_drop_error_handler(panicking);
        sim.reset_call_counts();
        sim.inject_fault("aclrtProcessHostFunc", 507_000, 5);
        let deadline = Instant::now() + Duration::from_secs(10);
        while CALLED.load(Ordering::Acquire) < 5 {
            assert!(Instant::now() < deadline, "the failures were not reported");
            std::thread::sleep(Duration::from_millis(2));
        }
        still_processing(&sim, 3);
        let probe = HostFuncThread::spawn(ctx).unwrap();
        assert_ne!(probe.thread_id(), id, "the thread left running has exited");
        probe.stop().unwrap();
        assert_no_findings(&sim.findings());
    });
}

/// A host-function thread stopped from inside a host function (C10) and one stopped from a
/// report callback (C1): `stop` makes no runtime call on the calling thread, only joins
/// the thread after its last `aclrtProcessHostFunc` (at most one poll): no deadlock with
/// the runtime thread that runs the callback, nothing reported, no finding.
#[test]
fn c12_c8_a_thread_stopped_inside_callbacks() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let reports = Reports::capture();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let in_host_fn = HostFuncThread::spawn(ctx).unwrap();
        let in_report = HostFuncThread::spawn(ctx).unwrap();
        let (tx, rx) = mpsc::channel();
        let runner = ctx.create_stream().unwrap().with_host_functions();
        let to_host_fn = tx.clone();
        runner
            .launch(move || {
                to_host_fn
                    .send(("host function", in_host_fn.stop()))
                    .unwrap();
            })
            .unwrap();
        let report = ascend_typestate::ReportThread::spawn(ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        stream
            .launch(ascend_typestate::CallbackMode::Blocking, move || {
                tx.send(("report callback", in_report.stop())).unwrap();
            })
            .unwrap();
        for _ in 0..2 {
            let (where_, stopped) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
            assert!(stopped.is_ok(), "{where_}: {stopped:?}");
        }
        runner.destroy().unwrap();
        stream.unsubscribe().unwrap().destroy().unwrap();
        report.stop().unwrap();
        assert_eq!(reports.take(), []);
        assert_no_findings(&sim.findings());
    });
}

/// A subscription owned by a host function (C10) that never runs: the host-function stream
/// is destroyed by force (S8) behind a slow kernel, and its dropped closure is freed on the
/// calling thread, where the subscription's `Drop` can unsubscribe and destroy its stream.
/// Nothing is reported and the only findings are the discarded tasks (S8).
#[test]
fn c12_c10_a_subscription_in_a_dropped_host_function_is_released() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let reports = Reports::capture();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let host = leak(HostFuncThread::spawn(ctx).unwrap());
        let live = sim.live_objects();
        let subscribed = host.subscribe(ctx.create_stream().unwrap()).unwrap();
        let runner = ctx.create_stream().unwrap().with_host_functions();
        runner.is_complete().unwrap(); // binds the context for the raw kernel
        sim.sleep_kernel(runner.as_raw(), 200_000);
        let (tx, rx) = mpsc::channel::<()>();
        runner
            .launch(move || {
                let _owned = subscribed;
                let _ = tx.send(());
            })
            .unwrap();
        runner.destroy_force().unwrap();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Err(mpsc::RecvTimeoutError::Disconnected),
            "the dropped host function ran"
        );
        assert_eq!(reports.take(), []);
        assert_eq!(sim.call_count("aclrtUnSubscribeHostFunc"), 1);
        assert_eq!(sim.live_objects(), live, "a stream is left");
        support::sim::assert_only_discarded(&sim.findings(), 1..=2);
    });
}
