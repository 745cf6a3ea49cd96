//! E4, E9, D3 (class 9): a cleanup call that fails once (an injected fault) leaves no event
//! un-reset or undestroyed: the error is returned or reported, teardown succeeds, and
//! nothing is left alive.

use ascend_typestate::{AclError, Error, Event, Reset, WaitError};

use crate::support::isolated::{Reports, isolated};
use crate::support::sim::{Session, assert_no_findings};

/// The injected failure: `ACL_ERROR_RT_INTERNAL_ERROR`, once.
const FAULT: i32 = 507000;

fn is_injected(error: &Error) -> bool {
    error.code() == Some(AclError::RtInternalError)
}

/// Whether a report names the failed call `call` (the error's `Debug` form names it).
fn reported(reports: &[(&'static str, String)], call: &str) -> bool {
    reports.iter().any(|(_, e)| e.contains(call))
}

/// Hole: when `wait_and_reset`'s reset failed once, the event was destroyed after the wait
/// without any reset: the runtime's event resource is lost (E4, the simulator's "destroyed
/// un-reset" finding). A failure of one reset must not end in an un-reset event.
#[test]
fn e4_failed_reset_in_wait_and_reset_leaves_no_unreset_event() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            let reports = Reports::capture();
            let event = ctx.create_event().unwrap().record(&s1).unwrap();
            session.sim.inject_fault("aclrtResetEvent", FAULT, 1);
            match event.try_wait_and_reset(&s2) {
                Ok(event) => {
                    let reported_now = reports.take();
                    assert!(
                        reported(&reported_now, "aclrtResetEvent"),
                        "the reset's error was neither returned nor reported: {reported_now:?}"
                    );
                    event.try_destroy().unwrap();
                }
                // Issued again: the event comes back reset, with the first try's error.
                Err(WaitError::Reset(failed)) => {
                    let (error, event) = failed.into_parts();
                    assert!(is_injected(&error), "{error}");
                    event.try_destroy().unwrap();
                }
                Err(WaitError::Unreset(error)) => assert!(is_injected(&error), "{error}"),
                Err(other) => panic!("unexpected: {other}"),
            }
            s1.destroy().unwrap();
            s2.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
            assert_eq!(session.sim.live_objects(), 0);
        }
        assert_no_findings(&session.finish());
    });
}

/// Hole: the same in a wait scope whose `reset()` fails once: the body returns the error,
/// and the event must still end reset (the scope issues the reset again) and be usable or
/// released, without an un-reset destruction (E4).
#[test]
fn e4_failed_reset_in_a_wait_scope_leaves_no_unreset_event() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            let reports = Reports::capture();
            let event = ctx.create_event().unwrap().record(&s1).unwrap();
            session.sim.inject_fault("aclrtResetEvent", FAULT, 1);
            match event.try_wait(&s2, |waited| waited.reset()) {
                Ok(event) => {
                    let reported_now = reports.take();
                    assert!(
                        reported(&reported_now, "aclrtResetEvent"),
                        "the reset's error was neither returned nor reported: {reported_now:?}"
                    );
                    event.try_destroy().unwrap();
                }
                Err(WaitError::Reset(failed)) => {
                    let (error, event) = failed.into_parts();
                    assert!(is_injected(&error), "{error}");
                    event.try_destroy().unwrap();
                }
                Err(WaitError::Unreset(error)) => assert!(is_injected(&error), "{error}"),
                Err(other) => panic!("unexpected: {other}"),
            }
            s1.destroy().unwrap();
            s2.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
            assert_eq!(session.sim.live_objects(), 0);
        }
        assert_no_findings(&session.finish());
    });
}

/// Hole: in a wait scope of two streams the reset is ordered after the other stream's wait
/// by an internal join event, whose own reset came first: when that reset failed once, the
/// join was waited on and later destroyed without a reset (E4), although the scope's retry
/// succeeded.
#[test]
fn e4_e5_failed_reset_of_the_join_in_a_two_stream_wait_scope_leaves_no_unreset_event() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let (s1, s2, s3) = (
                ctx.create_stream().unwrap(),
                ctx.create_stream().unwrap(),
                ctx.create_stream().unwrap(),
            );
            let reports = Reports::capture();
            let event = ctx.create_event().unwrap().record(&s1).unwrap();
            session.sim.inject_fault("aclrtResetEvent", FAULT, 1);
            match event.try_wait(&s2, |mut waited| {
                waited.also_wait(&s3)?;
                waited.reset()
            }) {
                Ok(event) => {
                    let reported_now = reports.take();
                    assert!(
                        reported(&reported_now, "aclrtResetEvent"),
                        "the reset's error was neither returned nor reported: {reported_now:?}"
                    );
                    event.try_destroy().unwrap();
                }
                Err(WaitError::Reset(failed)) => {
                    let (error, event) = failed.into_parts();
                    assert!(is_injected(&error), "{error}");
                    event.try_destroy().unwrap();
                }
                Err(WaitError::Unreset(error)) => assert!(is_injected(&error), "{error}"),
                Err(other) => panic!("unexpected: {other}"),
            }
            s1.destroy().unwrap();
            s2.destroy().unwrap();
            s3.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
            assert_eq!(session.sim.live_objects(), 0);
        }
        assert_no_findings(&session.finish());
    });
}

/// Hole: re-recording an event on stream A while its reset on stream B may be pending makes
/// the crate join A after B with an internal event (recorded on B, waited on and reset by
/// A). When that join's reset failed once, the join was destroyed later without a reset
/// (E4). The record's error must be returned (the event given back) or reported, and the
/// join must not end un-reset.
#[test]
fn e4_e5_failed_reset_of_a_record_join_leaves_no_unreset_event() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let (a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            let reports = Reports::capture();
            let event = ctx.create_event().unwrap().record(&a).unwrap();
            // b resets, and is not synchronised: the next record on a needs a join.
            let event = event.wait_and_reset(&b).unwrap();
            session.sim.inject_fault("aclrtResetEvent", FAULT, 1);
            let event: Event<'_, Reset> = match event.try_record(&a) {
                Ok(recorded) => {
                    let reported_now = reports.take();
                    assert!(
                        reported(&reported_now, "aclrtResetEvent"),
                        "the join's reset error was neither returned nor reported: \
                         {reported_now:?}"
                    );
                    recorded.try_wait_and_reset(&b).unwrap()
                }
                Err(failed) => {
                    let (error, event) = failed.into_parts();
                    assert!(is_injected(&error), "{error}");
                    event
                }
            };
            b.synchronize().unwrap();
            event.destroy().unwrap();
            a.destroy().unwrap();
            b.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
            assert_eq!(session.sim.live_objects(), 0);
        }
        assert_no_findings(&session.finish());
    });
}

/// Hole: a join event whose `aclrtDestroyEvent` failed once was dropped from the crate's
/// list and never destroyed: the context was later destroyed with it alive (D3, E9). A
/// stream destroys the joins it waited on; one whose destroy fails is kept by the context
/// (reported), and a failed destroy there must fail the context's destroy (given back, its
/// error returned), and the next try must destroy the join.
#[test]
fn e9_d3_failed_destroy_of_a_join_event_is_retried_before_its_context_goes() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let (a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            let reports = Reports::capture();
            let event = ctx.create_event().unwrap().record(&a).unwrap();
            let event = event.wait_and_reset(&b).unwrap();
            // A join (recorded on b, waited on and reset by a), kept once a is synchronised.
            let event = event.record(&a).unwrap();
            a.synchronize().unwrap();
            let event = event.wait_and_reset(&b).unwrap();
            b.synchronize().unwrap();
            event.destroy().unwrap();
            b.destroy().unwrap();
            // Its destroy fails, and so does the retry right after the stream's release.
            session.sim.inject_fault("aclrtDestroyEvent", FAULT, 2);
            a.destroy()
                .expect("the stream goes; its join is kept by the context");
            assert_eq!(reports.take().len(), 2, "each failed destroy is reported");
            session.sim.inject_fault("aclrtDestroyEvent", FAULT, 1);
            let (error, ctx) = ctx
                .try_destroy()
                .expect_err("the kept join's destroy failed")
                .into_parts();
            assert!(is_injected(&error), "{error}");
            ctx.destroy()
                .expect("the join is destroyed on the second try");
            device.reset().unwrap();
            assert_eq!(session.sim.live_objects(), 0);
            drop(reports);
        }
        assert_no_findings(&session.finish());
    });
}
