//! The end of the threads that serve subscribed streams (`ReportThread::stop`,
//! `HostFuncThread::stop` and their `Drop`, one shared path): the report-thread count (C4)
//! after many ends with failures kept, leaked subscriptions (the thread left running, its
//! slot kept, the context's children counted exactly), and the order of the errors (the
//! first returned, the others reported). Each test runs in a child process: the count of
//! report threads and the drop-error handler are process-wide.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use ascend_typestate::{
    AclError, CallbackMode, Error, HostFuncThread, MAX_REPORT_THREADS, ReportThread,
};

use crate::support;
use crate::support::isolated::{Child, Reports, isolated_with};
use crate::support::sim::{Session, Sim, assert_no_findings};

fn child() -> Child {
    Child::default().timeout(Duration::from_secs(120))
}

/// Waits until `call` was made at least `n` times since the last reset (5 s at most).
fn wait_calls(sim: &Sim, call: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while sim.call_count(call) < n {
        assert!(Instant::now() < deadline, "{call} was not called {n} times");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn is_process_report_failure(error: &Error) -> bool {
    matches!(
        error,
        Error::Runtime {
            call: "aclrtProcessReport",
            code: AclError::RtInternalError,
            ..
        }
    )
}

/// Takes every report-thread slot left and checks that exactly `free` were left (C4), then
/// gives them back.
fn assert_free_slots(ctx: &ascend_typestate::Context<'_>, free: usize) {
    let mut threads = Vec::with_capacity(free);
    for i in 0..free {
        match ReportThread::spawn(ctx) {
            Ok(thread) => threads.push(thread),
            Err(e) => panic!("only {i} of {free} slots were free: {e}"),
        }
    }
    let err = ReportThread::spawn(ctx).unwrap_err();
    assert!(
        matches!(err, Error::TooManyReportThreads { limit: 1024 }),
        "{err}"
    );
    for thread in threads {
        thread.stop().unwrap();
    }
}

/// 30 report threads, each failing in `aclrtProcessReport` once while a stream is
/// subscribed, ended alternately by `stop` (the failure returned) and by `Drop` (the failure
/// reported): every slot comes back (C4), the context has no child left, nothing is lost.
#[test]
fn failing_report_threads_give_every_slot_back() {
    isolated_with(child(), || {
        let session = Session::start();
        let reports = Reports::capture();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            for i in 0..30 {
                let report = ReportThread::spawn(&ctx).unwrap();
                let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
                session.sim.reset_call_counts();
                session.sim.inject_fault("aclrtProcessReport", 507_000, 1);
                wait_calls(&session.sim, "aclrtProcessReport", 2);
                stream.unsubscribe().unwrap().destroy().unwrap();
                if i % 2 == 0 {
                    let error = report.stop().unwrap_err();
                    assert!(is_process_report_failure(&error), "{error:?}");
                } else {
                    drop(report);
                    let got = reports.take();
                    assert_eq!(got.len(), 1, "{got:?}");
                    assert_eq!(got[0].0, "ReportThread");
                    assert!(got[0].1.contains("aclrtProcessReport"), "{got:?}");
                }
            }
            assert_eq!(reports.take(), vec![]);
            assert_free_slots(&ctx, MAX_REPORT_THREADS);
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_eq!(session.sim.live_objects(), 0);
        assert_no_findings(&session.finish());
    });
}

/// Two leaked `Subscribed` on one report thread, which had kept a failure: `stop` is
/// `LiveChildren { count: 2 }`, the kept failure is reported as left running, the thread
/// keeps its slot (C4), and the context counts exactly its three children (two streams, the
/// thread). A second thread with no leak, ended after it, gives its slot back.
#[test]
fn leaked_subscriptions_keep_the_slot_and_the_children_exact() {
    isolated_with(child(), || {
        let (acl, sim) = support::sim::leaked_runtime();
        let reports = Reports::capture();
        let device = acl.set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let a = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let b = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        sim.reset_call_counts();
        sim.inject_fault("aclrtProcessReport", 507_000, 1);
        wait_calls(&sim, "aclrtProcessReport", 3);
        let other = ReportThread::spawn(&ctx).unwrap();
        let (ran, callback_ran) = mpsc::channel();
        a.launch(CallbackMode::NonBlocking, move || ran.send(()).unwrap())
            .unwrap();
        std::mem::forget(a);
        std::mem::forget(b);
        match report.stop() {
            Err(Error::LiveChildren { count: 2 }) => {}
            other => panic!("expected LiveChildren {{ count: 2 }}, got {other:?}"),
        }
        let got = reports.take();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "ReportThread (left running)");
        assert!(got[0].1.contains("aclrtProcessReport"), "{got:?}");
        // Left running: it still serves the leaked stream.
        callback_ran
            .recv_timeout(Duration::from_secs(10))
            .expect("the thread left running did not run the callback");
        other.stop().unwrap();
        assert_free_slots(&ctx, MAX_REPORT_THREADS - 1);
        match ctx.try_destroy() {
            Err(failed) => {
                let (error, ctx) = failed.into_parts();
                assert!(
                    matches!(error, Error::LiveChildren { count: 3 }),
                    "{error:?}"
                );
                std::mem::forget(ctx);
            }
            Ok(()) => panic!("a context with a thread left running was destroyed"),
        }
        std::mem::forget(device);
        assert_eq!(reports.take(), vec![]);
    });
}

/// A leaked `HostFuncSubscribed` on a host-function thread that had kept a failure: `stop` is
/// `LiveChildren { count: 1 }`, the failure is reported as left running, the context counts
/// exactly its two children (the stream, the thread); report-thread slots are not touched.
#[test]
fn a_leaked_host_func_subscription_keeps_the_children_exact() {
    isolated_with(child(), || {
        let (acl, sim) = support::sim::leaked_runtime();
        let reports = Reports::capture();
        let device = acl.set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let host = HostFuncThread::spawn(&ctx).unwrap();
        let stream = host.subscribe(ctx.create_stream().unwrap()).unwrap();
        sim.reset_call_counts();
        sim.inject_fault("aclrtProcessHostFunc", 507_000, 1);
        wait_calls(&sim, "aclrtProcessHostFunc", 3);
        std::mem::forget(stream);
        match host.stop() {
            Err(Error::LiveChildren { count: 1 }) => {}
            other => panic!("expected LiveChildren {{ count: 1 }}, got {other:?}"),
        }
        let got = reports.take();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "HostFuncThread (left running)");
        assert!(got[0].1.contains("aclrtProcessHostFunc"), "{got:?}");
        // A second one, dropped with its subscription leaked: reported, not stopped.
        let host = HostFuncThread::spawn(&ctx).unwrap();
        std::mem::forget(host.subscribe(ctx.create_stream().unwrap()).unwrap());
        drop(host);
        let got = reports.take();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "HostFuncThread");
        assert!(got[0].1.contains("LiveChildren"), "{got:?}");
        assert_free_slots(&ctx, MAX_REPORT_THREADS);
        match ctx.try_destroy() {
            Err(failed) => {
                let (error, ctx) = failed.into_parts();
                assert!(
                    matches!(error, Error::LiveChildren { count: 4 }),
                    "{error:?}"
                );
                std::mem::forget(ctx);
            }
            Ok(()) => panic!("a context with threads left running was destroyed"),
        }
        std::mem::forget(device);
        assert_eq!(reports.take(), vec![]);
    });
}

/// Two `aclrtProcessReport` failures and two callback panics kept: `stop` returns the first
/// failure and reports the second and the panics (`CallbackPanicked { count: 2 }`), in that
/// order; `Drop` reports the same, the first under `ReportThread`. Slots all come back.
#[test]
fn kept_errors_come_out_first_returned_the_rest_reported() {
    isolated_with(child(), || {
        let session = Session::start();
        support::quiet_panics(&["worker end: a callback panics"]);
        let reports = Reports::capture();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            for by_stop in [true, false] {
                let report = ReportThread::spawn(&ctx).unwrap();
                let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
                session.sim.reset_call_counts();
                session.sim.inject_fault("aclrtProcessReport", 507_000, 2);
                wait_calls(&session.sim, "aclrtProcessReport", 3);
                for _ in 0..2 {
                    stream
                        .launch(CallbackMode::Blocking, || {
                            panic!("worker end: a callback panics")
                        })
                        .unwrap();
                }
                stream.synchronize().unwrap();
                stream.unsubscribe().unwrap().destroy().unwrap();
                let got = if by_stop {
                    let error = report.stop().unwrap_err();
                    assert!(is_process_report_failure(&error), "{error:?}");
                    reports.take()
                } else {
                    drop(report);
                    let mut got = reports.take();
                    assert_eq!(got.len(), 3, "{got:?}");
                    let first = got.pop().unwrap();
                    assert_eq!(first.0, "ReportThread");
                    assert!(first.1.contains("aclrtProcessReport"), "{first:?}");
                    got
                };
                assert_eq!(got.len(), 2, "{got:?}");
                assert_eq!(got[0].0, "ReportThread (a further error)");
                assert!(got[0].1.contains("aclrtProcessReport"), "{got:?}");
                assert_eq!(got[1].0, "ReportThread (a further error)");
                assert!(got[1].1.contains("CallbackPanicked"), "{got:?}");
                assert!(got[1].1.contains("count: 2"), "{got:?}");
                assert!(
                    got[1].1.contains("worker end: a callback panics"),
                    "{got:?}"
                );
            }
            assert_free_slots(&ctx, MAX_REPORT_THREADS);
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_eq!(session.sim.live_objects(), 0);
        assert_no_findings(&session.finish());
    });
}

/// Two `aclrtProcessHostFunc` failures kept: `stop` returns the first and reports the
/// second as a further error; the context has no child left.
#[test]
fn host_func_errors_come_out_first_returned_the_rest_reported() {
    isolated_with(child(), || {
        let session = Session::start();
        let reports = Reports::capture();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let host = HostFuncThread::spawn(&ctx).unwrap();
            let stream = host.subscribe(ctx.create_stream().unwrap()).unwrap();
            session.sim.reset_call_counts();
            session.sim.inject_fault("aclrtProcessHostFunc", 507_000, 2);
            wait_calls(&session.sim, "aclrtProcessHostFunc", 4);
            stream.unsubscribe().unwrap().destroy().unwrap();
            let error = host.stop().unwrap_err();
            assert_eq!(error.code(), Some(AclError::RtInternalError), "{error:?}");
            let got = reports.take();
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0].0, "HostFuncThread (a further error)");
            assert!(got[0].1.contains("aclrtProcessHostFunc"), "{got:?}");
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_eq!(session.sim.live_objects(), 0);
        assert_no_findings(&session.finish());
    });
}

static OWN: std::sync::Mutex<Option<ReportThread<'static>>> = std::sync::Mutex::new(None);
static OTHER: std::sync::Mutex<Option<ReportThread<'static>>> = std::sync::Mutex::new(None);
static STOPPED_IN_HANDLER: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// A drop-error handler that stops the report thread in `OTHER` (once), from whatever
/// thread reports.
fn stopping_handler(what: &'static str, error: &Error) {
    let thread = OTHER.lock().unwrap().take();
    let mut log = STOPPED_IN_HANDLER.lock().unwrap();
    log.push(format!("{what}: {error:?}"));
    if let Some(thread) = thread {
        log.push(format!("stop: {:?}", thread.stop()));
    }
}

/// A report thread stopped by one of its own callbacks, its subscription leaked: the stop
/// does not try to join the thread it runs on; it is `LiveChildren { count: 1 }`, the thread
/// keeps serving (a later callback runs) and keeps its slot; then a callback of that
/// detached thread panics, and the drop-error handler, on the report thread, stops another
/// report thread (no subscription): joined, `Ok`, its slot given back.
#[test]
fn stops_from_a_callback_and_from_the_drop_error_handler() {
    isolated_with(child(), || {
        let (acl, _sim) = support::sim::leaked_runtime();
        support::quiet_panics(&["worker end: a detached callback panics"]);
        let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
        let ctx: &'static ascend_typestate::Context<'static> =
            Box::leak(Box::new(device.create_context().unwrap()));
        *OWN.lock().unwrap() = Some(ReportThread::spawn(ctx).unwrap());
        *OTHER.lock().unwrap() = Some(ReportThread::spawn(ctx).unwrap());
        let (said, stop_said) = mpsc::channel();
        let (ran, later_ran) = mpsc::channel();
        {
            let guard = OWN.lock().unwrap();
            let stream = guard
                .as_ref()
                .unwrap()
                .subscribe(ctx.create_stream().unwrap())
                .unwrap();
            stream
                .launch(CallbackMode::NonBlocking, move || {
                    let thread = OWN.lock().unwrap().take().unwrap();
                    let stopped = thread.stop();
                    said.send(matches!(stopped, Err(Error::LiveChildren { count: 1 })))
                        .unwrap();
                })
                .unwrap();
            stream
                .launch(CallbackMode::NonBlocking, move || ran.send(()).unwrap())
                .unwrap();
            stream
                .launch(CallbackMode::NonBlocking, || {
                    std::thread::sleep(Duration::from_millis(100));
                    panic!("worker end: a detached callback panics")
                })
                .unwrap();
            std::mem::forget(stream);
        }
        ascend_typestate::set_drop_error_handler(stopping_handler);
        let answer = stop_said
            .recv_timeout(Duration::from_secs(10))
            .expect("the callback that stops its own thread did not end");
        assert!(
            answer,
            "a stop by its own callback was not LiveChildren {{ count: 1 }}"
        );
        later_ran
            .recv_timeout(Duration::from_secs(10))
            .expect("the thread stopped by its own callback stopped serving");
        let deadline = Instant::now() + Duration::from_secs(10);
        while STOPPED_IN_HANDLER.lock().unwrap().len() < 2 {
            assert!(Instant::now() < deadline, "the handler never ran");
            std::thread::sleep(Duration::from_millis(5));
        }
        let log = STOPPED_IN_HANDLER.lock().unwrap().clone();
        assert_eq!(log.len(), 2, "{log:?}");
        assert!(log[0].starts_with("ReportThread (left running: a callback panicked)"));
        assert!(
            log[0].contains("worker end: a detached callback panics"),
            "{log:?}"
        );
        assert_eq!(log[1], "stop: Ok(())");
        assert_free_slots(ctx, MAX_REPORT_THREADS - 1);
    });
}

/// A `Subscribed` whose unsubscription keeps failing at its `Drop` leaks its stream, still
/// subscribed: the report thread's `stop` is then `LiveChildren { count: 1 }` and the thread
/// keeps its slot (C4, C7), as for a `mem::forget`; the context counts the stream and the
/// thread. The same for a `HostFuncSubscribed` and its thread (C12).
#[test]
fn a_subscription_that_cannot_be_released_keeps_its_thread() {
    isolated_with(child(), || {
        let (acl, sim) = support::sim::leaked_runtime();
        let reports = Reports::capture();
        let device = acl.set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let host = HostFuncThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let other = host.subscribe(ctx.create_stream().unwrap()).unwrap();
        sim.inject_fault("aclrtUnSubscribeReport", 507_000, 10_000);
        sim.inject_fault("aclrtUnSubscribeHostFunc", 507_000, 10_000);
        drop(stream);
        drop(other);
        sim.clear_faults();
        let got = reports.take();
        assert!(
            got.iter()
                .any(|(what, _)| *what == "Subscribed (stream leaked: still subscribed)"),
            "{got:?}"
        );
        match report.stop() {
            Err(Error::LiveChildren { count: 1 }) => {}
            other => panic!("expected LiveChildren {{ count: 1 }}, got {other:?}"),
        }
        match host.stop() {
            Err(Error::LiveChildren { count: 1 }) => {}
            other => panic!("expected LiveChildren {{ count: 1 }}, got {other:?}"),
        }
        assert_free_slots(&ctx, MAX_REPORT_THREADS - 1);
        match ctx.try_destroy() {
            Err(failed) => {
                let (error, ctx) = failed.into_parts();
                assert!(
                    matches!(error, Error::LiveChildren { count: 4 }),
                    "{error:?}"
                );
                std::mem::forget(ctx);
            }
            Ok(()) => panic!("a context with threads left running was destroyed"),
        }
        std::mem::forget(device);
    });
}
