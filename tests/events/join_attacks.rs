//! One join per ordering need (E5) under attack: a stream remembers the last join that
//! ordered it after another stream's resets (that stream's id and reset count) and skips
//! later joins from it while that stream issues no further reset. These programs try to
//! make a record or a wait run before an event's previous reset on another stream: resets
//! issued on another thread around the join, three streams, a destroyed resetting stream and
//! a new one, wait scopes with several waiting streams, `reset_completed` (E10), and joins
//! whose runtime calls fail. Every reset is delayed behind a sleep kernel, so that a
//! skipped join would let the simulator see the record or wait overtake it (an E5 finding).
//!
//! Safe code only; the simulator's extension API launches sleep kernels, injects faults and
//! counts calls.

use crate::support;

use std::sync::mpsc;

use ascend_typestate::{Event, Recorded, Reset, Stream};
use support::sim::{Session, assert_no_findings};

/// `ACL_ERROR_RT_INTERNAL_ERROR`.
const FAULT: i32 = 507000;

/// A delay long enough that an unordered task on another stream overtakes the reset.
const SLOW: u64 = 2_000;

fn fresh<'s>(ctx: &'s ascend_typestate::Context<'s>) -> Event<'s, Reset> {
    ctx.create_event().unwrap().into()
}

/// The consumer stream lives on a scoped thread (a `&mut Stream` is `Send`): it waits on and
/// resets each event behind a sleep kernel, while the producer thread records the events it
/// gets back, so the producer's join reads the consumer's reset count while the consumer
/// issues more resets, and the skip is decided against a count that moves.
#[test]
fn e5_resets_on_another_thread_while_the_producer_joins_and_records() {
    const K: usize = 6;
    const ROUNDS: usize = 40;
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let producer = ctx.create_stream().unwrap();
        let mut consumer = ctx.create_stream().unwrap();
        let sim = &session.sim;
        let mut kept: Vec<Event<'_, Reset>> = Vec::new();
        std::thread::scope(|sc| {
            let (to_consumer, from_producer) = mpsc::channel::<Event<'_, Recorded>>();
            let (to_producer, from_consumer) = mpsc::channel::<Event<'_, Reset>>();
            let c: &mut Stream<'_> = &mut consumer;
            let worker = sc.spawn(move || {
                let c: &Stream<'_> = c;
                c.synchronize().unwrap(); // binds the context on this thread (D6)
                for (i, event) in from_producer.into_iter().enumerate() {
                    sim.sleep_kernel(c.as_raw(), if i % 3 == 0 { SLOW } else { 150 });
                    let event = if i % 4 == 1 {
                        // A wait scope: the reset follows a kernel inside the scope.
                        event
                            .wait(c, |w| {
                                sim.sleep_kernel(c.as_raw(), 300);
                                w.reset()
                            })
                            .unwrap()
                    } else {
                        event.wait_and_reset(c).unwrap()
                    };
                    if to_producer.send(event).is_err() {
                        break;
                    }
                }
                c.synchronize().unwrap();
            });
            for _ in 0..K {
                let event = fresh(&ctx).record(&producer).unwrap();
                to_consumer.send(event).unwrap();
            }
            for i in 0..K * ROUNDS {
                let event = from_consumer.recv().unwrap();
                if i < K * (ROUNDS - 1) {
                    sim.sleep_kernel(producer.as_raw(), 20);
                    to_consumer.send(event.record(&producer).unwrap()).unwrap();
                } else {
                    kept.push(event);
                }
            }
            drop(to_consumer);
            worker.join().unwrap();
        });
        producer.synchronize().unwrap();
        for event in kept {
            event.destroy().unwrap();
        }
        producer.destroy().unwrap();
        consumer.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// Same, but the consumer thread also resets events of its own (recorded and reset on the
/// consumer, `reset_completed` after a synchronisation) between the producer's events, so
/// that its reset count moves by resets the producer never sees as an event's last reset.
#[test]
fn e5_unrelated_resets_on_the_consumer_thread_between_joins() {
    const ROUNDS: usize = 60;
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let producer = ctx.create_stream().unwrap();
        let mut consumer = ctx.create_stream().unwrap();
        let sim = &session.sim;
        let mut kept: Vec<Event<'_, Reset>> = Vec::new();
        std::thread::scope(|sc| {
            let (to_consumer, from_producer) = mpsc::channel::<Event<'_, Recorded>>();
            let (to_producer, from_consumer) = mpsc::channel::<Event<'_, Reset>>();
            let c: &mut Stream<'_> = &mut consumer;
            let ctx: &ascend_typestate::Context<'_> = &ctx;
            let worker = sc.spawn(move || {
                let c: &Stream<'_> = c;
                c.synchronize().unwrap();
                let mut own: Event<'_, Reset> = fresh(ctx);
                for (i, event) in from_producer.into_iter().enumerate() {
                    sim.sleep_kernel(c.as_raw(), SLOW);
                    let event = event.wait_and_reset(c).unwrap();
                    // Resets of the consumer's own event around the send.
                    let recorded = own.record(c).unwrap();
                    if i % 2 == 0 {
                        recorded.synchronize().unwrap();
                        own = recorded.reset_completed(c).unwrap();
                    } else {
                        own = recorded.wait_and_reset(c).unwrap();
                    }
                    if to_producer.send(event).is_err() {
                        break;
                    }
                    sim.sleep_kernel(c.as_raw(), 100);
                    own = own.record(c).unwrap().wait_and_reset(c).unwrap();
                }
                c.synchronize().unwrap();
                own.destroy().unwrap();
            });
            to_consumer
                .send(fresh(ctx).record(&producer).unwrap())
                .unwrap();
            to_consumer
                .send(fresh(ctx).record(&producer).unwrap())
                .unwrap();
            for i in 0..2 * ROUNDS {
                let event = from_consumer.recv().unwrap();
                if i < 2 * (ROUNDS - 1) {
                    to_consumer.send(event.record(&producer).unwrap()).unwrap();
                } else {
                    kept.push(event);
                }
            }
            drop(to_consumer);
            worker.join().unwrap();
        });
        producer.synchronize().unwrap();
        for event in kept {
            event.destroy().unwrap();
        }
        producer.destroy().unwrap();
        consumer.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// Three streams: events reset alternately on A and on B, all recorded again on C (whose
/// remembered join flips between A and B), some reset on C itself (E10) in between.
#[test]
fn e5_three_streams_resets_alternate_between_two_consumers() {
    const K: usize = 6;
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (a, b, c) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let mut events: Vec<Event<'_, Reset>> = (0..K).map(|_| fresh(&ctx)).collect();
        for cycle in 0..12 {
            session.sim.sleep_kernel(c.as_raw(), 30);
            let recorded: Vec<_> = events.drain(..).map(|e| e.record(&c).unwrap()).collect();
            session.sim.sleep_kernel(a.as_raw(), SLOW);
            session.sim.sleep_kernel(b.as_raw(), SLOW / 2);
            for (i, event) in recorded.into_iter().enumerate() {
                let event = match (i + cycle) % 3 {
                    0 => event.wait_and_reset(&a).unwrap(),
                    1 => event.wait_and_reset(&b).unwrap(),
                    _ if cycle % 2 == 0 => {
                        event.synchronize().unwrap();
                        event.reset_completed(&c).unwrap()
                    }
                    _ => event.wait_and_reset(&c).unwrap(),
                };
                events.push(event);
            }
            // Interleaved: one event recorded on C and waited on by the other consumer.
            let first = events.remove(0);
            let first = first.record(&c).unwrap();
            let first = if cycle % 2 == 0 {
                first.wait_and_reset(&b).unwrap()
            } else {
                first.wait_and_reset(&a).unwrap()
            };
            events.insert(0, first);
        }
        a.synchronize().unwrap();
        b.synchronize().unwrap();
        c.synchronize().unwrap();
        for event in events {
            event.destroy().unwrap();
        }
        a.destroy().unwrap();
        b.destroy().unwrap();
        c.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// The producer is joined after stream A's resets (A has issued one), then A is destroyed
/// (plainly or forced, S8) and a new stream A2 is created that has issued one reset too,
/// still pending behind a kernel. A2 is not A: recording after A2's reset must join.
#[test]
fn e5_a_new_stream_with_the_same_reset_count_is_not_the_destroyed_one() {
    for forced in [false, true] {
        let session = Session::start();
        {
            let ctx = session.default_device(0);
            let producer = ctx.create_stream().unwrap();
            {
                let a = ctx.create_stream().unwrap();
                let e = fresh(&ctx)
                    .record(&producer)
                    .unwrap()
                    .wait_and_reset(&a)
                    .unwrap();
                session.sim.reset_call_counts();
                let e = e.record(&producer).unwrap(); // joined after A's one reset
                assert_eq!(session.sim.call_count("aclrtRecordEvent"), 2);
                e.synchronize().unwrap();
                let e = e.reset_completed(&producer).unwrap();
                e.destroy().unwrap();
                a.synchronize().unwrap();
                if forced {
                    a.destroy_force().unwrap();
                } else {
                    a.destroy().unwrap();
                }
            }
            let a2 = ctx.create_stream().unwrap();
            let f = fresh(&ctx).record(&producer).unwrap();
            session.sim.sleep_kernel(a2.as_raw(), SLOW);
            let f = f.wait_and_reset(&a2).unwrap(); // A2's first reset, pending
            session.sim.reset_call_counts();
            let f = f.record(&producer).unwrap();
            assert_eq!(
                session.sim.call_count("aclrtRecordEvent"),
                2,
                "forced = {forced}: a join after A2's reset, then f"
            );
            let f = f.wait_and_reset(&a2).unwrap();
            a2.synchronize().unwrap();
            f.destroy().unwrap();
            a2.destroy().unwrap();
            producer.destroy().unwrap();
        }
        assert_no_findings(&session.finish());
    }
}

/// Wait scopes with several waiting streams: the waits of `also_wait` are joined after the
/// previous reset (or skip it on a remembered join), the reset is joined after every wait,
/// and the next scope resets on another of the waiting streams.
#[test]
fn e5_also_wait_scopes_with_joined_resets_rotate_the_resetting_stream() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let p = ctx.create_stream().unwrap();
        let qs = [
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        ];
        let mut events: Vec<Event<'_, Reset>> = (0..4).map(|_| fresh(&ctx)).collect();
        for cycle in 0..15 {
            session.sim.sleep_kernel(p.as_raw(), 20);
            let recorded: Vec<_> = events.drain(..).map(|e| e.record(&p).unwrap()).collect();
            for (i, event) in recorded.into_iter().enumerate() {
                let first = &qs[(i + cycle) % 3];
                let second = &qs[(i + cycle + 1) % 3];
                let third = &qs[(i + cycle + 2) % 3];
                session.sim.sleep_kernel(second.as_raw(), SLOW);
                let event = event
                    .wait(first, |mut w| {
                        w.also_wait(second)?;
                        if i % 2 == 0 {
                            w.also_wait(third)?;
                            w.also_wait(&p)?;
                        }
                        w.reset()
                    })
                    .unwrap();
                events.push(event);
            }
        }
        for q in &qs {
            q.synchronize().unwrap();
        }
        for event in events {
            event.destroy().unwrap();
        }
        for q in qs {
            q.destroy().unwrap();
        }
        p.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// A waiting stream that some other event's record joined after the consumer's resets
/// skips the join of its wait: the wait must still follow the event's previous reset.
#[test]
fn e5_a_wait_skips_its_join_only_after_a_covering_join_on_that_stream() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (p, c, q) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let e = fresh(&ctx).record(&p).unwrap().wait_and_reset(&c).unwrap();
        let f = fresh(&ctx).record(&p).unwrap();
        session.sim.sleep_kernel(c.as_raw(), SLOW);
        let f = f.wait_and_reset(&c).unwrap(); // the last reset on c, late
        let e = e.record(&p).unwrap(); // p joined after c
        let f = f.record(&q).unwrap(); // q joined after c
        session.sim.reset_call_counts();
        // e's previous reset is on c: q waits on it without a join (q was joined).
        let e = e.wait_and_reset(&q).unwrap();
        assert_eq!(session.sim.call_count("aclrtRecordEvent"), 0);
        // and p waits on f (recorded on q) without a join of its own either.
        let f = f.wait_and_reset(&p).unwrap();
        q.synchronize().unwrap();
        p.synchronize().unwrap();
        c.synchronize().unwrap();
        e.destroy().unwrap();
        f.destroy().unwrap();
        for s in [p, c, q] {
            s.destroy().unwrap();
        }
    }
    assert_no_findings(&session.finish());
}

/// E10: K events reset with `reset_completed` on a consumer whose resets wait behind a long
/// kernel, then all recorded on the producer: one join, and ordered.
#[test]
fn e5_reset_completed_on_one_stream_then_records_on_another() {
    const K: usize = 5;
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (p, c, q) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let mut events: Vec<Event<'_, Reset>> = (0..K).map(|_| fresh(&ctx)).collect();
        for cycle in 0..6 {
            let recorded: Vec<_> = events.drain(..).map(|e| e.record(&p).unwrap()).collect();
            recorded.last().unwrap().synchronize().unwrap();
            session.sim.sleep_kernel(c.as_raw(), SLOW);
            for event in recorded {
                // Proven complete by the query (the last one synchronised).
                events.push(event.reset_completed(&c).unwrap());
            }
            if cycle % 2 == 1 {
                // A wait on q after those resets, then a record on p.
                let first = events.remove(0);
                let first = first.record(&p).unwrap().wait_and_reset(&q).unwrap();
                events.insert(0, first);
            }
            session.sim.reset_call_counts();
            let recorded: Vec<_> = events.drain(..).map(|e| e.record(&p).unwrap()).collect();
            assert!(session.sim.call_count("aclrtRecordEvent") <= K as u64 + 2);
            session.sim.sleep_kernel(q.as_raw(), 200);
            for event in recorded {
                events.push(event.wait_and_reset(&q).unwrap());
            }
        }
        for s in [&p, &c, &q] {
            s.synchronize().unwrap();
        }
        for event in events {
            event.destroy().unwrap();
        }
        for s in [p, c, q] {
            s.destroy().unwrap();
        }
    }
    assert_no_findings(&session.finish());
}

/// `wait_and_reset` right after each event's `record`: every record follows a reset on the
/// consumer issued after the producer's last join, so each needs a join of its own.
#[test]
fn e5_wait_and_reset_interleaved_with_each_record() {
    const K: usize = 4;
    const CYCLES: usize = 10;
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (p, c) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut events: Vec<Option<Event<'_, Reset>>> = (0..K).map(|_| Some(fresh(&ctx))).collect();
        session.sim.reset_call_counts();
        for _ in 0..CYCLES {
            for slot in events.iter_mut() {
                let event = slot.take().unwrap();
                session.sim.sleep_kernel(c.as_raw(), 400);
                *slot = Some(event.record(&p).unwrap().wait_and_reset(&c).unwrap());
            }
        }
        // One record per event per cycle, and a join before each after the first cycle.
        let records = session.sim.call_count("aclrtRecordEvent");
        assert_eq!(records, (K * CYCLES + K * (CYCLES - 1)) as u64);
        c.synchronize().unwrap();
        for event in events.into_iter().flatten() {
            event.destroy().unwrap();
        }
        p.destroy().unwrap();
        c.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// A join whose runtime call fails (its event's creation, record, or wait) is not
/// remembered: the record fails and gives the event back, the next record joins again, and
/// a second event reset on the consumer then needs no join. A failure of the event's own
/// record after a successful join keeps the join.
#[test]
fn e5_a_failed_join_is_not_remembered() {
    // (call, calls of it to let pass first, whether the join itself fails)
    let cases = [
        ("aclrtCreateEventWithFlag", 0, true),
        ("aclrtRecordEvent", 0, true),
        ("aclrtStreamWaitEvent", 0, true),
        ("aclrtRecordEvent", 1, false), // the join passes; the event's record fails
        ("aclrtResetEvent", 0, false),  // the join's reset, tried again
    ];
    for (call, skip, join_fails) in cases {
        let session = Session::start();
        {
            let ctx = session.default_device(0);
            let (p, c) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            let e = fresh(&ctx).record(&p).unwrap();
            let f = fresh(&ctx).record(&p).unwrap();
            session.sim.sleep_kernel(c.as_raw(), SLOW);
            let e = e.wait_and_reset(&c).unwrap();
            let f = f.wait_and_reset(&c).unwrap();
            session.sim.inject_fault_at(call, FAULT, skip, 1);
            let e = match e.try_record(&p) {
                Ok(e) => {
                    assert!(
                        call == "aclrtResetEvent",
                        "{call}: the injected fault did not fail the record"
                    );
                    e
                }
                Err(failed) => {
                    let (_, e) = failed.into_parts();
                    session.sim.clear_faults();
                    session.sim.reset_call_counts();
                    let e = e.record(&p).unwrap();
                    let records = session.sim.call_count("aclrtRecordEvent");
                    if join_fails {
                        assert_eq!(records, 2, "{call}: a failed join was remembered");
                    } else {
                        assert_eq!(records, 1, "{call}: the join that passed was lost");
                    }
                    e
                }
            };
            session.sim.clear_faults();
            session.sim.reset_call_counts();
            let f = f.record(&p).unwrap();
            assert_eq!(
                session.sim.call_count("aclrtRecordEvent"),
                1,
                "{call}: f follows the same resets"
            );
            let e = e.wait_and_reset(&c).unwrap();
            let f = f.wait_and_reset(&c).unwrap();
            c.synchronize().unwrap();
            p.synchronize().unwrap();
            e.destroy().unwrap();
            f.destroy().unwrap();
            p.destroy().unwrap();
            c.destroy().unwrap();
        }
        assert_no_findings(&session.finish());
    }
}

/// A join whose wait fails leaves its record on the consumer; the failed wait of a scope
/// (the event's own `aclrtStreamWaitEvent`, after a join that passed) keeps the join: the
/// event comes back *Recorded*, and its next wait on the same stream needs none.
#[test]
fn e5_a_failed_wait_after_a_join_keeps_the_join() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (p, c, q) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let e = fresh(&ctx).record(&p).unwrap();
        session.sim.sleep_kernel(c.as_raw(), SLOW);
        let e = e.wait_and_reset(&c).unwrap();
        let e = e.record(&c).unwrap(); // same stream: no join
        // q's wait: the join passes, the event's wait fails.
        session
            .sim
            .inject_fault_at("aclrtStreamWaitEvent", FAULT, 1, 1);
        let e = match e.try_wait_and_reset(&q) {
            Err(ascend_typestate::WaitError::NotWaited(failed)) => failed.into_parts().1,
            other => panic!("expected the wait to fail: {other:?}"),
        };
        session.sim.clear_faults();
        session.sim.reset_call_counts();
        let e = e.wait_and_reset(&q).unwrap();
        assert_eq!(session.sim.call_count("aclrtRecordEvent"), 0);
        for s in [&p, &c, &q] {
            s.synchronize().unwrap();
        }
        e.destroy().unwrap();
        for s in [p, c, q] {
            s.destroy().unwrap();
        }
    }
    assert_no_findings(&session.finish());
}

/// Long kernels on the consumer: K events waited on and reset behind a kernel much longer
/// than the producer's work, then all recorded again and waited on by a third stream, and
/// the producer's records interleaved with more resets on the consumer.
#[test]
fn e5_long_consumer_kernels_let_no_record_overtake_a_reset() {
    const K: usize = 8;
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (p, c, w) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let mut events: Vec<Event<'_, Reset>> = (0..K).map(|_| fresh(&ctx)).collect();
        for cycle in 0..8 {
            let recorded: Vec<_> = events.drain(..).map(|e| e.record(&p).unwrap()).collect();
            session.sim.sleep_kernel(c.as_raw(), 4 * SLOW);
            let half = K / 2 + cycle % 3;
            let mut recorded = recorded.into_iter();
            for event in recorded.by_ref().take(half) {
                events.push(event.wait_and_reset(&c).unwrap());
            }
            // The first half recorded again (joined once) while the rest is still waited on.
            let again: Vec<_> = events.drain(..).map(|e| e.record(&p).unwrap()).collect();
            for event in recorded {
                events.push(event.wait_and_reset(&c).unwrap());
            }
            session.sim.sleep_kernel(w.as_raw(), 50);
            for event in again {
                events.insert(0, event.wait_and_reset(&w).unwrap());
            }
            // The second half's resets came after the producer's join: joined again.
            let rest: Vec<_> = events.drain(half..).collect();
            let rest: Vec<_> = rest.into_iter().map(|e| e.record(&p).unwrap()).collect();
            for event in rest {
                events.push(event.wait_and_reset(&w).unwrap());
            }
        }
        for s in [&p, &c, &w] {
            s.synchronize().unwrap();
        }
        for event in events {
            event.destroy().unwrap();
        }
        for s in [p, c, w] {
            s.destroy().unwrap();
        }
    }
    assert_no_findings(&session.finish());
}
