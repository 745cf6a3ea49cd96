//! C1 (classes 5 and 6): a report thread cannot be stopped, or dropped,
//! while a stream is still subscribed to it, even when the `Subscribed` was leaked
//! (`mem::forget`) so that the borrow checker no longer sees it. The refusal is
//! `Error::LiveChildren`, and the thread keeps running (a stopped thread's id could be
//! reused by the OS for another thread, which the runtime would then take for the
//! subscribed one).
//!
//! Its own test binary, and each test in a child process of its own (`common`): the
//! handles are leaked on purpose, and the process must exit normally.

use crate::support;

use crate::support::isolated as common;

use std::sync::{Arc, mpsc};
use std::time::Duration;

use ascend_typestate::{CallbackMode, Error, ReportThread};
use common::{Child, Reports, is_child, isolated, spawn_self};
use support::sim::{assert_no_findings, leaked_runtime};

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// Sends once dropped, even by an unwinding panic.
struct SignalOnDrop(mpsc::Sender<()>);

impl Drop for SignalOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

fn drop_the_report_thread_inside_its_own_callback() {
    let (acl, sim) = leaked_runtime();
    let device = leak(acl.set_device(0).unwrap());
    let ctx = leak(device.create_context().unwrap());
    let reports = Reports::capture();
    let report = Arc::new(ReportThread::spawn(ctx).unwrap());
    let old_id = report.thread_id();
    let keeper = Arc::clone(&report);
    let subscribed = keeper.subscribe(ctx.create_stream().unwrap()).unwrap();
    let (go, wait_for_go) = mpsc::channel::<()>();
    let (done, callback_done) = mpsc::channel::<()>();
    let signal = SignalOnDrop(done);
    subscribed
        .launch(CallbackMode::NonBlocking, move || {
            let _signal = signal;
            wait_for_go.recv().unwrap();
            // The last `Arc`: the report thread's own value, dropped on that thread.
            drop(report);
        })
        .unwrap();
    // It borrows `keeper`: leaked, so that the callback's `Arc` can be the last one.
    std::mem::forget(subscribed);
    drop(keeper);
    go.send(()).unwrap();
    callback_done
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback did not run");
    std::thread::sleep(Duration::from_millis(100));
    let reported = reports.take();
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(
        reported[0].1.starts_with("LiveChildren"),
        "expected LiveChildren (a stream is still subscribed): {reported:?}"
    );
    // The thread is alive: a new report thread cannot get its id.
    let probe = ReportThread::spawn(ctx).unwrap();
    assert_ne!(
        probe.thread_id(),
        old_id,
        "the report thread exited (its thread id was reused)"
    );
    probe.stop().unwrap();
    assert_no_findings(&sim.findings());
}

/// Hole: the last `Arc<ReportThread>` dropped inside one of its own callbacks made the
/// thread join itself: a panic inside the library ("failed to join thread: Resource
/// deadlock avoided"), caught at the FFI boundary, the drop-error handler never told, and
/// the thread gone although a (leaked) subscription still named it. The drop must report
/// `Error::LiveChildren` (a stream is still subscribed), keep the thread alive, and the
/// process must exit normally.
#[test]
fn c1_c8_report_thread_dropped_inside_its_own_callback_stays_alive() {
    if is_child() {
        drop_the_report_thread_inside_its_own_callback();
        return;
    }
    let outcome = spawn_self(&Child::default().timeout(Duration::from_secs(60)));
    outcome.assert_passed();
    for text in ["failed to join thread", "panicked"] {
        assert!(
            !outcome.stderr.contains(text),
            "the child's stderr says {text:?}: {}",
            outcome.describe()
        );
    }
}

/// Hole: `ReportThread::stop` after `mem::forget` of its `Subscribed` (which ends the
/// borrow that made `stop` not compile, `ui-tests/fail/c1_stop_report_thread_while_subscribed.rs`)
/// returned `Ok` and ended the thread while the runtime still had it subscribed. The OS
/// then gave its id to the next report thread, whose subscription of a stream on another
/// device failed (107012: "the same thread on two devices", C3). `stop` must refuse with
/// `Error::LiveChildren { count: 1 }` and keep the thread running, so that a new report
/// thread and its subscription work.
#[test]
fn c1_c3_stop_with_a_forgotten_subscription_is_refused_and_keeps_the_thread() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device0 = leak(acl.set_device(0).unwrap());
        let ctx0 = leak(device0.create_context().unwrap());
        let device1 = leak(acl.set_device(1).unwrap());
        let ctx1 = leak(device1.create_context().unwrap());
        let report = ReportThread::spawn(ctx0).unwrap();
        let old_id = report.thread_id();
        std::mem::forget(report.subscribe(ctx0.create_stream().unwrap()).unwrap());
        match report.stop() {
            Err(Error::LiveChildren { count: 1 }) => {}
            other => panic!("expected LiveChildren {{ count: 1 }}, got {other:?}"),
        }
        // A new report thread, for a stream of another device.
        let other = ReportThread::spawn(ctx1).unwrap();
        let subscribed = other
            .subscribe(ctx1.create_stream().unwrap())
            .unwrap_or_else(|failed| panic!("subscribe after the refused stop: {}", failed));
        assert_ne!(other.thread_id(), old_id);
        let (ran, callback_ran) = mpsc::channel();
        subscribed
            .launch(CallbackMode::Blocking, move || ran.send(()).unwrap())
            .unwrap();
        callback_ran
            .recv_timeout(Duration::from_secs(10))
            .expect("the callback did not run");
        let stream = subscribed.unsubscribe().unwrap();
        stream.destroy().unwrap();
        other.stop().unwrap();
        assert_no_findings(&sim.findings());
    });
}
