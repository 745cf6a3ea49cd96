//! The stream functions beyond the seeds, through the typed API on the simulator: stream
//! query (S5), failure mode (S6), streams with a configuration (S7), force destroy (S8),
//! version and device queries (P4, D8), operator timeouts (P5). Host functions (C10) are in
//! `tests/host_functions/ordering.rs`. Every test asserts zero checker findings and zero leaks.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ascend_typestate::{AclError, DeviceCapability, Error, MallocPolicy, MemoryKind, StreamConfig};
use support::sim::{Session, assert_no_findings, assert_only_discarded};

#[test]
fn stream_query_is_not_ready_while_a_kernel_runs_then_complete_s5() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        assert!(stream.is_complete().unwrap(), "an idle stream is complete");
        session.sim.sleep_kernel(stream.as_raw(), 300_000);
        assert!(
            !stream.is_complete().unwrap(),
            "a 300 ms kernel is still running"
        );
        stream.synchronize().unwrap();
        assert!(stream.is_complete().unwrap());
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn streams_with_a_configuration_s7() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let config = StreamConfig::new().priority(7).fast_launch().fast_sync();
        let stream = ctx.create_stream_with(config).unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 1_000);
        stream.synchronize().unwrap();
        stream.destroy().unwrap();
        let plain = ctx.create_stream_with(StreamConfig::new()).unwrap();
        plain.destroy().unwrap();
        match ctx.create_stream_with(StreamConfig::new().priority(8)) {
            Err(Error::InvalidArgument(why)) => assert!(why.contains("S7"), "{why}"),
            other => panic!("priority 8: {other:?}"),
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn force_destroy_drops_pending_tasks_without_waiting_s8() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        for _ in 0..20 {
            session.sim.sleep_kernel(stream.as_raw(), 100_000);
        }
        session.expect_findings();
        let started = Instant::now();
        stream.destroy_force().unwrap();
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(500),
            "2 s of queued kernels: took {took:?}"
        );
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    // Each discarded kernel is reported (S8); one may have been running, and finished.
    assert_only_discarded(&session.finish(), 19..=20);
}

/// A join event (E5) waited on by the stream that is force-destroyed: its record, on
/// another stream, may still be pending, so it is kept until the context ends (E9), and
/// nothing leaks.
#[test]
fn force_destroy_of_a_stream_that_waited_on_a_join_leaks_nothing_s8_e9() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let c = ctx.create_stream().unwrap();
        let event = ctx.create_event().unwrap().record(&a).unwrap();
        // The reset is pending on `b` (a long kernel ahead of it)...
        session.sim.sleep_kernel(b.as_raw(), 30_000);
        let event = event.wait_and_reset(&b).unwrap();
        // ...so recording on `c` orders `c` after `b` with a join event.
        let event = event.record(&c).unwrap();
        event.synchronize().unwrap();
        event.destroy().unwrap();
        c.destroy_force().unwrap();
        b.synchronize().unwrap();
        a.destroy().unwrap();
        b.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn version_soc_and_device_queries_p4_d8() {
    let session = Session::start();
    {
        let acl = session.acl();
        let soc = acl.soc_name().unwrap();
        assert!(soc.starts_with("Ascend"), "{soc}");
        let version = acl.runtime_version().unwrap();
        assert!(
            version.contains("sim"),
            "the simulator says it is one: {version}"
        );
        let (major, _, _) = acl.interface_version().unwrap();
        assert!(major >= 1);
        let device = acl.set_device(0).unwrap();
        assert!(device.capability(DeviceCapability::AiCoreCount).unwrap() > 0);
        assert!(device.capability(DeviceCapability::L2CacheBytes).unwrap() > 0);
        let ctx = device.create_context().unwrap();
        let before = ctx.memory_info(MemoryKind::Ddr).unwrap();
        assert!(
            before.total > 0 && before.free <= before.total,
            "{before:?}"
        );
        let buffer = ctx.alloc::<u8>(1 << 20, MallocPolicy::HugeFirst).unwrap();
        let after = ctx.memory_info(MemoryKind::Ddr).unwrap();
        assert!(
            after.free + (1 << 20) <= before.free,
            "{before:?} then {after:?}"
        );
        drop(buffer);
        // A failed call carries the runtime's explanation (P4), taken from this thread.
        let failed = acl.api().get_device_capability(99, 0).unwrap_err();
        let message = failed.message().expect("a message after a failure");
        assert!(!message.as_str().is_empty());
        assert_eq!(acl.recent_error_message(), None);
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn a_task_over_the_operator_timeout_fails_at_the_next_synchronize_p5() {
    let session = Session::start();
    {
        let acl = session.acl();
        let limit = acl
            .set_op_execute_timeout(Duration::from_millis(10))
            .unwrap();
        assert!(limit >= Duration::from_millis(10), "{limit:?}");
        assert_eq!(
            acl.op_execute_timeout().unwrap(),
            Duration::from_millis(limit.as_millis() as u64)
        );
        let device = acl.set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 200_000);
        match stream.synchronize() {
            Err(e) => assert_eq!(e.code(), Some(AclError::RtTaskTimeout), "{e}"),
            Ok(()) => panic!("a 200 ms kernel passed a {limit:?} limit"),
        }
        acl.set_op_execute_timeout(Duration::ZERO).unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 20_000);
        stream.synchronize().unwrap();
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// S6: a failed task on a stop-on-failure stream stops the context. Each stream's next
/// synchronisation reports the failure once, an event whose record was dropped reports it
/// once, tasks issued afterwards are refused (a typed error, the value given back), and
/// everything still tears down with nothing lost.
#[test]
fn stop_on_failure_stops_the_context_and_nothing_is_lost_s6() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let s1 = ctx
            .create_stream_with(StreamConfig::new().stop_on_failure())
            .unwrap();
        let s2 = ctx.create_stream().unwrap();
        session.sim.sleep_kernel(s2.as_raw(), 400_000);
        let event = ctx.create_event().unwrap().record(&s2).unwrap();
        session.sim.sleep_kernel(s1.as_raw(), 200_000);
        std::thread::sleep(Duration::from_millis(20));
        session.sim.inject_task_failure(s1.as_raw(), 507_899);
        session.sim.sleep_kernel(s1.as_raw(), 1_000);
        let code = |r: Result<(), Error>| r.err().and_then(|e| e.code());
        assert_eq!(code(s1.synchronize()), Some(AclError::Unknown(507_899)));
        assert_eq!(code(s2.synchronize()), Some(AclError::Unknown(507_899)));
        s1.synchronize().unwrap();
        s2.synchronize().unwrap();
        assert_eq!(code(event.synchronize()), Some(AclError::Unknown(507_899)));
        event.synchronize().unwrap();
        event.destroy().unwrap();
        // Issued after the stop: refused, and the event comes back unchanged.
        let fresh = ctx.create_event().unwrap();
        let fresh = match fresh.try_record(&s1) {
            Err(failed) => {
                assert_eq!(failed.error.code(), Some(AclError::RtStreamAbort));
                failed.value
            }
            Ok(_) => panic!("a record on a stopped context was accepted"),
        };
        fresh.destroy().unwrap();
        s1.destroy().unwrap();
        s2.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// S6 through `Drop` only: after a stop nothing is synchronised by hand; every handle's
/// fallback release still gets through (the failure is reported once per stream and
/// event), host functions the stop dropped are freed, and nothing leaks.
#[test]
fn dropping_everything_after_a_stop_releases_it_all_s6() {
    let session = Session::start();
    let owned = Arc::new(());
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let s1 = ctx
            .create_stream_with(StreamConfig::new().stop_on_failure())
            .unwrap();
        let s2 = ctx.create_stream().unwrap().with_host_functions();
        session.sim.sleep_kernel(s2.as_raw(), 300_000);
        let held = Arc::clone(&owned);
        s2.launch(move || drop(held)).unwrap();
        let _event = ctx.create_event().unwrap().record(&s2).unwrap();
        session.sim.inject_task_failure(s1.as_raw(), 507_899);
        session.sim.sleep_kernel(s1.as_raw(), 1_000);
        // Everything is dropped here, in reverse order.
    }
    assert_eq!(
        Arc::strong_count(&owned),
        1,
        "the dropped host function was not freed"
    );
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}
