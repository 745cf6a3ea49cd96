//! The device's states (`Device<Set>`, `Device<DefaultContext>`, `Device<Reset>`) on the
//! simulator: the default context used as a context, recovery by setting a reset device
//! again, one holder of a default context at a time, and what each state's `Drop` releases
//! (D1, D3, D5, D6). The compile-time side is in `ui-tests/` (d1_reset_device_creates_nothing,
//! d3_device_reset_while_default_context_stream_lives, d3_default_context_released_while_event_lives,
//! d5_default_context_cannot_be_destroyed).

use crate::support;

use std::time::Duration;

use ascend_typestate::{Error, MallocPolicy};
use support::sim::Session;

/// The sample pattern: set the device, create streams in its default context, copy, wait
/// on an event, synchronise the device; then tear down in reverse order (D3).
#[test]
fn d1_the_default_context_works_as_a_context_d3() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let device = device.into_default_context().unwrap();
        let (s1, s2) = (
            device.create_stream().unwrap(),
            device.create_stream().unwrap(),
        );
        let host: Vec<u32> = (0..4096).collect();
        let mut on_device = device
            .alloc::<u32>(host.len(), MallocPolicy::HugeFirst)
            .unwrap();
        device
            .async_scope(|scope| {
                scope.copy(&s1, &mut on_device, &host[..])?;
                Ok(())
            })
            .unwrap();
        let event = device.create_event().unwrap().record(&s1).unwrap();
        let event = event.wait_and_reset(&s2).unwrap();
        device.synchronize_device().unwrap();
        let mut back = vec![0u32; host.len()];
        device.copy(&mut back[..], &on_device).unwrap();
        assert_eq!(back, host);
        event.destroy().unwrap();
        on_device.free().unwrap();
        s1.destroy().unwrap();
        s2.destroy().unwrap();
        let device = device.reset().unwrap();
        assert_eq!(device.id(), 0);
    }
    assert_eq!(session.sim.live_objects(), 0);
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// *Reset* → *Set* again (recovery after a fault), then explicit contexts as before.
#[test]
fn d1_a_reset_device_is_set_again_and_works() {
    let session = Session::start();
    {
        let device = session.acl().set_device(1).unwrap().reset().unwrap();
        let device = device.set().unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        stream.synchronize().unwrap();
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        // And into the default context after a round trip through Reset.
        let device = device.reset().unwrap().set().unwrap();
        let device = device.into_default_context().unwrap();
        let stream = device.create_stream().unwrap();
        stream.destroy().unwrap();
        let device = device.release_default_context().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Two values of one device cannot both hold its default context: they would be two
/// `Context`s of one runtime context, whose exclusive uses (S6) could then be combined.
#[test]
fn d5_the_default_context_is_held_by_one_value_at_a_time() {
    let session = Session::start();
    {
        let first = session.acl().set_device(0).unwrap();
        let second = session.acl().set_device(0).unwrap();
        let other_device = session.acl().set_device(1).unwrap();
        let first = first.into_default_context().unwrap();
        let (error, second) = second
            .try_into_default_context()
            .expect_err("one holder at a time")
            .into_parts();
        assert!(
            matches!(error, Error::DefaultContextInUse { device: 0 }),
            "{error:?}"
        );
        // Another device's default context is its own.
        let other_device = other_device.into_default_context().unwrap();
        // Released by the first, taken by the second.
        let first = first.release_default_context().unwrap();
        let second = second.into_default_context().unwrap();
        let stream = second.create_stream().unwrap();
        stream.destroy().unwrap();
        second.reset().unwrap();
        first.reset().unwrap();
        other_device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A device is `Send`: in *DefaultContext* it moves to another thread, where its calls bind
/// the default context (D6).
#[test]
fn d6_a_device_in_its_default_context_moves_to_another_thread() {
    let session = Session::start();
    {
        let device = session
            .acl()
            .set_device(0)
            .unwrap()
            .into_default_context()
            .unwrap();
        std::thread::scope(|s| {
            s.spawn(move || {
                let stream = device.create_stream().unwrap();
                let event = device.create_event().unwrap().record(&stream).unwrap();
                event.synchronize().unwrap();
                event.destroy().unwrap();
                stream.destroy().unwrap();
                device.reset().unwrap();
            });
        });
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Each state's `Drop` releases exactly what the value holds: *Set* and *DefaultContext*
/// one reset each, *Reset* nothing (a second reset would be a D5 finding, 507007).
#[test]
fn d1_d5_dropping_each_state_releases_exactly_what_it_holds() {
    let session = Session::start();
    session.sim.reset_call_counts();
    {
        let set = session.acl().set_device(0).unwrap();
        let default = session
            .acl()
            .set_device(0)
            .unwrap()
            .into_default_context()
            .unwrap();
        let reset = session.acl().set_device(1).unwrap().reset().unwrap();
        drop(set);
        drop(default);
        drop(reset);
    }
    // Three values set a device (`into_default_context` makes no runtime call).
    assert_eq!(session.sim.call_count("aclrtSetDevice"), 3);
    assert_eq!(session.sim.call_count("aclrtResetDevice"), 3);
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// `set_device` reads the default context at once; if it cannot, the set is undone and the
/// runtime's set count stays balanced.
#[test]
fn d1_a_set_whose_default_context_is_unknown_is_undone() {
    let session = Session::start();
    session.sim.reset_call_counts();
    session
        .sim
        .inject_fault("aclrtGetCurrentContext", 507000, 1);
    let error = session.acl().set_device(0).expect_err("injected");
    assert!(matches!(error, Error::Runtime { .. }), "{error:?}");
    assert_eq!(session.sim.call_count("aclrtSetDevice"), 1);
    assert_eq!(session.sim.call_count("aclrtResetDevice"), 1);
    let device = session
        .acl()
        .set_device(0)
        .unwrap()
        .into_default_context()
        .unwrap();
    device.reset().unwrap();
    assert_eq!(session.sim.live_objects(), 0);
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A reset that fails gives the device back still holding its default context: no other
/// value can take it meanwhile (S6 exclusivity), and after a successful reset one can.
#[test]
fn d5_a_failed_reset_keeps_the_default_context_held() {
    let session = Session::start();
    {
        let holder = session
            .acl()
            .set_device(0)
            .unwrap()
            .into_default_context()
            .unwrap();
        let other = session.acl().set_device(0).unwrap();
        session.sim.inject_fault("aclrtResetDevice", 507000, 1);
        let (error, holder) = holder.try_reset().expect_err("injected").into_parts();
        assert!(matches!(error, Error::Runtime { .. }), "{error:?}");
        let (error, other) = other
            .try_into_default_context()
            .expect_err("still held")
            .into_parts();
        assert!(
            matches!(error, Error::DefaultContextInUse { device: 0 }),
            "{error:?}"
        );
        holder.reset().unwrap();
        let other = other.into_default_context().unwrap();
        other.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A stream of the default context leaked with `mem::forget` keeps the device: `reset`
/// is refused with `LiveChildren` and never reaches the runtime (D3). In a child process:
/// the leak can never be cleaned up.
#[test]
fn d3_a_leaked_default_context_stream_keeps_the_device() {
    let (status, out, err) = support::child::in_child(
        "child_leaked_default_context_stream",
        CHILD_ENV,
        Duration::from_secs(60),
    );
    assert!(status.is_some_and(|s| s.success()), "{out}\n{err}");
    assert!(out.contains("1 passed"), "{out}");
}

const CHILD_ENV: &str = "ASCEND_TYPESTATE_DEVICE_STATES_CHILD";

#[test]
fn child_leaked_default_context_stream() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let session = Session::start();
    let device = session
        .acl()
        .set_device(0)
        .unwrap()
        .into_default_context()
        .unwrap();
    std::mem::forget(device.create_stream().unwrap());
    session.sim.reset_call_counts();
    let (error, device) = device.try_reset().expect_err("a live stream").into_parts();
    assert!(
        matches!(error, Error::LiveChildren { count: 1 }),
        "{error:?}"
    );
    let (error, device) = device
        .try_release_default_context()
        .expect_err("a live stream")
        .into_parts();
    assert!(
        matches!(error, Error::LiveChildren { count: 1 }),
        "{error:?}"
    );
    assert_eq!(session.sim.call_count("aclrtResetDevice"), 0);
    // Its `Drop` keeps it too, and reports once (the default context it holds is leaked
    // with it, not released and reported a second time).
    let reports = support::DropErrors::capture();
    drop(device);
    let reported = reports.take();
    assert_eq!(reported.len(), 1, "{reported:#?}");
    assert_eq!(session.sim.call_count("aclrtResetDevice"), 0);
    std::mem::forget(session);
}
