//! Host callbacks on the simulator (C1-C9): the seed 001 flow in typed form, ordering with
//! the stream's tasks, blocking vs non-blocking, panics, unsubscribing with tasks pending,
//! device mismatch (C3), and 32 report threads serving several streams each.

use crate::support;

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ascend_typestate::Error;
use ascend_typestate::{CallbackMode, ReportThread};
use support::sim::{Session, assert_no_findings};

/// A kernel body that adds one to the `AtomicUsize` its user data points at.
unsafe extern "C" fn bump(user_data: *mut c_void, _buffers: *const *mut c_void, _n: usize) {
    // SAFETY: the tests pass a pointer to an `AtomicUsize` they keep alive until the stream
    // is synchronised.
    let counter = unsafe { &*user_data.cast::<AtomicUsize>() };
    counter.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn seed001_callback_flow_c1() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        // (1) the report thread, (2) subscribe, (3) tasks, (4) callbacks, (5) unsubscribe.
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        for i in 0..10 {
            session.sim.sleep_kernel(stream.as_raw(), 200);
            let ran = Arc::clone(&ran);
            let mode = if i % 2 == 0 {
                CallbackMode::Blocking
            } else {
                CallbackMode::NonBlocking
            };
            stream
                .launch(mode, move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
        }
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(
            ran.load(Ordering::SeqCst),
            10,
            "every callback ran exactly once"
        );
        stream.destroy().unwrap();
        report.stop().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn a_callback_sees_the_results_of_the_tasks_issued_before_it_c1() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let kernels = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(AtomicUsize::new(usize::MAX));
        session.sim.body_kernel(
            stream.as_raw(),
            3_000,
            bump,
            Arc::as_ptr(&kernels).cast_mut().cast(),
        );
        let (k, s) = (Arc::clone(&kernels), Arc::clone(&seen));
        stream
            .launch(CallbackMode::NonBlocking, move || {
                s.store(k.load(Ordering::SeqCst), Ordering::SeqCst)
            })
            .unwrap();
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(
            seen.load(Ordering::SeqCst),
            1,
            "the callback ran after the kernel"
        );
        drop(stream);
        report.stop().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn a_blocking_callback_holds_later_tasks_c5() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        for (mode, expect_held) in [
            (CallbackMode::Blocking, true),
            (CallbackMode::NonBlocking, false),
        ] {
            let callback_done = Arc::new(AtomicUsize::new(0));
            let seen_by_kernel = Arc::new(AtomicUsize::new(usize::MAX));
            let done = Arc::clone(&callback_done);
            stream
                .launch(mode, move || {
                    std::thread::sleep(Duration::from_millis(200));
                    done.store(1, Ordering::SeqCst);
                })
                .unwrap();
            // A kernel after the callback copies the callback's flag into `seen_by_kernel`.
            struct Probe {
                from: Arc<AtomicUsize>,
                to: Arc<AtomicUsize>,
            }
            unsafe extern "C" fn probe(user_data: *mut c_void, _b: *const *mut c_void, _n: usize) {
                // SAFETY: a `Probe` kept alive until the stream is synchronised below.
                let p = unsafe { &*user_data.cast::<Probe>() };
                p.to.store(p.from.load(Ordering::SeqCst), Ordering::SeqCst);
            }
            let p = Probe {
                from: Arc::clone(&callback_done),
                to: Arc::clone(&seen_by_kernel),
            };
            session.sim.body_kernel(
                stream.as_raw(),
                0,
                probe,
                (&p as *const Probe).cast_mut().cast(),
            );
            stream.synchronize().unwrap();
            let held = seen_by_kernel.load(Ordering::SeqCst) == 1;
            assert_eq!(held, expect_held, "{mode:?}");
        }
        drop(stream.unsubscribe().unwrap());
        report.stop().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn a_panicking_callback_is_caught_and_reported() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        stream
            .launch(CallbackMode::Blocking, || panic!("boom in a callback"))
            .unwrap();
        let after = Arc::new(AtomicUsize::new(0));
        let a = Arc::clone(&after);
        stream
            .launch(CallbackMode::Blocking, move || {
                a.store(1, Ordering::SeqCst);
            })
            .unwrap();
        drop(stream.unsubscribe().unwrap());
        assert_eq!(
            after.load(Ordering::SeqCst),
            1,
            "the thread survived the panic"
        );
        match report.stop() {
            Err(Error::CallbackPanicked { count: 1, first }) => assert!(first.contains("boom")),
            other => panic!("expected the panic to be reported, got {other:?}"),
        }
    }
    assert_no_findings(&session.finish());
}

#[test]
fn unsubscribing_while_tasks_are_pending_loses_no_callback_c1_c9() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        session.sim.sleep_kernel(stream.as_raw(), 20_000);
        for _ in 0..50 {
            let ran = Arc::clone(&ran);
            stream
                .launch(CallbackMode::NonBlocking, move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
        }
        assert!(stream.pending_callbacks() > 0, "the kernel holds them");
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 50);
        stream.destroy().unwrap();
        report.stop().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn a_stream_of_another_device_is_rejected_c3() {
    let session = Session::start();
    {
        let device0 = session.acl().set_device(0).unwrap();
        let device1 = session.acl().set_device(1).unwrap();
        let ctx0 = device0.create_context().unwrap();
        let ctx1 = device1.create_context().unwrap();
        let report = ReportThread::spawn(&ctx0).unwrap();
        let stream1 = ctx1.create_stream().unwrap();
        let Err(failed) = report.try_subscribe(stream1) else {
            panic!("subscribed across devices")
        };
        assert!(matches!(
            failed.error,
            Error::DeviceMismatch {
                expected: 0,
                found: 1,
                ..
            }
        ));
        failed.value.try_destroy().unwrap();
        report.stop().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn thirty_two_report_threads_serving_several_streams_each_c4() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let reports: Vec<_> = (0..32)
            .map(|_| ReportThread::spawn(&ctx).unwrap())
            .collect();
        let ran = Arc::new(AtomicUsize::new(0));
        let mut streams = Vec::new();
        for report in &reports {
            for _ in 0..3 {
                streams.push(report.subscribe(ctx.create_stream().unwrap()).unwrap());
            }
        }
        for round in 0..10 {
            for stream in &streams {
                let ran = Arc::clone(&ran);
                let mode = if round % 3 == 0 {
                    CallbackMode::Blocking
                } else {
                    CallbackMode::NonBlocking
                };
                stream
                    .launch(mode, move || {
                        ran.fetch_add(1, Ordering::Relaxed);
                    })
                    .unwrap();
            }
        }
        for stream in streams {
            stream.unsubscribe().unwrap().destroy().unwrap();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 32 * 3 * 10);
        for report in reports {
            report.stop().unwrap();
        }
    }
    assert_no_findings(&session.finish());
}

unsafe extern "C" {
    fn pthread_self() -> u64;
}

#[test]
fn the_subscribed_thread_id_is_the_report_threads_pthread_self_c7() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let s = Arc::clone(&seen);
        stream
            .launch(CallbackMode::Blocking, move || {
                // SAFETY: pthread_self has no preconditions.
                s.store(unsafe { pthread_self() } as usize, Ordering::SeqCst);
            })
            .unwrap();
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(seen.load(Ordering::SeqCst) as u64, report.thread_id());
        stream.destroy().unwrap();
        report.stop().unwrap();
    }
    assert_no_findings(&session.finish());
}
