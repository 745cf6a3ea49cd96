//! The typestate core on the simulator: the seed 000 samples in typed form (E2, E3, S2, D4),
//! multi-stream waits (E3, E5), the panic/early-error paths of a wait scope (E4), failed
//! transitions that give the value back, and work moved to a second thread (D6).
//! Every test asserts zero checker findings and zero leaks.

use crate::support;

use ascend_typestate::{AclError, Error, Event, Reset, WaitError, timeout};
use support::sim::{Session, assert_no_findings};

#[test]
fn seed000_event_sync_e2() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let event = ctx.create_event().unwrap();
        let stream = ctx.create_stream().unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 2_000);
        let event = event.record(&stream).unwrap();
        event.synchronize().unwrap();
        assert!(event.is_complete().unwrap());
        event.destroy().unwrap();
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn seed000_stream_to_stream_wait_e3_e4() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let event = ctx.create_event().unwrap();
        let s1 = ctx.create_stream().unwrap();
        let s2 = ctx.create_stream().unwrap();
        session.sim.sleep_kernel(s1.as_raw(), 5_000);
        let event = event.record(&s1).unwrap();
        let event = event
            .wait(&s2, |waited| {
                session.sim.sleep_kernel(s2.as_raw(), 1_000);
                waited.reset()
            })
            .unwrap();
        // Reset → Recorded again, as in a loop.
        let event = event.record(&s1).unwrap();
        let event = event.wait(&s2, |waited| waited.reset()).unwrap();
        s2.synchronize().unwrap();
        event.destroy().unwrap();
        s1.destroy().unwrap();
        s2.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn seed000_device_sync_d4_and_reverse_order_d3() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let streams: Vec<_> = (0..4).map(|_| ctx.create_stream().unwrap()).collect();
        for s in &streams {
            session.sim.sleep_kernel(s.as_raw(), 1_000);
        }
        ctx.synchronize_device().unwrap();
        for s in streams {
            s.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn several_streams_wait_one_event_reset_never_overtakes_e3_e5() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let producer = ctx.create_stream().unwrap();
        let consumers: Vec<_> = (0..3).map(|_| ctx.create_stream().unwrap()).collect();
        let mut event: Event<'_, Reset> = ctx.create_event().unwrap().into();
        for round in 0..20 {
            session.sim.sleep_kernel(producer.as_raw(), 200);
            let recorded = event.record(&producer).unwrap();
            // The last consumer is busy, so its wait runs late: a reset issued naively on the
            // first consumer would overtake it (E5).
            session.sim.sleep_kernel(consumers[2].as_raw(), 2_000);
            event = recorded
                .wait(&consumers[0], |mut waited| {
                    waited.also_wait(&consumers[1])?;
                    waited.also_wait(&consumers[2])?;
                    waited.reset()
                })
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
        for c in &consumers {
            c.synchronize_with(timeout!(10_000)).unwrap();
        }
        event.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn early_error_in_wait_scope_still_resets_e4() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let event = ctx.create_event().unwrap().record(&s1).unwrap();
        let outcome = event.try_wait(&s2, |waited| {
            let user_step: ascend_typestate::Result<()> =
                Err(Error::InvalidArgument("the user's own error"));
            user_step?;
            waited.reset()
        });
        let Err(WaitError::Reset(failed)) = outcome else {
            panic!("expected the scope's error")
        };
        assert!(matches!(failed.error, Error::InvalidArgument(_)));
        // The event came back Reset: it can be recorded again.
        let event = failed.value.record(&s1).unwrap();
        event.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn panic_in_wait_scope_still_resets_e4() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let event = ctx.create_event().unwrap().record(&s1).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = event.wait(&s2, |_waited| -> ascend_typestate::Result<_> {
                panic!("a bug between wait and reset")
            });
        }));
        assert!(caught.is_err());
        s2.synchronize().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn failed_record_gives_the_event_back() {
    let session = Session::start();
    {
        let device0 = session.acl().set_device(0).unwrap();
        let device1 = session.acl().set_device(1).unwrap();
        let ctx0 = device0.create_context().unwrap();
        let ctx1 = device1.create_context().unwrap();
        let stream1 = ctx1.create_stream().unwrap();
        let event = ctx0.create_event().unwrap();
        let failed = match event.try_record(&stream1) {
            Ok(_) => panic!("an event of device 0 recorded on a stream of device 1"),
            Err(failed) => failed,
        };
        assert!(matches!(
            failed.error,
            Error::DeviceMismatch {
                expected: 0,
                found: 1,
                ..
            }
        ));
        let stream0 = ctx0.create_stream().unwrap();
        let event = failed.value.try_record(&stream0).unwrap();
        event.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn stream_moved_to_another_thread_binds_its_context_d6() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx_a = device.create_context().unwrap();
        let ctx_b = device.create_context().unwrap(); // now current on this thread
        let stream_a = ctx_a.create_stream().unwrap(); // binds ctx_a again
        let stream_b = ctx_b.create_stream().unwrap(); // and ctx_b
        let event = ctx_a.create_event().unwrap();
        let stream_a = std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    // A fresh thread has no current context: every call binds (D6).
                    let event = event.record(&stream_a).unwrap();
                    event.synchronize().unwrap();
                    event.destroy().unwrap();
                    stream_a.synchronize().unwrap();
                    stream_a
                })
                .join()
                .unwrap()
        });
        stream_a.destroy().unwrap();
        stream_b.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn event_with_a_stream_of_another_context_is_a_typed_error() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx_a = device.create_context().unwrap();
        let ctx_b = device.create_context().unwrap();
        let stream_b = ctx_b.create_stream().unwrap();
        let Err(failed) = ctx_a.create_event().unwrap().try_record(&stream_b) else {
            panic!("recorded an event of one context on a stream of another")
        };
        assert!(matches!(failed.error, Error::ContextMismatch { .. }));
    }
    assert_no_findings(&session.finish());
}

#[test]
fn second_live_acl_is_a_typed_error_p2() {
    let session = Session::start();
    let second = ascend_typestate::Acl::init();
    assert!(matches!(second, Err(Error::AlreadyInitialized)));
    assert_no_findings(&session.finish());
}

#[test]
fn zero_ms_is_not_a_timeout_s3() {
    assert_eq!(ascend_typestate::Timeout::from_millis(0), None);
    assert_eq!(timeout!(forever).as_raw(), -1);
    let _ = AclError::RtStreamSyncTimeout;
}

#[test]
fn op_wait_timeout_surfaces_at_the_next_stream_sync_p3() {
    let session = Session::start();
    {
        // SAFETY: the test arms a device-side timeout to make asynchronous tasks fail (an
        // environment fault): the data these waits order is not relied on, and every stream is
        // synchronised before the handles that it used are released.
        unsafe { session.acl().api().set_op_wait_timeout(1) }.unwrap();
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        // The recording stream is busy for longer than the op-wait timeout (1 s).
        session.sim.sleep_kernel(s1.as_raw(), 1_500_000);
        let event = ctx.create_event().unwrap().record(&s1).unwrap();
        let event = event.wait(&s2, |waited| waited.reset()).unwrap();
        let err = s2.synchronize().unwrap_err();
        assert_eq!(err.code(), Some(AclError::RtWaitTimeout), "{err}");
        // Reported once; the stream is usable again.
        s2.synchronize().unwrap();
        s1.synchronize().unwrap();
        event.destroy().unwrap();
        // SAFETY: disarms it again (never time out).
        unsafe { session.acl().api().set_op_wait_timeout(0) }.unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn synchronize_with_a_timeout_is_a_typed_error_s3_e6() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 300_000);
        let event = ctx.create_event().unwrap().record(&stream).unwrap();
        let err = stream.synchronize_with(timeout!(20)).unwrap_err();
        assert_eq!(err.code(), Some(AclError::RtStreamSyncTimeout), "{err}");
        let err = event.synchronize_with(timeout!(20)).unwrap_err();
        assert_eq!(err.code(), Some(AclError::RtEventSyncTimeout), "{err}");
        assert!(!event.is_complete().unwrap());
        event.synchronize_with(timeout!(forever)).unwrap();
        assert!(event.is_complete().unwrap());
        event.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn elapsed_time_between_two_recorded_events_e8() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let start = ctx.create_event().unwrap().record(&stream).unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 20_000);
        let end = ctx.create_event().unwrap().record(&stream).unwrap();
        end.synchronize().unwrap();
        let ms = end.elapsed_since(&start).unwrap();
        assert!((15.0..2_000.0).contains(&ms), "{ms} ms");
        end.destroy().unwrap();
        start.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn an_invalid_device_id_is_a_typed_runtime_error_d1() {
    let session = Session::start();
    let count = session.acl().device_count().unwrap();
    let err = session.acl().set_device(count as i32).unwrap_err();
    assert_eq!(err.code(), Some(AclError::RtInvalidDeviceId), "{err}");
    assert_no_findings(&session.finish());
}

#[test]
fn destroying_a_stream_with_pending_work_synchronises_first_s4() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 50_000);
        let event = ctx.create_event().unwrap().record(&stream).unwrap();
        event.destroy().unwrap(); // E9: waits for the record first
        let busy = ctx.create_stream().unwrap();
        session.sim.sleep_kernel(busy.as_raw(), 50_000);
        busy.destroy().unwrap(); // S4: no finding, the kernel is waited for
        drop(stream); // the Drop fallback does the same
    }
    assert_no_findings(&session.finish());
}

#[test]
fn typed_events_carry_acl_event_sync_so_wait_and_reset_work_e7() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        // An event without ACL_EVENT_SYNC would make the wait fail with 207000 (E7).
        let event = ctx.create_event().unwrap().record(&s1).unwrap();
        let event = event.wait(&s2, |w| w.reset()).unwrap();
        s2.synchronize().unwrap();
        event.destroy().unwrap();
        // The raw layer shows what the typed API avoids.
        let api = session.acl().api();
        // SAFETY: a raw event of the current context, destroyed below; no typed handle uses it.
        let plain = unsafe { api.create_event_with_flag(0x8) }.unwrap(); // ACL_EVENT_TIME_LINE only
        // SAFETY: both handles are live and the stream's context is current (bound above).
        let err = unsafe { api.stream_wait_event(s2.as_raw(), plain) }.unwrap_err();
        assert_eq!(err.code(), Some(AclError::RtFeatureNotSupport), "{err}");
        // SAFETY: no task refers to `plain`.
        unsafe { api.destroy_event(plain) }.unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn elapsed_time_before_completion_is_a_typed_runtime_error_e8() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let start = ctx.create_event().unwrap().record(&stream).unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 200_000);
        let end = ctx.create_event().unwrap().record(&stream).unwrap();
        let err = end.elapsed_since(&start).unwrap_err();
        assert_eq!(err.code(), Some(AclError::RtInternalError), "{err}");
        end.synchronize().unwrap();
        assert!(end.elapsed_since(&start).unwrap() >= 150.0);
        end.destroy().unwrap();
        start.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn abandoning_the_waited_value_still_resets_e4_e9() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        session.sim.sleep_kernel(s1.as_raw(), 100_000); // keeps the record pending
        let event = ctx.create_event().unwrap().record(&s1).unwrap();
        // `Waited` has no `Drop`: forgetting it is the same as this. The scope's state lives in
        // `wait`, which issues the reset itself.
        let outcome = event.try_wait(&s2, |waited| {
            let _abandoned = waited;
            Err(Error::InvalidArgument("abandoned the scope"))
        });
        let Err(WaitError::Reset(failed)) = outcome else {
            panic!("expected the scope's error")
        };
        // No E4 (the reset was issued by `wait`) and no E9 (destroy waits for the reset).
        failed.value.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn a_device_whose_contexts_are_destroyed_resets_d3() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        for _ in 0..3 {
            device.create_context().unwrap().destroy().unwrap();
        }
        // Dropped without `destroy`: the fallback destroys it, and the count follows.
        drop(device.create_context().unwrap());
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// One failed reset of a wait scope is issued again (E4); a reset that can never be issued
/// leaves the event kept, still counted in its context, never destroyed after its wait
/// unreset (E4) nor recorded again, and every error is returned or reported. In a child
/// process: the kept event keeps its context and runtime.
#[test]
fn a_reset_that_cannot_be_issued_keeps_the_event_and_loses_no_error_e4_e9() {
    if support::child::ran_in_child(
        "a_reset_that_cannot_be_issued_keeps_the_event_and_loses_no_error_e4_e9",
        "ASCEND_TYPESTATE_UNRESET_CHILD",
        "kept as expected",
    ) {
        return;
    }
    let session = Session::start();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let live_before = session.sim.live_objects();
    let reports = support::DropErrors::capture();
    // One failed reset is tried again (E4): the event comes back Reset, with the body's
    // error; the reset's is reported.
    {
        let event = ctx.create_event().unwrap().record(&s1).unwrap();
        session.sim.inject_fault("aclrtResetEvent", 507000, 1);
        let outcome = event.try_wait(&s2, |_waited| {
            Err(Error::InvalidArgument("the body's error"))
        });
        let failed = match outcome {
            Err(WaitError::Reset(failed)) => failed,
            other => panic!("expected the event back, reset: {other:?}"),
        };
        let (error, event) = failed.into_parts();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        let reported = reports.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert!(reported[0].contains("failed once"), "{reported:?}");
        event.destroy().unwrap();
    }
    assert!(
        session.sim.findings().is_empty(),
        "{:#?}",
        session.sim.findings()
    );
    // The body fails before resetting, and so does every reset `wait` tries: twice, then
    // four times alone after the streams are synchronised (injected).
    session.sim.inject_fault("aclrtResetEvent", 507000, 6);
    let error = {
        let event = ctx.create_event().unwrap().record(&s1).unwrap();
        let outcome = event.try_wait(&s2, |_waited| {
            Err(Error::InvalidArgument("the body's error"))
        });
        session.sim.clear_faults();
        match outcome {
            Err(WaitError::Unreset(error)) => error,
            Err(other) => panic!("expected the event to be kept unreset: {other}"),
            Ok(_) => panic!("expected the event to be kept unreset"),
        }
    };
    // The body's error is returned, every reset's reported: nothing lost.
    assert!(
        matches!(error, Error::InvalidArgument("the body's error")),
        "{error}"
    );
    let reported = reports.take();
    assert_eq!(reported.len(), 6, "{reported:?}");
    assert!(
        reported.iter().all(|r| r.contains("aclrtResetEvent")),
        "{reported:?}"
    );
    // The event is kept, not destroyed unreset (no E4 finding), and its context refuses to
    // be released over it (D3).
    assert_eq!(session.sim.live_objects(), live_before + 1);
    assert!(
        session.sim.findings().is_empty(),
        "{:#?}",
        session.sim.findings()
    );
    s1.destroy().unwrap();
    s2.destroy().unwrap();
    let failed = ctx.try_destroy().unwrap_err();
    assert!(
        matches!(failed.error, Error::LiveChildren { count: 1 }),
        "{}",
        failed.error
    );
    std::mem::forget(failed.value);
    assert!(
        session.sim.findings().is_empty(),
        "{:#?}",
        session.sim.findings()
    );
    println!("kept as expected");
    std::process::exit(0);
}

#[test]
fn a_join_whose_wait_fails_is_kept_until_its_record_is_done_e9() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (producer, consumer) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let event = ctx.create_event().unwrap().record(&producer).unwrap();
        // The consumer resets, and stays busy: the reset is pending.
        let event = event.wait(&consumer, |waited| waited.reset()).unwrap();
        session.sim.sleep_kernel(consumer.as_raw(), 50_000);
        // Re-recording on the producer joins it after that reset: a join event recorded on
        // the consumer (pending behind the kernel) and waited on by the producer, whose
        // wait fails here (injected).
        session.sim.inject_fault("aclrtStreamWaitEvent", 507000, 1);
        let Err(failed) = event.try_record(&producer) else {
            panic!("the join's wait was meant to fail")
        };
        let (error, event) = failed.into_parts();
        assert_eq!(error.code(), Some(AclError::RtInternalError), "{error}");
        // Synchronising the producer must not destroy the join: its record, on the busy
        // consumer, may still be pending (the simulator flags that as E9).
        producer.synchronize().unwrap();
        consumer.synchronize().unwrap();
        // The event is still usable.
        let event = event
            .record(&producer)
            .unwrap()
            .wait(&consumer, |w| w.reset())
            .unwrap();
        consumer.synchronize().unwrap();
        event.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn wait_and_reset_is_the_wait_scope_without_a_body_e1_e3_e4() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (producer, consumer) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut event: Event<'_, Reset> = ctx.create_event().unwrap().into();
        for round in 0..50 {
            // A slow producer, so that the waits and the joins really wait.
            session.sim.sleep_kernel(producer.as_raw(), 200);
            let recorded = event
                .record(&producer)
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
            event = recorded
                .wait_and_reset(&consumer)
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
            if round % 10 == 9 {
                consumer.synchronize().unwrap();
            }
        }
        consumer.synchronize().unwrap();
        event.destroy().unwrap();
    }
    // No E4 (every wait reset), no E5/E9 (re-records joined after the pending resets).
    assert_no_findings(&session.finish());
}

#[test]
fn wait_and_reset_errors_give_back_or_keep_the_event_e4_e9() {
    if support::child::ran_in_child(
        "wait_and_reset_errors_give_back_or_keep_the_event_e4_e9",
        "ASCEND_TYPESTATE_WAIT_AND_RESET_CHILD",
        "kept as expected",
    ) {
        return;
    }
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let other = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let foreign = other.create_stream().unwrap();
        let live_before = session.sim.live_objects();
        let reports = support::DropErrors::capture();
        {
            let event = ctx.create_event().unwrap().try_record(&s1).unwrap();
            // The wait cannot be issued: the event comes back, still Recorded.
            let Err(WaitError::NotWaited(failed)) = event.try_wait_and_reset(&foreign) else {
                panic!("waited on a stream of another context")
            };
            let (error, event) = failed.into_parts();
            assert!(matches!(error, Error::ContextMismatch { .. }), "{error}");
            // The reset fails once (injected): it is issued again, and the event comes back
            // Reset with the error.
            session.sim.inject_fault("aclrtResetEvent", 507000, 1);
            let event = match event.try_wait_and_reset(&s2) {
                Err(WaitError::Reset(failed)) => {
                    let (error, event) = failed.into_parts();
                    assert_eq!(error.code(), Some(AclError::RtInternalError), "{error}");
                    event
                }
                Err(other) => panic!("expected the event back: {other}"),
                Ok(_) => panic!("expected the reset's error"),
            };
            assert!(
                session.sim.findings().is_empty(),
                "{:#?}",
                session.sim.findings()
            );
            let event = event.record(&s1).unwrap();
            // The reset cannot be issued: twice, then four times alone after the stream is
            // synchronised (injected): the event is kept, never destroyed unreset (E4), the
            // first error returned, the others reported.
            session.sim.inject_fault("aclrtResetEvent", 507000, 6);
            match event.try_wait_and_reset(&s2) {
                Err(WaitError::Unreset(error)) => {
                    assert_eq!(error.code(), Some(AclError::RtInternalError), "{error}")
                }
                Err(other) => panic!("expected the event to be kept: {other}"),
                Ok(_) => panic!("expected the event to be kept"),
            }
        }
        let reported = reports.take();
        assert_eq!(reported.len(), 5, "{reported:?}");
        assert!(reported[0].contains("failed twice"), "{reported:?}");
        assert!(reported[4].contains("could not be issued"), "{reported:?}");
        // The re-record on s1 was joined after the reset on s2: s1's next synchronisation
        // shows that join done (E9), kept for reuse; the event is kept too.
        s1.synchronize().unwrap();
        assert_eq!(session.sim.live_objects(), live_before + 2);
        s1.destroy().unwrap();
        s2.destroy().unwrap();
        foreign.destroy().unwrap();
        other.destroy().unwrap();
        let failed = ctx.try_destroy().unwrap_err();
        assert!(
            matches!(failed.error, Error::LiveChildren { count: 1 }),
            "{}",
            failed.error
        );
        std::mem::forget(failed.value);
    }
    // No finding: no event was destroyed unreset.
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    println!("kept as expected");
    std::process::exit(0);
}
