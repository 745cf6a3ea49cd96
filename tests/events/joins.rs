//! One join per ordering need (E5): K events reset on one stream and recorded again on
//! another cost one join event per cycle, as the C program that joins once, not one per
//! event; the results stay ordered (zero checker findings: the simulator flags a record
//! that could run before the previous reset, E5) and a further reset needs a new join.

use crate::support;

use ascend_typestate::{Event, Reset};
use support::sim::Session;

/// Runs `cycles` cycles of K events: the producer records all K (after a short kernel),
/// then the consumer waits on and resets each; the host synchronises the producer only. Returns
/// the join events issued per cycle (records beyond the K the program makes).
fn joins_per_cycle(k: usize, cycles: usize) -> f64 {
    let session = Session::start();
    let per_cycle;
    {
        let ctx = session.default_device(0);
        let (producer, consumer) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut events: Vec<Option<Event<'_, Reset>>> = (0..k)
            .map(|_| Some(ctx.create_event().unwrap().into()))
            .collect();
        session.sim.reset_call_counts();
        for _ in 0..cycles {
            session.sim.sleep_kernel(producer.as_raw(), 20);
            // As the C program: every event recorded, then every event waited on and reset.
            let recorded: Vec<_> = events
                .iter_mut()
                .map(|slot| slot.take().unwrap().record(&producer).unwrap())
                .collect();
            for (slot, event) in events.iter_mut().zip(recorded) {
                *slot = Some(event.wait_and_reset(&consumer).unwrap());
            }
            producer.synchronize().unwrap();
        }
        let records = session.sim.call_count("aclrtRecordEvent");
        per_cycle = (records as f64 - (k * cycles) as f64) / cycles as f64;
        consumer.synchronize().unwrap();
        for event in events.into_iter().flatten() {
            event.destroy().unwrap();
        }
        producer.destroy().unwrap();
        consumer.destroy().unwrap();
    }
    support::sim::assert_no_findings(&session.finish());
    per_cycle
}

#[test]
fn e5_k_events_recorded_after_resets_on_another_stream_cost_one_join_per_cycle() {
    for k in [1usize, 8, 64] {
        let joins = joins_per_cycle(k, 20);
        // The first cycle has nothing to join after; each later one joins once.
        assert!(
            (0.9..=1.0).contains(&joins),
            "K = {k}: {joins} join events per cycle, want one"
        );
    }
}

/// A reset issued after the join needs a join of its own: two events, the second reset
/// after the first was recorded again.
#[test]
fn e5_a_reset_after_the_join_is_joined_again() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (producer, consumer) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let a: Event<'_, Reset> = ctx.create_event().unwrap().into();
        let b: Event<'_, Reset> = ctx.create_event().unwrap().into();
        let a = a
            .record(&producer)
            .unwrap()
            .wait_and_reset(&consumer)
            .unwrap();
        session.sim.reset_call_counts();
        // Joined once after `a`'s reset...
        let a = a.record(&producer).unwrap();
        assert_eq!(
            session.sim.call_count("aclrtRecordEvent"),
            2,
            "a join, then a"
        );
        // ... `b` reset on the consumer after that join: recording `b` needs another.
        let b = b
            .record(&producer)
            .unwrap()
            .wait_and_reset(&consumer)
            .unwrap();
        session.sim.reset_call_counts();
        let b = b.record(&producer).unwrap();
        assert_eq!(
            session.sim.call_count("aclrtRecordEvent"),
            2,
            "a join, then b"
        );
        let a = a.wait_and_reset(&consumer).unwrap();
        let b = b.wait_and_reset(&consumer).unwrap();
        consumer.synchronize().unwrap();
        a.destroy().unwrap();
        b.destroy().unwrap();
        producer.destroy().unwrap();
        consumer.destroy().unwrap();
    }
    support::sim::assert_no_findings(&session.finish());
}
