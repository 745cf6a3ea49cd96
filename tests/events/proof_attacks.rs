//! E10: the "record proven complete" bit a *Recorded* event keeps in its stream pointer,
//! attacked from safe code: a synchronisation that fails or times out must not prove, the
//! proof moves with the event, the bit never reaches the reset stream used for joins (E5)
//! and for the release (E9), and a record a stopped context dropped (S6) is never taken
//! for complete. Call counts and injected faults are process-wide: those tests run in a
//! child process (`support::isolated`).

use crate::support;

use std::time::Duration;

use ascend_typestate::{Error, Event, Recorded, StreamConfig, Timeout};
use support::isolated::isolated;
use support::sim::Session;

const FAULT: i32 = 507_000;

/// A failed `aclrtSynchronizeEvent` (injected) proves nothing: `reset_completed` asks the
/// runtime, and a record still pending is refused.
#[test]
fn failed_synchronize_does_not_prove() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.default_device(0);
            let stream = device.create_stream().unwrap();
            session.sim.sleep_kernel(stream.as_raw(), 300_000);
            let event = device.create_event().unwrap().record(&stream).unwrap();
            session.sim.inject_fault("aclrtSynchronizeEvent", FAULT, 1);
            assert!(event.synchronize().is_err(), "the injected fault");
            session.sim.reset_call_counts();
            let (error, event) = event
                .try_reset_completed(&stream)
                .expect_err("the record is still pending")
                .into_parts();
            assert!(matches!(error, Error::NotComplete { .. }), "{error:?}");
            assert_eq!(session.sim.call_count("aclrtQueryEventStatus"), 1);
            assert_eq!(session.sim.call_count("aclrtResetEvent"), 0);
            event.synchronize().unwrap();
            let event = event.reset_completed(&stream).unwrap();
            event.destroy().unwrap();
            stream.destroy().unwrap();
            device.reset().unwrap();
        }
        let findings = session.finish();
        assert!(findings.is_empty(), "{findings:#?}");
    });
}

/// `synchronize_with` that times out (E6) proves nothing; neither does an `is_complete`
/// that answered `false`.
#[test]
fn timed_out_synchronize_with_does_not_prove() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let stream = device.create_stream().unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 400_000);
        let event = device.create_event().unwrap().record(&stream).unwrap();
        let timeout = Timeout::from_millis(5).unwrap();
        match event.synchronize_with(timeout) {
            Err(_) => {}
            Ok(()) => panic!("a 400 ms record completed within 5 ms"),
        }
        assert!(!event.is_complete().unwrap());
        let (error, event) = event
            .try_reset_completed(&stream)
            .expect_err("the record is still pending")
            .into_parts();
        assert!(matches!(error, Error::NotComplete { .. }), "{error:?}");
        // Still refused on a second try: nothing was proven meanwhile.
        let (error, event) = event
            .try_reset_completed(&stream)
            .expect_err("the record is still pending")
            .into_parts();
        assert!(matches!(error, Error::NotComplete { .. }), "{error:?}");
        event
            .synchronize_with(Timeout::from_millis(5_000).unwrap())
            .unwrap();
        let event = event.reset_completed(&stream).unwrap();
        event.destroy().unwrap();
        stream.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A proof made on one thread travels with the event to another thread and back: reset
/// and re-recorded without a query; the re-recorded event is not proven.
#[test]
fn proof_moves_with_the_event_to_another_thread() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.default_device(0);
            let stream = device.create_stream().unwrap();
            let event = device.create_event().unwrap().record(&stream).unwrap();
            while !event.is_complete().unwrap() {
                std::thread::yield_now();
            }
            session.sim.reset_call_counts();
            let event = std::thread::scope(|scope| {
                scope
                    .spawn(move || {
                        assert!(event.is_complete().unwrap(), "proven, asked nothing");
                        event
                    })
                    .join()
                    .unwrap()
            });
            let event = event.reset_completed(&stream).unwrap();
            session.sim.sleep_kernel(stream.as_raw(), 200_000);
            let event = event.record(&stream).unwrap();
            assert_eq!(session.sim.call_count("aclrtQueryEventStatus"), 0);
            // The new record is pending: the old proof is gone.
            let (error, event) = event
                .try_reset_completed(&stream)
                .expect_err("the new record is pending")
                .into_parts();
            assert!(matches!(error, Error::NotComplete { .. }), "{error:?}");
            assert_eq!(session.sim.call_count("aclrtQueryEventStatus"), 1);
            event.synchronize().unwrap();
            event.reset_completed(&stream).unwrap().destroy().unwrap();
            stream.destroy().unwrap();
            device.reset().unwrap();
        }
        let findings = session.finish();
        assert!(findings.is_empty(), "{findings:#?}");
    });
}

/// The proof bit set on an event whose reset stream (from the previous cycle) is another
/// stream with a reset still pending: the join before `reset_completed` on a third stream,
/// and the one before the next record, must use the real stream pointer (E5), and dropping
/// a proven event must wait for that reset (E9).
#[test]
fn proven_event_joins_after_a_pending_reset_on_another_stream() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (a, b, c) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let mut event: Event<'_, Recorded> = ctx.create_event().unwrap().record(&a).unwrap();
        for round in 0..20 {
            // The reset lands on b behind a kernel: still pending when a records again.
            session.sim.sleep_kernel(b.as_raw(), 2_000);
            let reset = event.wait_and_reset(&b).unwrap();
            let recorded = reset.record(&a).unwrap();
            recorded.synchronize().unwrap();
            // Proven: reset on c (joined after b's reset, which may still be pending),
            // recorded on a, waited on by b and c with a scope.
            let reset = recorded.reset_completed(&c).unwrap();
            let recorded = reset.record(&a).unwrap();
            if round % 2 == 0 {
                assert!(recorded.is_complete().is_ok());
            } else {
                recorded.synchronize().unwrap();
            }
            let reset = recorded
                .wait(&b, |mut w| {
                    w.also_wait(&c)?;
                    w.reset()
                })
                .unwrap();
            event = reset.record(&a).unwrap();
        }
        event.synchronize().unwrap();
        // Dropped proven, with c's and b's resets maybe still pending.
        session.sim.sleep_kernel(b.as_raw(), 5_000);
        let reset = event.wait_and_reset(&b).unwrap();
        let proven = reset.record(&c).unwrap();
        proven.synchronize().unwrap();
        drop(proven);
        for s in [a, b, c] {
            s.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A timing loop where the end event is proven by `is_complete` spinning, the start by the
/// S1 order only (queried), with `elapsed_since` every frame and a proven event waited on by
/// another stream in between: every reading non-negative, no finding.
#[test]
fn elapsed_timing_loop_with_proofs_and_waits() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s, other) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut start = ctx.create_event().unwrap().record(&s).unwrap();
        let mut end = ctx.create_event().unwrap().record(&s).unwrap();
        for frame in 0..40 {
            while !end.is_complete().unwrap() {
                std::thread::yield_now();
            }
            let ms = end.elapsed_since(&start).unwrap();
            assert!(ms >= 0.0, "frame {frame}: {ms}");
            start = if frame % 3 == 0 {
                start.synchronize().unwrap();
                // Proven, then waited on (and reset) by another stream instead.
                start.wait_and_reset(&other).unwrap().record(&s).unwrap()
            } else {
                start.reset_completed(&s).unwrap().record(&s).unwrap()
            };
            session.sim.sleep_kernel(s.as_raw(), 100);
            end = end.reset_completed(&s).unwrap().record(&s).unwrap();
        }
        end.synchronize().unwrap();
        assert!(end.elapsed_since(&start).unwrap() >= 0.0);
        start.destroy().unwrap();
        end.destroy().unwrap();
        s.destroy().unwrap();
        other.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A wait scope entered with a proven event, body returning an error: the scope resets on
/// that path itself, and the event comes back usable.
#[test]
fn wait_scope_error_after_proof() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let event = ctx.create_event().unwrap().record(&a).unwrap();
        event.synchronize().unwrap();
        let failed = event.wait(&b, |_w| Err(Error::InvalidArgument("the body gives up")));
        assert!(failed.is_err());
        drop(failed);
        let event = ctx.create_event().unwrap().record(&a).unwrap();
        event.synchronize().unwrap();
        let event = event.wait(&b, |w| w.reset()).unwrap();
        let event = event.record(&a).unwrap();
        assert!(event.is_complete().is_ok());
        event.synchronize().unwrap();
        event.reset_completed(&b).unwrap().destroy().unwrap();
        a.destroy().unwrap();
        b.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// S6: a stop-on-failure stream stops its context at a failed task, and the record behind
/// it is dropped: it never completes. The first `synchronize` reports the drop; the
/// runtime answers a second one with success (the dropped record no longer counts). That
/// success must not be taken for proof that the record completed (it once was): in a
/// context that may stop, only the query answers, so `is_complete` stays `false` and
/// `reset_completed` keeps answering `NotComplete`, as its documentation says.
#[test]
fn dropped_record_is_never_proven_complete() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx
            .create_stream_with(StreamConfig::new().stop_on_failure())
            .unwrap();
        stream.is_complete().unwrap(); // binds the context for the raw kernel below
        session.sim.inject_task_failure(stream.as_raw(), 507_899);
        session.sim.sleep_kernel(stream.as_raw(), 1_000);
        let event = ctx.create_event().unwrap().record(&stream).unwrap();
        assert!(
            event.synchronize().is_err(),
            "the dropped record is reported"
        );
        let second = event.synchronize();
        let queried = !event.is_complete().unwrap();
        let (error, event) = event
            .try_reset_completed(&stream)
            .expect_err("a dropped record is never complete")
            .into_parts();
        assert!(
            queried,
            "is_complete answered true for a record that never ran (second synchronize: {second:?})"
        );
        assert!(matches!(error, Error::NotComplete { .. }), "{error:?}");
        drop(event);
        _ = stream.synchronize();
        drop(stream);
        drop(ctx);
        drop(device);
    }
    session.expect_findings();
    let _ = session.finish();
}

/// Many cycles of each way to prove (synchronize, synchronize_with, is_complete) and of
/// none (query inside reset_completed), on two streams alternating as reset streams, with
/// the live-object count back to zero at the end.
#[test]
fn every_proof_kind_in_a_loop_leaks_nothing() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut event = ctx.create_event().unwrap().record(&a).unwrap();
        for i in 0..80u32 {
            let on = if i % 2 == 0 { &a } else { &b };
            match i % 4 {
                0 => event.synchronize().unwrap(),
                1 => event
                    .synchronize_with(Timeout::from_duration(Duration::from_secs(5)).unwrap())
                    .unwrap(),
                2 => {
                    while !event.is_complete().unwrap() {
                        std::thread::yield_now();
                    }
                }
                _ => a.synchronize().and_then(|()| b.synchronize()).unwrap(),
            }
            let reset = event.reset_completed(on).unwrap();
            let next = if i % 3 == 0 { &b } else { &a };
            session.sim.sleep_kernel(next.as_raw(), 50);
            event = reset.record(next).unwrap();
        }
        event.synchronize().unwrap();
        event.destroy().unwrap();
        a.destroy().unwrap();
        b.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}
