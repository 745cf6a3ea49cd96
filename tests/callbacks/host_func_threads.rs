//! Host-function threads (C12) on the simulator: the lifecycle, one thread serving streams
//! of two contexts of a device, refusals before the runtime is called, faults of each call
//! (subscribe, process, unsubscribe), drops with work pending and by a panic, and threads.
//! Every program ends with nothing alive and no checker finding.

use crate::support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ascend_typestate::{AclError, Error, HostFuncThread, MallocPolicy, Stream};
use support::sim::{Session, assert_no_findings};

/// A slow kernel on `stream`: its later tasks wait for it.
fn slow(session: &Session, stream: &Stream<'_>, millis: u64) {
    // Binds the stream's context on this thread (D6), as the raw launch needs.
    stream.is_complete().unwrap();
    session.sim.sleep_kernel(stream.as_raw(), millis * 1000);
}

/// The flow: a thread, two streams of two contexts of one device subscribed to it, work on
/// both (a copy through an async scope, a kernel), each given back by `unsubscribe` once
/// its tasks are done, then the thread stopped. The thread called `aclrtProcessHostFunc`
/// with its context current, and the runtime saw one subscription per stream.
#[test]
fn c12_host_func_thread_serves_streams_of_two_contexts_and_stops() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let other = device.create_context().unwrap();
        session.sim.reset_call_counts();
        let host = HostFuncThread::spawn(&ctx).unwrap();
        assert_eq!(host.device_id(), 0);
        assert_ne!(host.thread_id(), 0);
        let a = host.subscribe(ctx.create_stream().unwrap()).unwrap();
        let b = host.subscribe(other.create_stream().unwrap()).unwrap();
        assert!(format!("{a:?}").contains("HostFuncSubscribed"));
        // Work on the subscribed streams, through `Deref<Target = Stream>`.
        let input: Vec<u32> = (0..64).collect();
        let mut on_device = ctx.alloc::<u32>(64, MallocPolicy::HugeFirst).unwrap();
        let mut back = vec![0u32; 64];
        slow(&session, &a, 20);
        ctx.async_scope(|scope| scope.copy(&a, &mut on_device, &input[..]).map(drop))
            .unwrap();
        ctx.async_scope(|scope| scope.copy(&a, &mut back[..], &on_device).map(drop))
            .unwrap();
        assert_eq!(back, input);
        slow(&session, &b, 20);
        // Processing while subscribed: the loop waits in the runtime, one poll at a time.
        std::thread::sleep(Duration::from_millis(40));
        let started = Instant::now();
        let b = b.unsubscribe().unwrap();
        let a = a.unsubscribe().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "unsubscribe waits for the stream's tasks, not for the thread"
        );
        b.destroy().unwrap();
        a.destroy().unwrap();
        drop(on_device);
        host.stop().unwrap();
        assert_eq!(session.sim.call_count("aclrtSubscribeHostFunc"), 2);
        assert_eq!(session.sim.call_count("aclrtUnSubscribeHostFunc"), 2);
        assert!(session.sim.call_count("aclrtProcessHostFunc") >= 2);
        other.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0);
    assert_no_findings(&session.finish());
}

/// A stream given back by `unsubscribe` is a plain stream: it can be subscribed to another
/// host-function thread, used for report callbacks or host functions (one role at a time).
#[test]
fn c12_an_unsubscribed_stream_takes_another_role() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let first = HostFuncThread::spawn(&device).unwrap();
        let second = HostFuncThread::spawn(&device).unwrap();
        assert_ne!(first.thread_id(), second.thread_id());
        let stream = first.subscribe(device.create_stream().unwrap()).unwrap();
        let stream = stream.unsubscribe().unwrap();
        let stream = second.subscribe(stream).unwrap();
        let stream = stream.unsubscribe().unwrap();
        let report = ascend_typestate::ReportThread::spawn(&device).unwrap();
        let stream = report.subscribe(stream).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        stream
            .launch(ascend_typestate::CallbackMode::Blocking, move || {
                let _ = tx.send(());
            })
            .unwrap();
        let stream = stream.unsubscribe().unwrap();
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let stream = stream.with_host_functions();
        stream.launch(|| {}).unwrap();
        stream.destroy().unwrap();
        report.stop().unwrap();
        second.stop().unwrap();
        first.stop().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// C12: one thread serves streams of one device. A stream of another device is refused
/// with `Error::DeviceMismatch` before the runtime is called, and given back.
#[test]
fn c12_a_stream_of_another_device_is_refused_before_the_call() {
    let session = Session::start();
    {
        let device0 = session.default_device(0);
        let device1 = session.default_device(1);
        let host = HostFuncThread::spawn(&device0).unwrap();
        session.sim.reset_call_counts();
        let failed = host
            .try_subscribe(device1.create_stream().unwrap())
            .unwrap_err();
        let (error, stream) = failed.into_parts();
        assert!(
            matches!(
                error,
                Error::DeviceMismatch {
                    expected: 0,
                    found: 1,
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(session.sim.call_count("aclrtSubscribeHostFunc"), 0);
        // The stream is unharmed, and the thread still serves its own device.
        stream.synchronize().unwrap();
        stream.destroy().unwrap();
        let own = host.subscribe(device0.create_stream().unwrap()).unwrap();
        own.unsubscribe().unwrap().destroy().unwrap();
        host.stop().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// A failed `aclrtSubscribeHostFunc` gives the stream back (`try_subscribe`), or hands it to
/// its `Drop` (`subscribe`); nothing stays counted, so `stop` succeeds.
#[test]
fn c12_a_failed_subscription_gives_the_stream_back() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let host = HostFuncThread::spawn(&device).unwrap();
        session
            .sim
            .inject_fault("aclrtSubscribeHostFunc", 507_000, 1);
        let (error, stream) = host
            .try_subscribe(device.create_stream().unwrap())
            .unwrap_err()
            .into_parts();
        assert_eq!(error.code(), Some(AclError::RtInternalError), "{error:?}");
        let stream = host.subscribe(stream).unwrap();
        let stream = stream.unsubscribe().unwrap();
        session
            .sim
            .inject_fault("aclrtSubscribeHostFunc", 507_000, 1);
        let error = host.subscribe(stream).unwrap_err();
        assert_eq!(error.code(), Some(AclError::RtInternalError), "{error:?}");
        host.stop().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0);
    assert_no_findings(&session.finish());
}

/// A failed `aclrtUnSubscribeHostFunc` gives the subscription back (`try_unsubscribe`); a
/// second try succeeds. With `unsubscribe`, the `Drop` fallback tries again and reports the
/// first failure's error to the caller.
#[test]
fn c12_a_failed_unsubscription_gives_the_subscription_back() {
    let session = Session::start();
    let reports = support::DropErrors::capture();
    {
        let device = session.default_device(0);
        let host = HostFuncThread::spawn(&device).unwrap();
        let stream = host.subscribe(device.create_stream().unwrap()).unwrap();
        session
            .sim
            .inject_fault("aclrtUnSubscribeHostFunc", 507_000, 1);
        let (error, stream) = stream.try_unsubscribe().unwrap_err().into_parts();
        assert_eq!(error.code(), Some(AclError::RtInternalError), "{error:?}");
        let stream = stream.unsubscribe().unwrap();
        let stream = host.subscribe(stream).unwrap();
        session
            .sim
            .inject_fault("aclrtUnSubscribeHostFunc", 507_000, 1);
        let error = stream.unsubscribe().unwrap_err();
        assert_eq!(error.code(), Some(AclError::RtInternalError), "{error:?}");
        // The fallback unsubscribed and destroyed the stream: the thread stops cleanly.
        host.stop().unwrap();
    }
    assert_eq!(reports.take(), Vec::<String>::new());
    assert_eq!(session.sim.live_objects(), 0);
    assert_no_findings(&session.finish());
}

/// A failed `aclrtProcessHostFunc` does not end the loop: the thread goes on serving, and
/// `stop` returns the failure.
#[test]
fn c12_a_failed_process_call_is_returned_by_stop() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let host = HostFuncThread::spawn(&device).unwrap();
        let stream = host.subscribe(device.create_stream().unwrap()).unwrap();
        session.sim.reset_call_counts();
        session.sim.inject_fault("aclrtProcessHostFunc", 507_000, 1);
        let deadline = Instant::now() + Duration::from_secs(5);
        while session.sim.call_count("aclrtProcessHostFunc") < 3 {
            assert!(
                Instant::now() < deadline,
                "the loop stopped after a failure"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let stream = stream.unsubscribe().unwrap();
        stream.destroy().unwrap();
        let error = host.stop().unwrap_err();
        assert_eq!(error.code(), Some(AclError::RtInternalError), "{error:?}");
    }
    assert_no_findings(&session.finish());
}

/// Dropped with work pending: the subscription waits for the stream's tasks, unsubscribes
/// and destroys the stream; the thread, dropped after it, stops. Also when a panic unwinds
/// through them.
#[test]
fn c12_drop_and_panic_with_work_pending_release_everything() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        {
            let host = HostFuncThread::spawn(&device).unwrap();
            let stream = host.subscribe(device.create_stream().unwrap()).unwrap();
            slow(&session, &stream, 30);
            let started = Instant::now();
            drop(stream);
            assert!(started.elapsed() >= Duration::from_millis(20), "not waited");
        }
        support::quiet_panics(&["c12: a panic with two subscriptions"]);
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            let host = HostFuncThread::spawn(&device).unwrap();
            let _a = host.subscribe(device.create_stream().unwrap()).unwrap();
            let b = host.subscribe(device.create_stream().unwrap()).unwrap();
            slow(&session, &b, 30);
            panic!("c12: a panic with two subscriptions");
        }));
        assert!(unwound.is_err());
    }
    assert_eq!(session.sim.live_objects(), 0);
    assert_no_findings(&session.finish());
}

/// `Send + Sync`: one thread shared by several threads, each subscribing its own stream,
/// and a subscription moved to another thread to be unsubscribed there.
#[test]
fn c12_threads_subscribe_to_one_host_func_thread() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let host = HostFuncThread::spawn(&device).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10 {
                        let stream = host.subscribe(device.create_stream().unwrap()).unwrap();
                        stream.synchronize().unwrap();
                        stream.unsubscribe().unwrap().destroy().unwrap();
                    }
                });
            }
            let moved = host.subscribe(device.create_stream().unwrap()).unwrap();
            let done = Arc::clone(&done);
            s.spawn(move || {
                moved.unsubscribe().unwrap().destroy().unwrap();
                done.store(true, Ordering::Release);
            });
        });
        assert!(done.load(Ordering::Acquire));
        host.stop().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0);
    assert_no_findings(&session.finish());
}
