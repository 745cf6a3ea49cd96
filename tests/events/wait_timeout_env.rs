//! P3 (class 1): a typed wait never times out, even on a runtime whose default op wait timeout
//! is armed (the simulator arms it from `ACLSIM_OP_WAIT_TIMEOUT`, read at `aclInit`, like a
//! board configured that way): `Acl::init` disarms it, and safe code cannot arm it again
//! (`Acl::set_op_wait_timeout` is gone, the raw call is `unsafe`: `ui-
//! tests/fail/p3_safe_code_cannot_arm_the_op_wait_timeout.rs`).
//!
//! A timed-out wait lets its stream pass before the event is recorded, and the reset after
//! it then runs before the record: the event's flag stays set ("stale"), so the next cycle's
//! wait passes at once, unordered. Every typed event cycle depends on waits not timing out.
//!
//! Its own test binary (the environment is changed), and each test in a child process whose
//! environment is set for it (`common::Child::env`).

use crate::support;

use crate::support::isolated as common;

use std::time::Duration;

use ascend_typestate::sys::bindings::ACL_EVENT_SYNC;
use ascend_typestate::sys::loader::{LoadOptions, load_global};
use ascend_typestate::{Acl, AclError, Error, Event, MallocPolicy, Reset};
use common::{Child, isolated_with};
use support::sim::{Session, Sim, assert_no_findings};

/// The simulator's default op wait timeout, in seconds, read at `aclInit`.
const TIMEOUT_ENV: &str = "ACLSIM_OP_WAIT_TIMEOUT";

/// The producer's first kernel: longer than the 1 s timeout.
const SLOW: Duration = Duration::from_millis(1_500);
/// The producer's second kernel: longer than the timeout too.
const SLOW_AGAIN: Duration = Duration::from_millis(1_200);

fn times_two(x: u32) -> u32 {
    x * 2
}

fn plus_one(x: u32) -> u32 {
    x + 1
}

/// Arms the op wait timeout through the raw layer (an environment fault; `unsafe`).
#[allow(unused_unsafe)]
fn arm_op_wait_timeout(acl: &Acl, seconds: u32) {
    // SAFETY: only this test's streams exist; a timed-out wait makes their next
    // synchronisation fail, which is what the test shows.
    unsafe { acl.api().set_op_wait_timeout(seconds) }.unwrap();
}

/// Hole: `Acl::init` left the runtime's default op wait timeout as it was. With one armed
/// (1 s here, from the environment), a producer slower than that made the consumer's typed
/// wait time out (107019 at `s2.synchronize()`), and the stale flag left behind let the
/// next cycle's wait pass unordered. After `Acl::init` no typed wait may time out, and the
/// second cycle must order its waiting stream after the producer.
#[test]
fn p3_init_disarms_a_default_op_wait_timeout_so_typed_waits_never_time_out() {
    let child = Child::default().env(TIMEOUT_ENV, "1");
    isolated_with(child, || {
        assert_eq!(std::env::var(TIMEOUT_ENV).as_deref(), Ok("1"));
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let (producer, s2, s3) = (
                ctx.create_stream().unwrap(),
                ctx.create_stream().unwrap(),
                ctx.create_stream().unwrap(),
            );
            let mut input = ctx.alloc::<u32>(4, MallocPolicy::default()).unwrap();
            ctx.copy(&mut input, &[1u32, 2, 3, 4][..]).unwrap();
            let mut mid = ctx.alloc::<u32>(4, MallocPolicy::default()).unwrap();
            let mut out = ctx.alloc::<u32>(4, MallocPolicy::default()).unwrap();
            let mut seen = [0u32; 4];
            let event: Event<'_, Reset> = ctx.create_event().unwrap().into();
            let (event, order_ms) = ctx
                .async_scope(|scope| {
                    // Cycle 1: the producer is slower than the timeout.
                    let first =
                        scope.simulated_map(&producer, SLOW, &input, &mut mid, times_two)?;
                    let event = event.record(&producer)?.wait_and_reset(&s2)?;
                    let waited = s2.synchronize();
                    assert!(waited.is_ok(), "the typed wait timed out: {waited:?}");
                    // Cycle 2: the event again, for another stream.
                    let second =
                        scope.simulated_map(&producer, SLOW_AGAIN, first, &mut out, plus_one)?;
                    let produced = ctx.create_event()?.record(&producer)?;
                    let event = event.record(&producer)?.wait_and_reset(&s3)?;
                    let passed = ctx.create_event()?.record(&s3)?;
                    scope.copy(&s3, &mut seen[..], second)?;
                    s3.synchronize()?;
                    produced.synchronize()?;
                    passed.synchronize()?;
                    // s3 passed its wait after the producer's second kernel ended.
                    let order_ms = passed.elapsed_since(&produced)?;
                    passed.destroy()?;
                    produced.destroy()?;
                    Ok((event, order_ms))
                })
                .unwrap();
            assert!(
                order_ms >= 0.0,
                "s3 passed its wait {:.0} ms before the producer was done (a stale flag)",
                -order_ms
            );
            assert_eq!(seen, [3, 5, 7, 9]);
            event.destroy().unwrap();
            input.free().unwrap();
            mid.free().unwrap();
            out.free().unwrap();
            producer.destroy().unwrap();
            s2.destroy().unwrap();
            s3.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
            assert_eq!(session.sim.live_objects(), 0);
        }
        assert_no_findings(&session.finish());
    });
}

/// The twin of the test above: the same first cycle with the timeout armed by the test
/// itself (the raw `unsafe` call, after `Acl::init`). The wait does time out in the
/// simulator, so the test above would fail if `Acl::init` did not disarm the timeout.
#[test]
fn p3_twin_an_armed_op_wait_timeout_does_fire_on_the_same_program() {
    isolated_with(Child::default(), || {
        let session = Session::start();
        {
            arm_op_wait_timeout(session.acl(), 1);
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let (producer, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            let mut input = ctx.alloc::<u32>(4, MallocPolicy::default()).unwrap();
            ctx.copy(&mut input, &[1u32, 2, 3, 4][..]).unwrap();
            let mut mid = ctx.alloc::<u32>(4, MallocPolicy::default()).unwrap();
            let event: Event<'_, Reset> = ctx.create_event().unwrap().into();
            let (waited, event) = ctx
                .async_scope(|scope| {
                    scope.simulated_map(&producer, SLOW, &input, &mut mid, times_two)?;
                    let event = event.record(&producer)?.wait_and_reset(&s2)?;
                    Ok((s2.synchronize(), event))
                })
                .unwrap();
            match waited {
                Err(Error::Runtime {
                    code: AclError::RtWaitTimeout,
                    ..
                }) => {}
                other => panic!("expected the wait to time out (107019), got {other:?}"),
            }
            // Reported once; the stream is usable again.
            s2.synchronize().unwrap();
            event.destroy().unwrap();
            arm_op_wait_timeout(session.acl(), 0);
            input.free().unwrap();
            mid.free().unwrap();
            producer.destroy().unwrap();
            s2.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_no_findings(&session.finish());
    });
}

/// The environment fault itself: with `ACLSIM_OP_WAIT_TIMEOUT=1` the simulator's default op
/// wait timeout is armed (a raw program that does not disarm it sees its wait time out).
/// Without this, the first test above would pass for the wrong reason.
#[test]
#[allow(unused_unsafe)]
fn p3_the_environment_arms_the_simulators_default_op_wait_timeout() {
    let child = Child::default().env(TIMEOUT_ENV, "1");
    isolated_with(child, || {
        let path = support::simulator_path();
        let sim = Sim::open(&path);
        sim.clear_findings();
        let api = load_global(&LoadOptions::default().path(&path)).unwrap();
        // SAFETY: a fresh process whose only runtime user is this raw program; every handle
        // is used in its context (made current by create_context) and released once, after
        // the streams are synchronised.
        unsafe {
            api.init(None).unwrap();
            api.set_device(0).unwrap();
            let ctx = api.create_context(0).unwrap();
            let (s1, s2) = (api.create_stream().unwrap(), api.create_stream().unwrap());
            let event = api.create_event_with_flag(ACL_EVENT_SYNC).unwrap();
            sim.sleep_kernel(s1, 1_500_000);
            api.record_event(event, s1).unwrap();
            api.stream_wait_event(s2, event).unwrap();
            api.reset_event(event, s2).unwrap();
            let waited = api.synchronize_stream(s2);
            assert_eq!(
                waited.as_ref().err().and_then(|e| e.code()),
                Some(AclError::RtWaitTimeout),
                "{TIMEOUT_ENV}=1 did not arm the simulator's op wait timeout: {waited:?}"
            );
            api.synchronize_stream(s1).unwrap();
            api.synchronize_stream(s2).unwrap();
            api.destroy_event(event).unwrap();
            api.destroy_stream(s1).unwrap();
            api.destroy_stream(s2).unwrap();
            api.destroy_context(ctx).unwrap();
            api.reset_device(0).unwrap();
            api.finalize().unwrap();
        }
        assert_no_findings(&sim.findings());
    });
}
