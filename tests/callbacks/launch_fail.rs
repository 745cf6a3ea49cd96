//! `Subscribed::launch` when `aclrtLaunchCallback` fails (injected). The
//! payload is taken back and dropped on the caller's thread; when the closure's captures
//! panicked in `Drop`, the counters `pending`/`outstanding` were never decremented and
//! `unsubscribe` spun forever. The counters now come first. Each test runs in a child
//! process (it may hang).

use crate::support;
use crate::support::callbacks as common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ascend_typestate::Error;
use ascend_typestate::{CallbackMode, ReportThread};
use common::{Bomb, is_child, run_child};
use support::sim::Session;

fn parent(name: &str, limit: Duration) {
    let out = run_child(name, limit, false);
    assert!(out.ok(), "child `{name}` failed:\n{}", out.describe());
}

/// Baseline: an injected launch failure returns the error, drops the closure once on the
/// caller's thread, never runs it; unsubscribe and stop work.
#[test]
fn launch_failure_drops_the_closure_once_and_never_runs_it() {
    const NAME: &str = "launch_failure_drops_the_closure_once_and_never_runs_it";
    if !is_child(NAME) {
        return parent(NAME, Duration::from_secs(30));
    }
    struct CountDrop(Arc<AtomicUsize>);
    impl Drop for CountDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let session = Session::start();
    let sim = session.acl().simulator().unwrap();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let drops = Arc::new(AtomicUsize::new(0));
        let runs = Arc::new(AtomicUsize::new(0));
        sim.inject_fault("aclrtLaunchCallback", 507000, 0, 1)
            .unwrap();
        let guard = CountDrop(Arc::clone(&drops));
        let r = Arc::clone(&runs);
        let launched = stream.launch(CallbackMode::Blocking, move || {
            let _g = &guard;
            r.fetch_add(1, Ordering::SeqCst);
        });
        assert!(
            matches!(launched, Err(Error::Runtime { .. })),
            "{launched:?}"
        );
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert_eq!(stream.pending_callbacks(), 0);
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        stream.destroy().unwrap();
        report.stop().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// The closure's capture panics in `Drop` when the failed launch drops it: the panic unwinds
/// out of `launch` before `pending` and `outstanding` are decremented. The caller catches
/// it (safe code) and unsubscribes: `release` waits forever for a callback that does not
/// exist; `stop` would wait forever too.
#[test]
fn launch_failure_with_a_capture_that_panics_in_drop_then_unsubscribe() {
    const NAME: &str = "launch_failure_with_a_capture_that_panics_in_drop_then_unsubscribe";
    if !is_child(NAME) {
        return parent(NAME, Duration::from_secs(20));
    }
    let session = Session::start();
    let sim = session.acl().simulator().unwrap();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        sim.inject_fault("aclrtLaunchCallback", 507000, 0, 1)
            .unwrap();
        let bomb = Bomb("capture of a callback whose launch failed");
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            stream.launch(CallbackMode::NonBlocking, move || {
                let _b = &bomb;
            })
        }));
        assert!(caught.is_err(), "the capture's Drop panicked out of launch");
        eprintln!(
            "pending_callbacks after the failed launch: {}",
            stream.pending_callbacks()
        );
        let stream = stream.unsubscribe().unwrap(); // hangs if `pending` leaked
        stream.destroy().unwrap();
        report.stop().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// The same, without catching: the panic unwinds through the caller's frame, whose
/// `Subscribed` is dropped during the unwind: `Drop` → `release` waits forever.
#[test]
fn launch_failure_with_a_capture_that_panics_in_drop_uncaught() {
    const NAME: &str = "launch_failure_with_a_capture_that_panics_in_drop_uncaught";
    if !is_child(NAME) {
        let out = run_child(NAME, Duration::from_secs(20), false);
        // Expected: the child's test fails (exit 101, the panic), not a hang.
        assert!(!out.timed_out, "child `{NAME}` hung:\n{}", out.describe());
        return;
    }
    let session = Session::start();
    let sim = session.acl().simulator().unwrap();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        sim.inject_fault("aclrtLaunchCallback", 507000, 0, 1)
            .unwrap();
        let bomb = Bomb("capture of a callback whose launch failed");
        let _ = stream.launch(CallbackMode::NonBlocking, move || {
            let _b = &bomb;
        });
        unreachable!();
    }
}
