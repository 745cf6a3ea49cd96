//! Attacks on host-function threads (C12), kept as regression tests: thread ids reused by
//! the OS across devices, a subscription dropped inside a host callback, many failures of
//! `aclrtProcessHostFunc` (none lost), a thread's idle cost and its stop, streams of a
//! device's default context. Safe code only in the attacking parts.

use crate::support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use ascend_typestate::{CallbackMode, Error, HostFuncThread, ReportThread};
use support::isolated::{Reports, isolated};
use support::sim::{Session, assert_no_findings, leaked_runtime};

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// A stopped thread's id goes back to the OS, which gives it to the next thread: a thread
/// on another device must then subscribe its streams as if the id were new (the runtime
/// keeps no trace of the stopped thread: C12, one device per thread, 107012 otherwise).
#[test]
fn c12_a_reused_thread_id_serves_another_device() {
    let session = Session::start();
    {
        let device0 = session.default_device(0);
        let device1 = session.default_device(1);
        let mut reused = 0;
        for round in 0..30 {
            let (first, second) = if round % 2 == 0 {
                (&device0, &device1)
            } else {
                (&device1, &device0)
            };
            let host = HostFuncThread::spawn(first).unwrap();
            let id = host.thread_id();
            let stream = host.subscribe(first.create_stream().unwrap()).unwrap();
            stream.unsubscribe().unwrap().destroy().unwrap();
            host.stop().unwrap();
            let next = HostFuncThread::spawn(second).unwrap();
            reused += usize::from(next.thread_id() == id);
            let stream = next
                .subscribe(second.create_stream().unwrap())
                .unwrap_or_else(|e| panic!("round {round}: {e:?}"));
            stream.unsubscribe().unwrap().destroy().unwrap();
            next.stop().unwrap();
        }
        // The OS reuses a joined thread's id at once on Linux: the attack took place.
        assert!(
            reused > 0,
            "no thread id was reused: the attack did not run"
        );
    }
    assert_no_findings(&session.finish());
}

/// A subscription moved into a host callback and dropped there: its `Drop` cannot bind a
/// context inside a callback (C8), so the stream is leaked subscribed, never destroyed under
/// the subscription, and the refusal reported; the thread keeps running (it still counts
/// the subscription), and no checker finding is made.
#[test]
fn c12_c8_a_subscription_dropped_inside_a_callback_is_kept() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let reports = Reports::capture();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let host = leak(HostFuncThread::spawn(ctx).unwrap());
        let subscribed = host.subscribe(ctx.create_stream().unwrap()).unwrap();
        let report = ReportThread::spawn(ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let (tx, rx) = mpsc::channel();
        stream
            .launch(CallbackMode::Blocking, move || {
                drop(subscribed);
                tx.send(()).unwrap();
            })
            .unwrap();
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let reported = reports.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert_eq!(
            reported[0].0,
            "HostFuncSubscribed (stream leaked: still subscribed)"
        );
        assert!(reported[0].1.starts_with("InsideCallback"), "{reported:?}");
        stream.unsubscribe().unwrap().destroy().unwrap();
        report.stop().unwrap();
        // The first thread still runs (it keeps its id): a second one gets another.
        let probe = HostFuncThread::spawn(ctx).unwrap();
        assert_ne!(probe.thread_id(), host.thread_id());
        probe.stop().unwrap();
        assert_no_findings(&sim.findings());
    });
}

/// Forty failures of `aclrtProcessHostFunc`: `stop` returns the first, and every other one
/// reaches the drop-error handler, the ones beyond those kept as a count: none is lost.
#[test]
fn c12_many_process_failures_are_all_told() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let reports = Reports::capture();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let host = HostFuncThread::spawn(ctx).unwrap();
        let stream = host.subscribe(ctx.create_stream().unwrap()).unwrap();
        sim.reset_call_counts();
        sim.inject_fault("aclrtProcessHostFunc", 507_000, 40);
        let deadline = Instant::now() + Duration::from_secs(30);
        while sim.call_count("aclrtProcessHostFunc") < 42 {
            assert!(Instant::now() < deadline, "the loop stopped");
            std::thread::sleep(Duration::from_millis(5));
        }
        stream.unsubscribe().unwrap().destroy().unwrap();
        let first = host.stop().unwrap_err();
        assert!(first.to_string().contains("507000"), "{first:?}");
        let reported = reports.take();
        let individual = reported
            .iter()
            .filter(|(what, e)| *what == "HostFuncThread (a further error)" && e.contains("507000"))
            .count();
        let counted: usize = reported
            .iter()
            .filter_map(|(_, e)| {
                let at = e.find(" more aclrtProcessHostFunc failures")?;
                let digits: String = e[..at]
                    .chars()
                    .rev()
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits
                    .chars()
                    .rev()
                    .collect::<String>()
                    .parse::<usize>()
                    .ok()
            })
            .sum();
        assert_eq!(1 + individual + counted, 40, "{reported:#?}");
        assert_no_findings(&sim.findings());
    });
}

/// An idle thread costs at most about one call per poll (10 ms) once it has backed off, and
/// stops within about one poll.
#[test]
fn c12_an_idle_thread_backs_off_and_stops_promptly() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let host = HostFuncThread::spawn(&device).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        session.sim.reset_call_counts();
        std::thread::sleep(Duration::from_millis(200));
        let calls = session.sim.call_count("aclrtProcessHostFunc");
        assert!(calls <= 40, "{calls} calls in 200 ms while idle");
        let started = Instant::now();
        host.stop().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "stop took {:?}",
            started.elapsed()
        );
    }
    assert_no_findings(&session.finish());
}

/// A thread on a created context serving a stream of the device's default context, and one
/// on the default context serving a stream of a created context; torn down in both orders.
#[test]
fn c12_default_and_created_contexts_share_threads() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let ctx = device.create_context().unwrap();
        let on_created = HostFuncThread::spawn(&ctx).unwrap();
        let on_default = HostFuncThread::spawn(&device).unwrap();
        let a = on_created
            .subscribe(device.create_stream().unwrap())
            .unwrap();
        let b = on_default.subscribe(ctx.create_stream().unwrap()).unwrap();
        // Each stream to the other thread.
        let a = on_default.subscribe(a.unsubscribe().unwrap()).unwrap();
        let b = on_created.subscribe(b.unsubscribe().unwrap()).unwrap();
        drop(a);
        b.unsubscribe().unwrap().destroy().unwrap();
        on_default.stop().unwrap();
        on_created.stop().unwrap();
        ctx.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// `Error::HostFuncThreadStopped` says what a thread that is not running says.
#[test]
fn c12_the_stopped_error_reads_well() {
    let error = Error::HostFuncThreadStopped("its loop has ended".into());
    assert_eq!(
        error.to_string(),
        "the host-function thread has stopped: its loop has ended"
    );
    assert!(format!("{error:?}").starts_with("HostFuncThreadStopped("));
}
