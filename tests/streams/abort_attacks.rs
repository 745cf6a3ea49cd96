//! Attacks on `Stream::abort` (S11), the stream queries (S10), event release in a context
//! that may stop (S6, E9), join events there (E5, E9) and the last runtime error an error
//! carries (P6). Safe code only in the attacking parts; each test says what it proves.
//! Those that may hang arm a watchdog; those that inject faults or set the drop-error
//! handler run in a child process (`support::isolated`).

use crate::support;

use std::time::Duration;

use ascend_typestate::{AclError, Context, Error, Event, Reset, StreamConfig, Timeout};
use support::isolated::{Reports, isolated};
use support::sim::{Session, assert_no_findings};
use support::watchdog;

/// `ACL_ERROR_RT_INTERNAL_ERROR`.
const RT_FAULT: i32 = 507_000;
/// `ACL_ERROR_INVALID_PARAM` (an ACL-layer code: it never sets the last runtime error).
const ACL_FAULT: i32 = 100_000;
/// `ACL_ERROR_RT_PARAM_INVALID` (a runtime code).
const RT_PARAM: i32 = 107_000;

fn fresh<'s>(ctx: &'s Context<'s>) -> Event<'s, Reset> {
    ctx.create_event().unwrap().into()
}

fn short() -> Timeout {
    Timeout::from_millis(300).unwrap()
}

// ---------------------------------------------------------------------------------------
// S11: abort.
// ---------------------------------------------------------------------------------------

/// A failed `aclrtStreamAbort` (injected) is returned with its code; nothing was
/// discarded, the stream still runs its queued work, can be aborted again, and tears down
/// with nothing alive and no finding. The joins it waited on (orphaned before the call)
/// are released by the context's end.
#[test]
fn s11_failed_abort_leaves_the_stream_whole() {
    isolated(|| {
        let _w = watchdog("s11_failed_abort_leaves_the_stream_whole", 30);
        let session = Session::start();
        {
            let reports = Reports::capture();
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let (mut a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            // A join into `a` (event reset on `b`, recorded on `a`).
            let event = fresh(&ctx).record(&b).unwrap().wait_and_reset(&b).unwrap();
            session.sim.sleep_kernel(b.as_raw(), 20_000);
            let event = event.record(&a).unwrap();
            event.synchronize().unwrap();
            event.destroy().unwrap();
            session.sim.sleep_kernel(a.as_raw(), 30_000);
            session.sim.inject_fault("aclrtStreamAbort", RT_FAULT, 1);
            let error = a.abort().unwrap_err();
            assert_eq!(error.code(), Some(AclError::from_code(RT_FAULT)), "{error}");
            assert!(
                !a.is_complete().unwrap(),
                "the failed abort discarded nothing"
            );
            a.synchronize().unwrap();
            a.abort().unwrap();
            a.synchronize().unwrap();
            a.destroy().unwrap();
            b.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
            assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
            assert!(reports.take().is_empty());
        }
        assert_no_findings(&session.finish());
    });
}

/// Joins waiting in both directions: `a` waits on joins recorded on `b` (still queued
/// behind a kernel) and `b` on joins recorded on `a`; `a` is aborted with all of them in
/// flight. `b` never waits for a discarded record (its joins' records on `a` ran before
/// the events that needed them were released), events are recorded across both streams
/// afterwards, and the teardown leaves nothing alive, without finding.
#[test]
fn s11_abort_with_joins_waiting_in_both_directions() {
    let _w = watchdog("s11_abort_with_joins_waiting_in_both_directions", 30);
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (mut a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let sim = &session.sim;
        for _ in 0..5 {
            // A join into `a` (after a reset on `b`) and one into `b` (after a reset on `a`).
            let e1 = fresh(&ctx).record(&b).unwrap().wait_and_reset(&b).unwrap();
            let e2 = fresh(&ctx).record(&a).unwrap().wait_and_reset(&a).unwrap();
            sim.sleep_kernel(b.as_raw(), 2_000);
            sim.sleep_kernel(a.as_raw(), 2_000);
            let e1 = e1.record(&a).unwrap();
            let e2 = e2.record(&b).unwrap();
            drop(e1);
            drop(e2);
        }
        sim.sleep_kernel(a.as_raw(), 50_000);
        a.abort().unwrap();
        b.synchronize_with(Timeout::from_millis(5_000).unwrap())
            .unwrap();
        for _ in 0..3 {
            let e = fresh(&ctx).record(&a).unwrap().wait_and_reset(&b).unwrap();
            let e = e.record(&b).unwrap().wait_and_reset(&a).unwrap();
            a.synchronize().unwrap();
            e.destroy().unwrap();
        }
        ctx.synchronize_device().unwrap();
        a.destroy().unwrap();
        b.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

/// Abort from another thread, after moving the stream there (`Stream: Send`): it binds the
/// context on that thread (D6), discards the queued work, and the stream comes back usable.
/// Also on the default context's streams.
#[test]
fn s11_abort_after_moving_the_stream_and_on_the_default_context() {
    let _w = watchdog(
        "s11_abort_after_moving_the_stream_and_on_the_default_context",
        30,
    );
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let mut a = ctx.create_stream().unwrap();
        for _ in 0..5 {
            session.sim.sleep_kernel(a.as_raw(), 200_000);
        }
        let a = std::thread::scope(|s| {
            s.spawn(move || {
                a.abort().unwrap();
                a
            })
            .join()
            .unwrap()
        });
        a.synchronize_with(Timeout::from_millis(500).unwrap())
            .unwrap();
        assert!(a.is_complete().unwrap());
        let e = fresh(&ctx).record(&a).unwrap();
        e.synchronize().unwrap();
        e.destroy().unwrap();
        a.destroy().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

/// Abort in a context that may stop (S6), before and after the stop: the abort is
/// refused or succeeds, but no join is destroyed under a pending task (E9), the stop is
/// still reported, and a device synchronisation and the teardown leave nothing alive.
#[test]
fn s6_s11_abort_in_a_stop_on_failure_context() {
    isolated(|| {
        let _w = watchdog("s6_s11_abort_in_a_stop_on_failure_context", 30);
        let session = Session::start();
        {
            let reports = Reports::capture();
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let stops = ctx
                .create_stream_with(StreamConfig::new().stop_on_failure())
                .unwrap();
            let (mut a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            let sim = &session.sim;
            let mut event = fresh(&ctx).record(&b).unwrap().wait_and_reset(&b).unwrap();
            for _ in 0..10 {
                sim.sleep_kernel(b.as_raw(), 1_000);
                let recorded = event.record(&a).unwrap();
                event = recorded.wait_and_reset(&b).unwrap();
            }
            drop(event);
            sim.sleep_kernel(a.as_raw(), 30_000);
            a.abort().unwrap();
            // Again, joins then the stop, then an abort after the stop.
            let mut event = fresh(&ctx).record(&b).unwrap().wait_and_reset(&b).unwrap();
            for _ in 0..10 {
                sim.sleep_kernel(b.as_raw(), 1_000);
                let recorded = event.record(&a).unwrap();
                event = recorded.wait_and_reset(&b).unwrap();
            }
            drop(event);
            sim.sleep_kernel(a.as_raw(), 30_000);
            sim.inject_task_failure(stops.as_raw(), 507_899);
            sim.sleep_kernel(stops.as_raw(), 10);
            assert!(stops.synchronize().is_err(), "the stop is reported");
            let after_stop = a.abort();
            eprintln!("abort after the stop: {after_stop:?}");
            let _ = a.synchronize();
            let _ = b.synchronize();
            let _ = ctx.synchronize_device();
            a.destroy().unwrap();
            b.destroy().unwrap();
            stops.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
            assert_eq!(sim.live_objects(), 0, "leaked runtime objects");
            eprintln!("reports: {:?}", reports.take());
        }
        assert_no_findings(&session.finish());
    });
}

/// Finding: `abort` resets a stream's reset counters but not what it was *joined after*
/// (`Stream::joined`). A join into `a` after the resets on `x` (issued for an event that was
/// then `mem::forget`-ten, which safe code may do) is discarded by the abort, yet `a` still
/// counts as ordered after those resets. A second, live event reset on `x` (its reset still
/// queued) is then recorded on `a` with no join: the record runs first, the pending reset
/// clears it, and a stream that waits on the event waits for a record that already ran.
/// Output: `c waiting on e2: Err(Runtime { call: "aclrtSynchronizeStreamWithTimeout", code:
/// RtStreamSyncTimeout, .. }); findings: []` (without the abort the same program passes).
/// Fix: in `Stream::abort`, also clear `self.joined` (e.g. set it to `(0, u64::MAX)`), as
/// the discarded join waits no longer order the stream after anything.
#[test]
fn s11_e5_abort_forgets_nothing_of_the_joins_it_discarded() {
    isolated(|| {
        let _w = watchdog("s11_e5_abort_forgets_nothing_of_the_joins_it_discarded", 60);
        let session = Session::start();
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (mut a, x, s0, c) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let sim = &session.sim;
        // `x` busy: the resets issued on it stay queued.
        sim.sleep_kernel(x.as_raw(), 400_000);
        let e1 = fresh(&ctx).record(&s0).unwrap().wait_and_reset(&x).unwrap();
        let e2 = fresh(&ctx).record(&s0).unwrap().wait_and_reset(&x).unwrap();
        // A join into `a` after both resets on `x`, then e1 recorded on `a` and forgotten.
        let e1 = e1.record(&a).unwrap();
        std::mem::forget(e1);
        // `a` is no longer borrowed: the abort discards the join's wait and e1's record.
        a.abort().unwrap();
        // e2's reset on `x` is still queued. Recording it on `a` must first join after it.
        let e2 = e2.record(&a).unwrap();
        a.synchronize().unwrap();
        // Once `x` has run its resets, e2's flag must still be set by its record on `a`.
        x.synchronize().unwrap();
        let e2 = e2.wait_and_reset(&c).unwrap();
        let waited = c.synchronize_with(Timeout::from_millis(2_000).unwrap());
        let findings = sim.findings();
        eprintln!("c waiting on e2: {waited:?}; findings: {findings:#?}");
        let ok = waited.is_ok() && findings.is_empty();
        // e1 was forgotten: the context cannot end. Leave everything as it is.
        std::mem::forget(e2);
        std::mem::forget((a, x, s0, c));
        std::mem::forget(ctx);
        std::mem::forget(device);
        std::mem::forget(session);
        assert!(ok, "a record after the abort overtook a pending reset");
    });
}

/// Documented for `destroy_force`, not for `abort`: with a `mem::forget`-ten event, a typed
/// stream can wait for a record the abort discarded (it never completes). Here the wait is
/// bounded by a timeout, which is what the test shows.
#[test]
fn s11_a_forgotten_event_lets_a_stream_wait_for_a_discarded_record() {
    isolated(|| {
        let _w = watchdog(
            "s11_a_forgotten_event_lets_a_stream_wait_for_a_discarded_record",
            60,
        );
        let session = Session::start();
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (mut a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        session.sim.sleep_kernel(a.as_raw(), 200_000);
        let e = ctx
            .create_event()
            .unwrap()
            .record(&a)
            .unwrap()
            .wait_and_reset(&b)
            .unwrap();
        std::mem::forget(e);
        a.abort().unwrap();
        let waited = b.synchronize_with(short());
        eprintln!("b after the abort: {waited:?}");
        std::mem::forget((a, b));
        std::mem::forget(ctx);
        std::mem::forget(device);
        std::mem::forget(session);
        assert_eq!(
            waited.unwrap_err().code(),
            Some(AclError::RtStreamSyncTimeout)
        );
    });
}

// ---------------------------------------------------------------------------------------
// S10: stream queries.
// ---------------------------------------------------------------------------------------

/// S10 queries fail cleanly (the code returned, nothing kept) and do not disturb the stream;
/// a stop-on-failure stream reports its flags without any internal bit.
#[test]
fn s10_queries_fail_cleanly_and_hide_internal_flags() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let s = ctx
                .create_stream_with(StreamConfig::new().stop_on_failure().priority(7))
                .unwrap();
            assert_eq!(s.flags().unwrap(), 0);
            assert_eq!(s.priority().unwrap(), 7);
            for call in [
                "aclrtStreamGetId",
                "aclrtStreamGetFlags",
                "aclrtStreamGetPriority",
            ] {
                session.sim.inject_fault(call, RT_FAULT, 1);
            }
            assert!(s.runtime_id().is_err());
            assert!(s.flags().is_err());
            assert!(s.priority().is_err());
            assert!(s.runtime_id().is_ok());
            s.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_no_findings(&session.finish());
    });
}

// ---------------------------------------------------------------------------------------
// S6, E9: event release in a context that may stop.
// ---------------------------------------------------------------------------------------

/// The release of a waited event in a context that may stop, with each of its calls
/// failing (injected): `aclrtSynchronizeStream` (its resetting stream), then
/// `aclrtSynchronizeEvent`, then `aclrtDestroyEvent`, once and many times. Each failure is
/// returned by `destroy` or reaches the drop-error handler; no E9 finding, nothing alive.
#[test]
fn s6_e9_event_release_after_stop_with_faults() {
    isolated(release_after_stop_cases);
}

fn release_after_stop_cases() {
    for (call, times) in [
        ("aclrtSynchronizeStream", 1),
        ("aclrtSynchronizeEvent", 1),
        ("aclrtDestroyEvent", 1),
        ("aclrtSynchronizeStream", 3),
        ("aclrtSynchronizeEvent", 3),
        ("aclrtDestroyEvent", 3),
    ] {
        for stop_first in [false, true] {
            for by_drop in [false, true] {
                release_after_stop_case(call, times, stop_first, by_drop);
            }
        }
    }
}

fn release_after_stop_case(call: &str, times: u32, stop_first: bool, by_drop: bool) {
    let _w = watchdog("s6_e9_event_release_after_stop_with_faults", 60);
    let session = Session::start();
    let sim = &session.sim;
    let reports = support::DropErrors::capture();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stops = ctx
            .create_stream_with(StreamConfig::new().stop_on_failure())
            .unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        sim.sleep_kernel(s1.as_raw(), 5_000);
        let event = fresh(&ctx)
            .record(&s1)
            .unwrap()
            .wait_and_reset(&s2)
            .unwrap();
        if stop_first {
            sim.inject_task_failure(stops.as_raw(), 507_899);
            sim.sleep_kernel(stops.as_raw(), 10);
            let _ = stops.synchronize();
        }
        sim.inject_fault(call, RT_FAULT, times);
        let returned = if by_drop {
            drop(event);
            None
        } else {
            Some(event.destroy())
        };
        sim.clear_faults();
        let reported = reports.take();
        let seen = returned.as_ref().is_some_and(|r| r.is_err()) || !reported.is_empty();
        assert!(
            seen,
            "{call} x{times} stop_first={stop_first} by_drop={by_drop}: the fault was lost \
             (returned {returned:?}, reported {reported:?})"
        );
        let _ = s1.synchronize();
        let _ = s2.synchronize();
        let _ = ctx.synchronize_device();
        s1.destroy().unwrap();
        s2.destroy().unwrap();
        stops.destroy().unwrap();
        let _ = reports.take();
        match ctx.destroy() {
            Ok(()) => {}
            Err(e) => panic!("{call} x{times}: context: {e}"),
        }
        device.reset().unwrap();
    }
    assert_eq!(
        sim.live_objects(),
        0,
        "{call} x{times} stop_first={stop_first} by_drop={by_drop}: leaked"
    );
    drop(reports);
    let findings = session.finish();
    assert!(
        findings.iter().all(|f| f.rule != "E9"),
        "{call} x{times} stop_first={stop_first} by_drop={by_drop}: {findings:#?}"
    );
}

// ---------------------------------------------------------------------------------------
// E5, E9: join events in a context that may stop.
// ---------------------------------------------------------------------------------------

/// Joins are not pooled in a context that may stop, so a loop that synchronises its
/// streams but never the device grows the list of waiting joins: bounded by the join
/// capacity (`Error::JoinCapacity`, as it should). Finding: a device synchronisation does
/// not recover. `JoinTarget::join_after` skips `pooled()` (the only place the device
/// watermark is applied to the list) once `waiting_len() >= capacity`, and `fresh_join`
/// skips the idle query when `may_stop()`, and `synchronized()` returns early when
/// `may_stop()`: so nothing ever shrinks the list and every later join on that stream is
/// `JoinCapacity` until the stream is destroyed. Output:
/// `after a device synchronisation (101 objects alive): 100 join events already wait for
/// this stream's synchronisation, its context's join capacity: ...`.
#[test]
fn s6_e5_joins_in_a_may_stop_context_grow_to_the_capacity_only() {
    let _w = watchdog(
        "s6_e5_joins_in_a_may_stop_context_grow_to_the_capacity_only",
        60,
    );
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let _stops = ctx
            .create_stream_with(StreamConfig::new().stop_on_failure())
            .unwrap();
        ctx.set_join_capacity(100).unwrap();
        let (from, to) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let baseline = session.sim.live_objects();
        let mut event = fresh(&ctx)
            .record(&from)
            .unwrap()
            .wait_and_reset(&from)
            .unwrap();
        let mut refused = None;
        for i in 0..300 {
            match event.try_record(&to) {
                Ok(recorded) => {
                    event = recorded.wait_and_reset(&from).unwrap();
                    to.synchronize().unwrap();
                    from.synchronize().unwrap();
                    // Keep a reset pending on `from` for the next round's join.
                    session.sim.sleep_kernel(from.as_raw(), 10);
                    let e = event.record(&from).unwrap();
                    event = e.wait_and_reset(&from).unwrap();
                }
                Err(failed) => {
                    let (error, back) = failed.into_parts();
                    assert!(matches!(error, Error::JoinCapacity { .. }), "{error}");
                    refused = Some(i);
                    event = back;
                    break;
                }
            }
        }
        let grown = session.sim.live_objects() - baseline;
        eprintln!("refused at {refused:?}; {grown} more objects alive");
        assert!(grown <= 101, "{grown} join events alive");
        assert_eq!(refused, Some(100), "the capacity bounds the joins");
        // The device synchronisation proves every join done (the watermark): joining works
        // again, and the joins waiting are released.
        ctx.synchronize_device().unwrap();
        event = match event.try_record(&to) {
            Ok(recorded) => recorded.wait_and_reset(&from).unwrap(),
            Err(failed) => {
                let (error, back) = failed.into_parts();
                let alive = session.sim.live_objects() - baseline;
                std::mem::forget(back);
                panic!("after a device synchronisation ({alive} objects alive): {error}");
            }
        };
        ctx.synchronize_device().unwrap();
        assert!(session.sim.live_objects() - baseline <= 2);
        drop(event);
        from.destroy().unwrap();
        to.destroy().unwrap();
        drop(_stops);
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

// ---------------------------------------------------------------------------------------
// P6: the last runtime error an error carries.
// ---------------------------------------------------------------------------------------

/// A runtime-coded failure (107000) followed by an ACL-layer one (100000) on the same
/// thread: the second error carries no last runtime error (the first one's was taken with
/// it), and the first carries none either (it equals the code returned). Its own message
/// survives the read.
#[test]
fn p6_no_stale_last_runtime_error() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let mut s = ctx.create_stream().unwrap();
            session.sim.inject_fault("aclrtStreamAbort", RT_PARAM, 1);
            let first = s.abort().unwrap_err();
            session.sim.inject_fault("aclrtStreamGetId", ACL_FAULT, 1);
            let second = s.runtime_id().unwrap_err();
            eprintln!("first: {first}\nsecond: {second}");
            for (error, own) in [(&first, RT_PARAM), (&second, ACL_FAULT)] {
                let Error::Runtime { code, message, .. } = error else {
                    panic!("{error:?}")
                };
                assert_eq!(*code, AclError::from_code(own));
                let message = message.as_ref().expect("the runtime's message is kept");
                assert!(message.as_str().contains("injected failure"), "{message:?}");
                assert_eq!(message.last_runtime_error(), None, "{error}");
            }
            s.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_no_findings(&session.finish());
    });
}

/// A failure inside a simulated host callback path is refused before any runtime call
/// (C8), so reading the last error there never happens; an ordinary failure on a report
/// thread does not leak its code into the next failure of the main thread (thread-local).
#[test]
fn p6_last_runtime_error_is_per_thread() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let mut s = ctx.create_stream().unwrap();
            let mut other = ctx.create_stream().unwrap();
            session.sim.inject_fault("aclrtStreamAbort", RT_PARAM, 1);
            std::thread::scope(|t| {
                t.spawn(|| assert!(other.abort().is_err())).join().unwrap();
            });
            session.sim.inject_fault("aclrtStreamAbort", ACL_FAULT, 1);
            let mine = s.abort().unwrap_err();
            let Error::Runtime { message, .. } = &mine else {
                panic!("{mine:?}")
            };
            assert_eq!(
                message.as_ref().and_then(|m| m.last_runtime_error()),
                None,
                "{mine}"
            );
            s.destroy().unwrap();
            other.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_no_findings(&session.finish());
        let _ = Duration::ZERO;
    });
}
