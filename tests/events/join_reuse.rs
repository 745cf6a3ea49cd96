//! Join events (E5, E9) kept in their waiting stream's list and reused, under attack: the
//! list touched while events reset on the stream are dropped or recorded on other threads,
//! reuse after a device synchronisation issued by another thread, the query that reclaims
//! joins of an idle stream (in a context that may stop on failure too, S6), a forced
//! destroy (S8) with joins waiting, the join capacity (reached, recovered, set to 1), faults
//! injected into each call of a join, and panics in wait scopes whose waits need joins.
//! Every program ends with no checker finding and nothing of the runtime alive.
//!
//! The join a program makes: an event reset on stream `from` (its reset still pending
//! behind a sleep kernel) and then recorded on stream `to` makes `to` wait on a join event
//! recorded on `from`; the join lives in `to`'s list until `to` (or the device) is
//! synchronised, or a query finds `to` idle.
//!
//! Safe code only; the simulator's extension API launches sleep kernels, injects faults and
//! counts calls.

use crate::support;

use std::sync::mpsc;

use ascend_typestate::{Context, Error, Event, Recorded, Reset, Stream, StreamConfig};
use support::isolated::{Reports, isolated};
use support::sim::{Session, Sim, assert_no_findings};

/// `ACL_ERROR_RT_INTERNAL_ERROR`.
const FAULT: i32 = 507000;

fn fresh<'s>(ctx: &'s Context<'s>) -> Event<'s, Reset> {
    ctx.create_event().unwrap().into()
}

/// One join into `to`: `event` (reset on `from`) is recorded on `to`, then waited on and
/// reset on `from` again, so that the next call needs a join too. `from` stays busy behind
/// a short kernel, so each reset is still pending when the next record comes.
fn join_once<'e>(
    sim: &Sim,
    event: Event<'e, Reset>,
    from: &'e Stream<'_>,
    to: &'e Stream<'_>,
) -> Result<Event<'e, Reset>, Error> {
    let recorded = event.record(to)?;
    sim.sleep_kernel(from.as_raw(), 20);
    recorded.wait_and_reset(from)
}

/// Soundness of the per-stream list across threads: the main thread joins into stream `a`
/// (events reset on `c`, recorded on `a`) and synchronises `a` now and then, which both
/// touch `a`'s join list, while a worker thread gets events whose last reset was on `a`
/// and drops them (their release synchronises `a` through `Stream::synchronize_shared`) or
/// records them on a stream of its own (a join into that stream, reading `a`'s reset
/// counts only). Under helgrind (`valgrind --tool=helgrind` on this test) no race is
/// reported on the list; here: no finding, nothing left alive.
#[test]
fn e9_events_of_a_stream_dropped_and_joined_on_another_thread_while_it_joins() {
    const ROUNDS: usize = 300;
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let ctx: &Context<'_> = &ctx;
        let a = ctx.create_stream().unwrap();
        let c = ctx.create_stream().unwrap();
        let sim = &session.sim;
        let baseline = sim.live_objects();
        std::thread::scope(|sc| {
            let (tx, rx) = mpsc::channel::<Event<'_, Reset>>();
            let worker = sc.spawn(move || {
                let w = ctx.create_stream().unwrap();
                let mut own: Vec<Event<'_, Reset>> = Vec::new();
                for (i, event) in rx.into_iter().enumerate() {
                    match i % 3 {
                        // The release synchronises `a` from this thread.
                        0 => drop(event),
                        // A join into `w` after `a`'s reset.
                        1 => own.push(event.record(&w).unwrap().wait_and_reset(&w).unwrap()),
                        // Same, then synchronised and destroyed here.
                        _ => {
                            let e = event.record(&w).unwrap();
                            e.synchronize().unwrap();
                            e.destroy().unwrap();
                        }
                    }
                    if own.len() > 8 {
                        w.synchronize().unwrap();
                        own.clear();
                    }
                }
                drop(own);
                w.destroy().unwrap();
            });
            let mut cycling: Event<'_, Reset> =
                fresh(ctx).record(&c).unwrap().wait_and_reset(&c).unwrap();
            for i in 0..ROUNDS {
                // A join into `a` (its list), after the reset on `c`.
                cycling = join_once(sim, cycling, &c, &a).unwrap();
                // An event whose last reset is on `a`, for the worker.
                sim.sleep_kernel(a.as_raw(), 10);
                let e = fresh(ctx).record(&a).unwrap().wait_and_reset(&a).unwrap();
                tx.send(e).unwrap();
                if i % 7 == 0 {
                    a.synchronize().unwrap();
                }
            }
            drop(tx);
            worker.join().unwrap();
            cycling.destroy().unwrap();
        });
        a.destroy().unwrap();
        c.destroy().unwrap();
        assert_eq!(sim.live_objects(), baseline - 2);
    }
    assert_no_findings(&session.finish());
}

/// Joins reused after device synchronisations that another thread issues while the main
/// thread keeps joining into a stream it never synchronises (the watermark
/// `device_synced_before`): the joins issued during a device synchronisation are not
/// reused before the next one, the program never meets its join capacity (each device
/// synchronisation frees the joins before it), and no stream synchronisation is hidden.
#[test]
fn e9_joins_reused_after_device_synchronisations_of_another_thread() {
    const ROUNDS: usize = 1500;
    let session = Session::start();
    {
        let device = session.default_device(0);
        let ctx: &Context<'_> = &device;
        ctx.set_join_capacity(256).unwrap();
        let from = ctx.create_stream().unwrap();
        let to = ctx.create_stream().unwrap();
        let sim = &session.sim;
        let stop = std::sync::atomic::AtomicBool::new(false);
        let mut device_syncs = 0u32;
        std::thread::scope(|sc| {
            let syncer = sc.spawn(|| {
                let mut n = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    ctx.synchronize_device().unwrap();
                    n += 1;
                    std::thread::sleep(std::time::Duration::from_micros(500));
                }
                n
            });
            sim.reset_call_counts();
            let mut event = fresh(ctx)
                .record(&from)
                .unwrap()
                .wait_and_reset(&from)
                .unwrap();
            let mut failure = None;
            for round in 0..ROUNDS {
                // `to` runs a kernel per round and drains between rounds (the simulator's
                // device synchronisation waits until every queue is empty, so a queue that
                // only grows would keep it from ever returning).
                sim.sleep_kernel(to.as_raw(), 200);
                match event.try_record(&to) {
                    Ok(recorded) => {
                        sim.sleep_kernel(from.as_raw(), 20);
                        event = recorded.wait_and_reset(&from).unwrap();
                    }
                    Err(failed) => {
                        let (error, back) = failed.into_parts();
                        failure = Some((round, error));
                        event = back;
                        break;
                    }
                }
                std::thread::sleep(std::time::Duration::from_micros(400));
            }
            let hidden = sim.call_count("aclrtSynchronizeStream");
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            device_syncs = syncer.join().unwrap();
            assert!(
                failure.is_none(),
                "{failure:?} after {device_syncs} device synchronisations"
            );
            assert_eq!(hidden, 0, "a hidden synchronisation");
            event.destroy().unwrap();
        });
        assert!(device_syncs > 0);
        to.destroy().unwrap();
        from.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// The query reclaim in a context with a stop-on-failure stream (S6): joins of an idle
/// stream are destroyed there rather than reused (a stop leaves their flags unknown), and
/// once the context is stopped by a failed task, every join (waiting, pooled, or refused by
/// the stop) is still released by the teardown: no finding, nothing alive.
#[test]
fn s6_e9_query_reclaim_then_a_stop_with_joins_waiting() {
    // Finding: after a stop, an idle waiting stream does not prove its joins' records done
    // (src/typed/join.rs `fresh_join`, `finished`): E9.
    isolated(|| {
        let session = Session::start();
        {
            let reports = Reports::capture();
            let acl = session.acl();
            let device = acl.set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let stopping = ctx
                .create_stream_with(StreamConfig::new().stop_on_failure())
                .unwrap();
            let from = ctx.create_stream().unwrap();
            let to = ctx.create_stream().unwrap();
            let sim = &session.sim;
            let mut event = fresh(&ctx)
                .record(&from)
                .unwrap()
                .wait_and_reset(&from)
                .unwrap();
            // 200 joins, `to` idle at each 64th: the query reclaims (destroys) them.
            for _ in 0..200 {
                event = join_once(sim, event, &from, &to).unwrap();
            }
            // More joins waiting behind a long kernel on `to`, then the stop. Under load
            // (run with the rest of the module and `join_fault_sweep`), about one run in
            // five ends with E9 findings: join events destroyed while their record on
            // `from` is still queued (the stop dropped the waits on `to`, so the query finds
            // `to` idle, or its synchronisation returns, before those records are dropped).
            sim.sleep_kernel(to.as_raw(), 50_000);
            for _ in 0..10 {
                event = join_once(sim, event, &from, &to).unwrap();
            }
            sim.inject_task_failure(stopping.as_raw(), 507_899);
            sim.sleep_kernel(stopping.as_raw(), 10);
            assert!(stopping.synchronize().is_err(), "the stop is reported");
            // Joins refused now (RtStreamAbort), whatever the list holds.
            let mut refused = 0;
            for _ in 0..70 {
                match event.try_record(&to) {
                    Ok(_recorded) => panic!("recorded after a stop"),
                    Err(failed) => {
                        refused += 1;
                        event = failed.into_parts().1;
                    }
                }
            }
            assert_eq!(refused, 70);
            drop(event);
            let _ = to.synchronize();
            let _ = from.synchronize();
            to.destroy().unwrap();
            from.destroy().unwrap();
            stopping.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
            assert_eq!(sim.live_objects(), 0);
            drop(reports);
        }
        assert_no_findings(&session.finish());
    });
}

/// A forced destroy (S8) of a stream with joins waiting: one pooled, five done but not
/// known done, and one whose wait is still pending behind a long kernel (the event's own
/// record after that join failed, so no user handle covers it). The joins are parked in the
/// context and released by a device synchronisation (`with_device_sync`) or by the
/// context's end, whichever comes first; none is destroyed under a pending task (E9) nor
/// left alive.
fn forced_destroy_with_joins_waiting(with_device_sync: bool) {
    let session = Session::start();
    {
        let acl = session.acl();
        let device = acl.set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let from = ctx.create_stream().unwrap();
        let sim = &session.sim;
        let baseline = sim.live_objects();
        {
            let to = ctx.create_stream().unwrap();
            let mut event = fresh(&ctx)
                .record(&from)
                .unwrap()
                .wait_and_reset(&from)
                .unwrap();
            // A pooled join: one round synchronised.
            event = join_once(sim, event, &from, &to).unwrap();
            to.synchronize().unwrap();
            from.synchronize().unwrap();
            sim.sleep_kernel(to.as_raw(), 5_000);
            for _ in 0..5 {
                event = join_once(sim, event, &from, &to).unwrap();
            }
            // The join's record passes, the event's own record fails: the join waits on
            // `to`, behind a long kernel, and nothing of the program refers to it.
            sim.sleep_kernel(to.as_raw(), 30_000);
            sim.inject_fault_at("aclrtRecordEvent", FAULT, 1, 1);
            let (_, event) = event.try_record(&to).unwrap_err().into_parts();
            sim.clear_faults();
            drop(event); // its release synchronises `from` only
            session.expect_findings();
            to.destroy_force().unwrap();
        }
        if with_device_sync {
            ctx.synchronize_device().unwrap();
            assert_eq!(
                sim.live_objects(),
                baseline,
                "joins left after a device synchronisation"
            );
        }
        from.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
        assert_eq!(sim.live_objects(), 0);
    }
    // The force destroy discards the kernels and the join's wait and reset (S8): reported,
    // nothing else.
    support::sim::assert_only_discarded(&session.finish(), 1..=8);
}

#[test]
fn s8_e9_forced_destroy_with_joins_waiting_then_device_synchronisation() {
    forced_destroy_with_joins_waiting(true);
}

#[test]
fn s8_e9_forced_destroy_with_joins_waiting_then_context_end() {
    forced_destroy_with_joins_waiting(false);
}

/// `set_join_capacity(1)` with the waiting stream busy: the first join is issued, the
/// second is `JoinCapacity` with nothing issued (no record, no query beyond one, no
/// synchronisation), and once the stream is synchronised joins go on.
#[test]
fn e5_join_capacity_one_refuses_then_recovers() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let ctx: &Context<'_> = &device;
        ctx.set_join_capacity(1).unwrap();
        let from = ctx.create_stream().unwrap();
        let to = ctx.create_stream().unwrap();
        let sim = &session.sim;
        let mut event = fresh(ctx)
            .record(&from)
            .unwrap()
            .wait_and_reset(&from)
            .unwrap();
        sim.sleep_kernel(to.as_raw(), 30_000);
        event = join_once(sim, event, &from, &to).unwrap();
        sim.reset_call_counts();
        let (error, refused) = event.try_record(&to).unwrap_err().into_parts();
        assert!(
            matches!(error, Error::JoinCapacity { capacity: 1 }),
            "{error:?}"
        );
        assert_eq!(sim.call_count("aclrtRecordEvent"), 0);
        assert_eq!(sim.call_count("aclrtSynchronizeStream"), 0);
        assert_eq!(sim.call_count("aclrtSynchronizeDevice"), 0);
        assert_eq!(sim.call_count("aclrtCreateEventWithFlag"), 0);
        event = refused;
        to.synchronize().unwrap();
        for _ in 0..3 {
            event = join_once(sim, event, &from, &to).unwrap();
            to.synchronize().unwrap();
        }
        event.destroy().unwrap();
        to.destroy().unwrap();
        from.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// The join capacity bounds the joins waiting on a stream, pooled ones included: with the
/// capacity lowered to 1 after the stream's pool was filled (64 joins synchronised), a busy
/// stream refuses its second waiting join, and the pooled events are not lost.
#[test]
fn e5_pooled_joins_are_counted_against_the_capacity() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let ctx: &Context<'_> = &device;
        let from = ctx.create_stream().unwrap();
        let to = ctx.create_stream().unwrap();
        let sim = &session.sim;
        let mut event = fresh(ctx)
            .record(&from)
            .unwrap()
            .wait_and_reset(&from)
            .unwrap();
        sim.sleep_kernel(to.as_raw(), 30_000);
        for _ in 0..64 {
            event = join_once(sim, event, &from, &to).unwrap();
        }
        to.synchronize().unwrap(); // 64 joins pooled
        ctx.set_join_capacity(1).unwrap();
        sim.sleep_kernel(to.as_raw(), 30_000);
        let mut accepted = 0;
        let event = loop {
            match event.try_record(&to) {
                Ok(recorded) => {
                    accepted += 1;
                    sim.sleep_kernel(from.as_raw(), 20);
                    event = recorded.wait_and_reset(&from).unwrap();
                    if accepted > 100 {
                        break event;
                    }
                }
                Err(failed) => break failed.into_parts().1,
            }
        };
        to.synchronize().unwrap();
        event.destroy().unwrap();
        to.destroy().unwrap();
        from.destroy().unwrap();
        assert_eq!(accepted, 1, "joins waiting past a capacity of 1");
    }
    assert_no_findings(&session.finish());
}

/// A loop that synchronises no stream nor the device, only its event (the host reads its
/// result): no stream or device synchronisation the program did not write, one query per
/// 64 joins, and no join event created once 64 exist.
#[test]
fn e9_a_loop_that_never_synchronises_hides_no_synchronisation() {
    const ROUNDS: u64 = 2000;
    let session = Session::start();
    {
        let device = session.default_device(0);
        let ctx: &Context<'_> = &device;
        let from = ctx.create_stream().unwrap();
        let to = ctx.create_stream().unwrap();
        let sim = &session.sim;
        let mut event = fresh(ctx)
            .record(&from)
            .unwrap()
            .wait_and_reset(&from)
            .unwrap();
        for _ in 0..200 {
            event = join_once(sim, event, &from, &to).unwrap();
        }
        sim.reset_call_counts();
        for _ in 0..ROUNDS {
            let recorded = event.record(&to).unwrap();
            // The host reads what the event stands for (an event synchronisation the
            // program asks for): `to` is idle at times, never synchronised.
            recorded.synchronize().unwrap();
            event = recorded.wait_and_reset(&from).unwrap();
        }
        assert_eq!(sim.call_count("aclrtSynchronizeEvent"), ROUNDS);
        for call in [
            "aclrtSynchronizeStream",
            "aclrtSynchronizeStreamWithTimeout",
            "aclrtSynchronizeDevice",
        ] {
            assert_eq!(sim.call_count(call), 0, "{call}: a hidden synchronisation");
        }
        assert!(sim.call_count("aclrtStreamQuery") <= ROUNDS / 64 + 1);
        // The query answers idle only if `to` drained: allow a few creations, not one per join.
        let created = sim.call_count("aclrtCreateEventWithFlag");
        assert!(
            created <= 64,
            "{created} join events created in {ROUNDS} joins"
        );
        event.destroy().unwrap();
        to.destroy().unwrap();
        from.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// A panic in wait scopes whose `also_wait` needs a join (the event's previous reset is on
/// another stream, still pending) and whose reset needs joins from the other waiting
/// streams, repeated past the pool's size with no synchronisation between: the scopes
/// reset on unwind, the joins are reused or released, nothing is left.
#[test]
fn e5_e9_panicking_wait_scopes_with_joins_in_a_loop() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let ctx: &Context<'_> = &device;
        let s = [
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        ];
        let sim = &session.sim;
        let baseline = sim.live_objects();
        let mut event: Event<'_, Reset> = fresh(ctx);
        for i in 0..150usize {
            let (r, w1, w2) = (&s[i % 3], &s[(i + 1) % 3], &s[(i + 2) % 3]);
            sim.sleep_kernel(w2.as_raw(), 30);
            let recorded: Event<'_, Recorded> = event.record(r).unwrap();
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                recorded.wait(w1, |mut w| {
                    w.also_wait(w2)?;
                    if i % 2 == 0 {
                        panic!("a panic inside the wait scope");
                    }
                    w.reset()
                })
            }));
            event = match caught {
                Ok(reset) => reset.unwrap(),
                // The unwind guard reset and released the event.
                Err(_) => fresh(ctx),
            };
        }
        drop(event);
        for stream in &s {
            stream.synchronize().unwrap();
        }
        let [a, b, c] = s;
        a.destroy().unwrap();
        b.destroy().unwrap();
        c.destroy().unwrap();
        assert_eq!(sim.live_objects(), baseline - 3, "join events left");
    }
    assert_no_findings(&session.finish());
}

/// E9 in a stopped context (S6), no join and no fault needed: an event recorded on a busy
/// stream `s1` and waited on and reset by `s2`; the context stops; the program synchronises
/// `s2` (which reports the stop) and drops the event. Its release synchronises only `s2`
/// (its reset stream), which is done: the stop dropped its wait without waiting for the
/// record, so the record on `s1` (still queued behind the kernel) still refers to the event
/// when it is destroyed.
#[test]
fn s6_e9_event_dropped_after_its_reset_stream_reported_the_stop() {
    // Finding: `Event::release` trusts the reset stream alone after a stop (E9).
    isolated(|| {
        let session = Session::start();
        {
            let reports = Reports::capture();
            let acl = session.acl();
            let device = acl.set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let stops = ctx
                .create_stream_with(StreamConfig::new().stop_on_failure())
                .unwrap();
            let s1 = ctx.create_stream().unwrap();
            let s2 = ctx.create_stream().unwrap();
            let sim = &session.sim;
            let event = fresh(&ctx)
                .record(&s2)
                .unwrap()
                .wait_and_reset(&s2)
                .unwrap();
            sim.sleep_kernel(s1.as_raw(), 5_000);
            // A join into `s1` (after the reset on `s2`), then `s2` waits on the record.
            let event = event.record(&s1).unwrap().wait_and_reset(&s2).unwrap();
            sim.inject_task_failure(stops.as_raw(), 507_899);
            sim.sleep_kernel(stops.as_raw(), 10);
            assert!(stops.synchronize().is_err());
            assert!(s2.synchronize().is_err(), "s2 reports the stop");
            drop(event);
            let _ = s1.synchronize();
            s1.destroy().unwrap();
            s2.destroy().unwrap();
            stops.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
            drop(reports);
        }
        assert_no_findings(&session.finish());
    });
}
