//! The stream queries (S10) and `Stream::abort` (S11) of the typed API.

use crate::support;

use std::time::{Duration, Instant};

use ascend_typestate::sys::bindings::{ACL_STREAM_FAST_LAUNCH, ACL_STREAM_FAST_SYNC};
use ascend_typestate::{Event, Reset, StreamConfig};
use support::sim::{Session, assert_no_findings};

/// S10: a stream reports the flags and priority it was created with, and a runtime id of
/// its own; the plain stream has flags 0 and priority 0.
#[test]
fn streams_report_their_flags_priority_and_id_s10() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let plain = device.create_stream().unwrap();
        let configured = device
            .create_stream_with(StreamConfig::new().priority(3).fast_launch().fast_sync())
            .unwrap();
        assert_eq!((plain.flags().unwrap(), plain.priority().unwrap()), (0, 0));
        assert_eq!(
            configured.flags().unwrap(),
            ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC
        );
        assert_eq!(configured.priority().unwrap(), 3);
        assert_ne!(
            plain.runtime_id().unwrap(),
            configured.runtime_id().unwrap()
        );
        // A query from another thread binds the context there (D6).
        let id = plain.runtime_id().unwrap();
        let moved = std::thread::scope(|s| s.spawn(move || (plain.runtime_id(), plain)).join());
        let (again, plain) = moved.unwrap();
        assert_eq!(again.unwrap(), id);
        plain.destroy().unwrap();
        configured.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// S11: `abort` discards the queued work at once (a second of kernels does not run), and
/// the stream is empty and usable afterwards; nothing is left alive, nothing found.
#[test]
fn abort_discards_queued_work_and_the_stream_is_usable_again_s11() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let mut stream = ctx.create_stream().unwrap();
        for _ in 0..10 {
            session.sim.sleep_kernel(stream.as_raw(), 100_000);
        }
        let started = Instant::now();
        stream.abort().unwrap();
        stream.synchronize().unwrap();
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(500),
            "1 s of kernels: took {took:?}"
        );
        assert!(stream.is_complete().unwrap());
        // Usable again: an event cycle on it.
        let other = ctx.create_stream().unwrap();
        let event: Event<'_, Reset> = ctx
            .create_event()
            .unwrap()
            .record(&stream)
            .unwrap()
            .wait_and_reset(&other)
            .unwrap();
        other.synchronize().unwrap();
        event.destroy().unwrap();
        stream.destroy().unwrap();
        other.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

/// S11 with join events (E5, E9): a stream that waited on joins is aborted; those joins are
/// never reused (their resets may have been discarded) and are released with the context.
/// Re-recording events across both streams afterwards raises no finding.
#[test]
fn abort_of_a_stream_with_joins_waiting_leaks_nothing_s11_e9() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (mut a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        for _ in 0..3 {
            // Recorded on a, reset on b, re-recorded on a: a join waited on by a.
            let event = ctx
                .create_event()
                .unwrap()
                .record(&a)
                .unwrap()
                .wait_and_reset(&b)
                .unwrap();
            let event = event.record(&a).unwrap().wait_and_reset(&b).unwrap();
            b.synchronize().unwrap();
            event.destroy().unwrap();
        }
        session.sim.sleep_kernel(a.as_raw(), 50_000);
        a.abort().unwrap();
        for _ in 0..3 {
            let event = ctx
                .create_event()
                .unwrap()
                .record(&b)
                .unwrap()
                .wait_and_reset(&a)
                .unwrap();
            let event = event.record(&b).unwrap().wait_and_reset(&a).unwrap();
            a.synchronize().unwrap();
            event.destroy().unwrap();
        }
        a.destroy().unwrap();
        b.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}
