//! E10: an event recorded and never waited on (a timing or host-synchronisation event) is
//! reset once its record is complete and recorded again, so it is created once, not every
//! frame; and a wait after such a re-record waits for the new record.

use crate::support;

use ascend_typestate::Error;
use support::sim::Session;

/// A per-frame timing pair, created once: 100 frames, two `aclrtCreateEvent*` calls.
#[test]
fn e10_a_timing_event_is_created_once_and_recorded_every_frame() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let stream = device.create_stream().unwrap();
        session.sim.reset_call_counts();
        let mut start = device.create_event().unwrap().record(&stream).unwrap();
        let mut end = device.create_event().unwrap().record(&stream).unwrap();
        for _frame in 0..100 {
            end.synchronize().unwrap();
            start = start
                .reset_completed(&stream)
                .unwrap()
                .record(&stream)
                .unwrap();
            session.sim.sleep_kernel(stream.as_raw(), 50);
            end = end
                .reset_completed(&stream)
                .unwrap()
                .record(&stream)
                .unwrap();
        }
        end.synchronize().unwrap();
        let ms = end.elapsed_since(&start).unwrap();
        assert!(ms >= 0.0, "{ms}");
        let created = session.sim.call_count("aclrtCreateEvent")
            + session.sim.call_count("aclrtCreateEventWithFlag");
        assert_eq!(created, 2, "the events are created once");
        assert_eq!(session.sim.call_count("aclrtDestroyEvent"), 0);
        start.destroy().unwrap();
        end.destroy().unwrap();
        stream.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// The crate docs' long-lived worker: synchronise the frame's event, reset it, record it
/// again. After `synchronize` has proven the record complete, `reset_completed` asks
/// nothing: 3 runtime calls per frame, as the C program makes (E10). Without the proof it
/// queries (1 more), and a pending record is refused (below).
#[test]
fn e10_reset_completed_after_synchronize_makes_no_query() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let stream = device.create_stream().unwrap();
        let mut done = device.create_event().unwrap().record(&stream).unwrap();
        done.synchronize().unwrap();
        session.sim.reset_call_counts();
        for _frame in 0..50 {
            session.sim.sleep_kernel(stream.as_raw(), 20);
            done.synchronize().unwrap();
            done = done
                .reset_completed(&stream)
                .unwrap()
                .record(&stream)
                .unwrap();
        }
        let calls: Vec<u64> = [
            "aclrtSynchronizeEvent",
            "aclrtQueryEventStatus",
            "aclrtResetEvent",
            "aclrtRecordEvent",
        ]
        .iter()
        .map(|call| session.sim.call_count(call))
        .collect();
        assert_eq!(
            calls,
            [50, 0, 50, 50],
            "per frame: synchronize, reset, record"
        );
        // Not synchronised: the completion is asked for, once.
        session.sim.reset_call_counts();
        while !done.is_complete().unwrap() {
            std::thread::yield_now();
        }
        let queries = session.sim.call_count("aclrtQueryEventStatus");
        done = done
            .reset_completed(&stream)
            .unwrap()
            .record(&stream)
            .unwrap();
        assert_eq!(
            session.sim.call_count("aclrtQueryEventStatus"),
            queries,
            "a query that answered complete is proof too"
        );
        done.synchronize().unwrap();
        done.destroy().unwrap();
        stream.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A record still pending cannot be reset (it could set the flag again after the reset):
/// a typed error, the event given back; after `synchronize` it works.
#[test]
fn e10_reset_completed_refuses_a_pending_record() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 300_000);
        let event = ctx.create_event().unwrap().record(&stream).unwrap();
        session.sim.reset_call_counts();
        let (error, event) = event
            .try_reset_completed(&stream)
            .expect_err("the record is pending")
            .into_parts();
        assert!(matches!(error, Error::NotComplete { .. }), "{error:?}");
        assert_eq!(
            session.sim.call_count("aclrtResetEvent"),
            0,
            "refused before the runtime"
        );
        event.synchronize().unwrap();
        let event = event.reset_completed(&stream).unwrap();
        event.destroy().unwrap();
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// The point of the reset: after `reset_completed` + `record` on a busy stream, a wait on
/// another stream waits for that new record. Without the reset the first record's flag
/// would still be set and the wait would pass at once.
#[test]
fn e10_a_wait_after_a_re_record_waits_for_the_new_record() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let event = ctx.create_event().unwrap().record(&s1).unwrap();
        event.synchronize().unwrap();
        let event = event.reset_completed(&s2).unwrap();
        // The reset is done and known to be (no join is issued below, so only the event's
        // flag orders s3 after s2).
        s2.synchronize().unwrap();
        // The new record sits behind 300 ms of work on s2.
        session.sim.sleep_kernel(s2.as_raw(), 300_000);
        let event = event.record(&s2).unwrap();
        session.sim.reset_call_counts();
        let event = event.wait_and_reset(&s3).unwrap();
        // `wait_and_reset` issues one wait; a join (maybe with a kept event) another.
        assert_eq!(session.sim.call_count("aclrtStreamWaitEvent"), 1, "no join");
        assert!(
            !s3.is_complete().unwrap(),
            "s3 must wait for the re-record behind s2's kernel"
        );
        s3.synchronize().unwrap();
        assert!(
            s2.is_complete().unwrap(),
            "s3 passed its wait only after s2's record"
        );
        event.destroy().unwrap();
        for s in [s1, s2, s3] {
            s.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A refused `reset_completed` issues nothing: not even the join after a reset still
/// pending on another stream (only the completion query runs).
#[test]
fn e10_a_refused_reset_completed_issues_nothing() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (a, b, c) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let event = ctx.create_event().unwrap().record(&b).unwrap();
        session.sim.sleep_kernel(a.as_raw(), 300_000);
        // Reset pending on a (behind the kernel); recorded again on b, joined after it.
        let event = event.wait_and_reset(&a).unwrap().record(&b).unwrap();
        session.sim.reset_call_counts();
        let (error, event) = event
            .try_reset_completed(&c)
            .expect_err("the record is pending")
            .into_parts();
        assert!(matches!(error, Error::NotComplete { .. }), "{error:?}");
        for call in [
            "aclrtCreateEventWithFlag",
            "aclrtRecordEvent",
            "aclrtStreamWaitEvent",
            "aclrtResetEvent",
        ] {
            assert_eq!(
                session.sim.call_count(call),
                0,
                "{call} issued by a refusal"
            );
        }
        assert!(c.is_complete().unwrap(), "c was not queued behind a");
        event.synchronize().unwrap();
        let event = event.reset_completed(&c).unwrap();
        c.synchronize().unwrap();
        event.destroy().unwrap();
        for s in [a, b, c] {
            s.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}
