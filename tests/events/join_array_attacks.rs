//! The join array (`src/typed/join.rs`: one array per stream, `[..waiting]` waited on
//! since the stream's last synchronisation, `[waiting..]` done and reused) under attack.
//! A join takes the first done entry and marks it waiting only once its record, wait and
//! reset are issued: these programs try to reuse or destroy an entry while its calls are
//! in flight or its wait may be pending.
//!
//! Safe code only; the simulator's extension API launches sleep kernels, injects faults and
//! reads findings.

use crate::support;

use std::cell::{Cell, RefCell};

use ascend_typestate::{Context, Error, Event, Reset, Stream};
use support::isolated::isolated;
use support::sim::{Sim, leaked_runtime};

/// `ACL_ERROR_RT_INTERNAL_ERROR`.
const FAULT: i32 = 507000;

/// What the drop-error handler reports when a join's reset failed once and is tried again.
const RESET_TRIED_AGAIN: &str = "join event (a reset tried again)";

/// A context whose handles the drop-error handler (a `fn`) can reach: leaked, `'static`.
fn leaked() -> (&'static Context<'static>, Sim) {
    let (acl, sim) = leaked_runtime();
    let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx: &'static Context<'static> = Box::leak(Box::new(device.create_context().unwrap()));
    (ctx, sim)
}

fn leak_stream(ctx: &'static Context<'static>) -> &'static Stream<'static> {
    Box::leak(Box::new(ctx.create_stream().unwrap()))
}

/// What the handler of this thread may use: a stream is not `Sync`, so no `static`.
struct Reach {
    to: Cell<Option<&'static Stream<'static>>>,
    spare: RefCell<Option<Event<'static, Reset>>>,
    acted: Cell<bool>,
    log: RefCell<Vec<String>>,
}

thread_local! {
    static REACH: Reach = const {
        Reach {
            to: Cell::new(None),
            spare: RefCell::new(None),
            acted: Cell::new(false),
            log: RefCell::new(Vec::new()),
        }
    };
}

fn findings_text(sim: &Sim) -> Vec<String> {
    sim.findings()
        .into_iter()
        .map(|f| format!("{}: {}", f.rule, f.message))
        .collect()
}

// ---- 1. A handler that joins into the same stream while a join's reset is retried -------

/// The handler records a spare event (its last reset on the same stream as the join's
/// source) on the join's target: a second join into the same stream, issued while the
/// first join's reset has failed once and is about to be tried again.
fn join_again_handler(what: &'static str, error: &Error) {
    REACH.with(|r| {
        r.log.borrow_mut().push(format!("{what}: {error}"));
        if what != RESET_TRIED_AGAIN || r.acted.replace(true) {
            return;
        }
        let (Some(to), Some(spare)) = (r.to.get(), r.spare.borrow_mut().take()) else {
            return;
        };
        match spare.record(to) {
            Ok(recorded) => {
                let _ = recorded.synchronize();
                r.log.borrow_mut().push("handler: spare recorded".into());
            }
            Err(e) => r
                .log
                .borrow_mut()
                .push(format!("handler: spare record: {e}")),
        }
    });
}

/// A join into `to` (an event reset on `from`, recorded on `to`) whose reset fails once:
/// while it is tried again, the drop-error handler records another event whose last reset
/// is on `from` on `to`, which needs a join into `to` too. The second join must not take
/// the first one's event, which `to` has waited on and which is not reset yet (E4).
#[test]
fn e4_a_handler_join_during_a_join_reset_retry_takes_another_event() {
    isolated(|| {
        let (ctx, sim) = leaked();
        let from = leak_stream(ctx);
        let to = leak_stream(ctx);
        let e1: Event<'_, Reset> = ctx.create_event().unwrap().into();
        let e2: Event<'_, Reset> = ctx.create_event().unwrap().into();
        // Both reset on `from`, behind a kernel: resets pending.
        sim.sleep_kernel(from.as_raw(), 5_000);
        let e1 = e1.record(from).unwrap().wait_and_reset(from).unwrap();
        let e2 = e2.record(from).unwrap().wait_and_reset(from).unwrap();
        REACH.with(|r| {
            r.to.set(Some(to));
            *r.spare.borrow_mut() = Some(e2);
        });
        ascend_typestate::set_drop_error_handler(join_again_handler);
        // The join's reset (the first reset after this) fails once.
        sim.inject_fault("aclrtResetEvent", FAULT, 1);
        let recorded = e1.record(to);
        sim.clear_faults();
        let log = REACH.with(|r| r.log.borrow().clone());
        println!("record -> {:?}\nreports: {log:#?}", recorded.as_ref().err());
        let recorded = recorded.unwrap();
        recorded.synchronize().unwrap();
        drop(recorded);
        to.synchronize().unwrap();
        from.synchronize().unwrap();
        ctx.synchronize_device().unwrap();
        let findings = findings_text(&sim);
        assert!(
            REACH.with(|r| r.acted.get()),
            "the handler never ran: {log:#?}"
        );
        assert!(findings.is_empty(), "checker findings: {findings:#?}");
    });
}

// ---- 2. A handler that synchronises the stream while a join's reset is retried ---------

fn sync_handler(what: &'static str, error: &Error) {
    REACH.with(|r| {
        r.log.borrow_mut().push(format!("{what}: {error}"));
        if what != RESET_TRIED_AGAIN || r.acted.replace(true) {
            return;
        }
        if let Some(to) = r.to.get() {
            let s = to.synchronize();
            r.log
                .borrow_mut()
                .push(format!("handler: to.synchronize -> {s:?}"));
        }
    });
}

/// `waiting` joins wait on `to` (busy behind a kernel, never synchronised), then one more
/// join whose reset fails once; the handler synchronises `to` meanwhile. With more entries
/// than the pool keeps (64), that synchronisation destroys the entries past the pool's
/// size, the in-flight join among them: destroyed after its wait without a reset (E4),
/// then reset (a destroyed handle).
fn sync_during_reset_retry(waiting: usize) {
    let (ctx, sim) = leaked();
    let from = leak_stream(ctx);
    let to = leak_stream(ctx);
    let mut event: Event<'_, Reset> = ctx
        .create_event()
        .unwrap()
        .record(from)
        .unwrap()
        .wait_and_reset(from)
        .unwrap();
    sim.sleep_kernel(to.as_raw(), 20_000);
    for _ in 0..waiting {
        event = event.record(to).unwrap().wait_and_reset(from).unwrap();
    }
    REACH.with(|r| r.to.set(Some(to)));
    ascend_typestate::set_drop_error_handler(sync_handler);
    sim.inject_fault("aclrtResetEvent", FAULT, 1);
    let recorded = event.record(to);
    sim.clear_faults();
    let log = REACH.with(|r| r.log.borrow().clone());
    println!("record -> {:?}\nreports: {log:#?}", recorded.as_ref().err());
    assert!(REACH.with(|r| r.acted.get()), "the handler never ran");
    let recorded = recorded.unwrap();
    let event = recorded.wait_and_reset(from).unwrap();
    to.synchronize().unwrap();
    from.synchronize().unwrap();
    drop(event);
    ctx.synchronize_device().unwrap();
    let findings = findings_text(&sim);
    assert!(findings.is_empty(), "checker findings: {findings:#?}");
}

#[test]
fn e4_e9_a_handler_synchronises_the_stream_of_a_join_being_reset_past_the_pool() {
    isolated(|| sync_during_reset_retry(65));
}

/// Same with few entries (the inline case of `synchronized`: the boundary moved to 0, the
/// in-flight join then a done entry that is not the first).
#[test]
fn e4_a_handler_synchronises_the_stream_of_a_join_being_reset_within_the_pool() {
    isolated(|| sync_during_reset_retry(3));
}

// ---- 3. A join's reset refused with the stop code in a context that cannot stop -------

/// The join's reset fails with 107023 (`ACL_ERROR_RT_STREAM_ABORT`, the code of a stopped
/// context, S6) every time it is tried, in a context without a stop-on-failure stream: the
/// join was waited on and never reset, so it must not be destroyed (E4) as after a stop.
#[test]
fn e4_a_join_reset_refused_with_the_stop_code_in_a_context_that_cannot_stop() {
    isolated(|| {
        let (ctx, sim) = leaked();
        let reports = support::isolated::Reports::capture();
        let from = leak_stream(ctx);
        let to = leak_stream(ctx);
        sim.sleep_kernel(from.as_raw(), 2_000);
        let event: Event<'_, Reset> = ctx
            .create_event()
            .unwrap()
            .record(from)
            .unwrap()
            .wait_and_reset(from)
            .unwrap();
        sim.inject_fault("aclrtResetEvent", 107_023, 50);
        let outcome = event.try_record(to);
        sim.clear_faults();
        let Err(failed) = outcome else {
            panic!("recorded with every reset refused");
        };
        let (error, event) = failed.into_parts();
        println!("record -> {error:?}");
        to.synchronize().unwrap();
        from.synchronize().unwrap();
        drop(event);
        ctx.synchronize_device().unwrap();
        println!("reports: {:#?}", reports.take());
        let findings = findings_text(&sim);
        assert!(findings.is_empty(), "checker findings: {findings:#?}");
    });
}

/// The same for an event's own reset (`wait_and_reset`, then a wait scope): refused with
/// the stop code every time, in a context that cannot stop, the waited event is kept, not
/// destroyed unreset (E4).
#[test]
fn e4_an_event_reset_refused_with_the_stop_code_in_a_context_that_cannot_stop() {
    isolated(|| {
        let (ctx, sim) = leaked();
        let reports = support::isolated::Reports::capture();
        let a = leak_stream(ctx);
        let b = leak_stream(ctx);
        for scoped in [false, true] {
            let recorded = ctx.create_event().unwrap().record(a).unwrap();
            sim.inject_fault("aclrtResetEvent", 107_023, 50);
            let outcome = if scoped {
                recorded.try_wait(b, |w| w.reset()).map(drop)
            } else {
                recorded.try_wait_and_reset(b).map(drop)
            };
            sim.clear_faults();
            println!("scoped {scoped}: {:?}", outcome.as_ref().err());
            drop(outcome);
            a.synchronize().unwrap();
            b.synchronize().unwrap();
        }
        ctx.synchronize_device().unwrap();
        println!("reports: {:#?}", reports.take());
        let findings = findings_text(&sim);
        assert!(findings.is_empty(), "checker findings: {findings:#?}");
    });
}

// ---- 4. Every call of a join loop failing, with a handler that does things -------------

/// What the sweep's handler does on every report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    Nothing,
    /// Records the spare event (last reset on `from`) on `to`: a join into `to`.
    JoinInto,
    SyncTo,
    SyncDevice,
}

struct Sweeping {
    act: Cell<Act>,
    busy: Cell<bool>,
    ctx: Cell<Option<&'static Context<'static>>>,
    from: Cell<Option<&'static Stream<'static>>>,
    to: Cell<Option<&'static Stream<'static>>>,
    spare: RefCell<Option<Event<'static, Reset>>>,
    reports: Cell<usize>,
}

thread_local! {
    static SWEEPING: Sweeping = const {
        Sweeping {
            act: Cell::new(Act::Nothing),
            busy: Cell::new(false),
            ctx: Cell::new(None),
            from: Cell::new(None),
            to: Cell::new(None),
            spare: RefCell::new(None),
            reports: Cell::new(0),
        }
    };
}

fn acting_handler(_what: &'static str, _error: &Error) {
    SWEEPING.with(|s| {
        s.reports.set(s.reports.get() + 1);
        // Not again from inside its own action.
        if s.busy.replace(true) {
            return;
        }
        let (Some(ctx), Some(from), Some(to)) = (s.ctx.get(), s.from.get(), s.to.get()) else {
            s.busy.set(false);
            return;
        };
        match s.act.get() {
            Act::Nothing => {}
            Act::JoinInto => {
                let spare = s.spare.borrow_mut().take();
                if let Some(spare) = spare {
                    let back = spare
                        .record(to)
                        .and_then(|recorded| recorded.wait_and_reset(from));
                    if let Ok(back) = back {
                        *s.spare.borrow_mut() = Some(back);
                    }
                }
            }
            Act::SyncTo => drop(to.synchronize()),
            Act::SyncDevice => drop(ctx.synchronize_device()),
        }
        s.busy.set(false);
    });
}

/// An event whose last reset is on `from`, still pending behind a short kernel.
fn reset_on(
    sim: &Sim,
    ctx: &'static Context<'static>,
    from: &'static Stream<'static>,
) -> Option<Event<'static, Reset>> {
    sim.sleep_kernel(from.as_raw(), 5);
    let event = ctx.create_event().ok()?;
    let recorded = event.record(from).ok()?;
    recorded.wait_and_reset(from).ok()
}

/// One join into `to` and the event waited on and reset on `from` again; the event is
/// lost (released, or kept if unreset) on any failure.
fn join_step(
    sim: &Sim,
    event: Event<'static, Reset>,
    from: &'static Stream<'static>,
    to: &'static Stream<'static>,
) -> Option<Event<'static, Reset>> {
    sim.sleep_kernel(from.as_raw(), 5);
    let recorded = event.try_record(to).ok()?;
    recorded.try_wait_and_reset(from).ok()
}

/// The sweep's program: joins into `to` with `to` synchronised every 10 (the pool), then
/// 68 joins into `to` busy behind a kernel (past the pool: a query at the 64th, entries
/// beyond the pool's size), `to` synchronised, a few joins from the pool, and a device
/// synchronisation. `arm` runs once the streams and the events exist (it arms the fault).
fn sweep_program(sim: &Sim, ctx: &'static Context<'static>, arm: impl FnOnce()) {
    let from = leak_stream(ctx);
    let to = leak_stream(ctx);
    let spare = reset_on(sim, ctx, from);
    SWEEPING.with(|s| {
        s.ctx.set(Some(ctx));
        s.from.set(Some(from));
        s.to.set(Some(to));
        *s.spare.borrow_mut() = spare;
    });
    let mut event = reset_on(sim, ctx, from);
    arm();
    for i in 0..100 {
        if i == 30 {
            sim.sleep_kernel(to.as_raw(), 3_000);
        }
        let current = match event.take() {
            Some(e) => e,
            None => match reset_on(sim, ctx, from) {
                Some(e) => e,
                None => continue,
            },
        };
        event = join_step(sim, current, from, to);
        if (i < 30 && i % 10 == 9) || i == 98 {
            let _ = to.synchronize();
        }
    }
    sim.clear_faults();
    drop(event);
    SWEEPING.with(|s| drop(s.spare.borrow_mut().take()));
    let _ = to.synchronize();
    let _ = from.synchronize();
    let _ = ctx.synchronize_device();
    let _ = ctx.synchronize_device();
}

const SWEPT: &[&str] = &[
    "aclrtRecordEvent",
    "aclrtStreamWaitEvent",
    "aclrtResetEvent",
    "aclrtCreateEventWithFlag",
    "aclrtDestroyEvent",
    "aclrtStreamQuery",
    "aclrtSynchronizeStream",
    "aclrtSynchronizeDevice",
];

/// Every call of [`sweep_program`] of the functions in [`SWEPT`] fails (once, or six times
/// in a row: through every retry), with the drop-error handler doing each [`Act`] on every
/// report: about 5,500 cases in one child process, a fresh context each. No checker
/// finding, no panic, no hang. Covers what no other sweep does: a handler that re-enters
/// the crate on the join's stream at every failure point, and joins past the pool's size in
/// the same program as the pool's reuse. Before the fix of `reset_again` (the failed join
/// taken out of the list first) 210 cases failed: `JoinInto` and `SyncTo` at each join's
/// reset (E4).
#[test]
fn e4_e5_e9_join_loop_faults_with_an_acting_handler() {
    support::isolated::isolated_with(
        support::isolated::Child::default().timeout(std::time::Duration::from_secs(600)),
        || {
            let (acl, sim) = leaked_runtime();
            let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
            ascend_typestate::set_drop_error_handler(acting_handler);
            // The clean run: how many calls each swept function gets after arming.
            let ctx: &'static Context<'static> =
                Box::leak(Box::new(device.create_context().unwrap()));
            sweep_program(&sim, ctx, || sim.reset_call_counts());
            let counts: Vec<(&str, u64)> = SWEPT.iter().map(|f| (*f, sim.call_count(f))).collect();
            println!("clean run: {counts:?}");
            let clean = findings_text(&sim);
            assert!(clean.is_empty(), "clean run: {clean:#?}");
            let mut failures = Vec::new();
            let mut cases = 0;
            for act in [Act::Nothing, Act::JoinInto, Act::SyncTo, Act::SyncDevice] {
                SWEEPING.with(|s| s.act.set(act));
                for &(call, count) in &counts {
                    for skip in 0..count {
                        for times in [1, 6] {
                            cases += 1;
                            let ctx: &'static Context<'static> =
                                Box::leak(Box::new(device.create_context().unwrap()));
                            sweep_program(&sim, ctx, || {
                                sim.inject_fault_at(call, FAULT, skip as u32, times)
                            });
                            let findings = findings_text(&sim);
                            if !findings.is_empty() {
                                failures
                                    .push(format!("{act:?} {call}#{skip} x{times}: {findings:#?}"));
                                sim.clear_findings();
                            }
                        }
                    }
                }
            }
            println!("{cases} cases");
            assert!(
                failures.is_empty(),
                "{} failing cases: {failures:#?}",
                failures.len()
            );
        },
    );
}

// ---- 5. Threads: device synchronisations and shared synchronisations around the array ---

/// The main thread joins into `to` (events reset on `from`, recorded on `to`), reusing the
/// array's done entries after its own synchronisations of `to`, while a second thread
/// synchronises the device (the watermark: it may finish waiting entries of `to` that the
/// main thread reclaims) and a third drops or records events whose last reset is on `to`
/// (`Stream::synchronize_shared` of `to`, and joins into a stream of its own after `to`'s
/// resets). Under helgrind and drd (`--test-threads=1`, this test's name) the only reports
/// are std's channel and the crate's atomics, which neither tool models: none on the array
/// or its `Cell`s. Here: no finding, nothing left alive. Covers the three threads together
/// (`join_reuse.rs` has each pair apart).
#[test]
fn e9_array_reused_while_other_threads_synchronise_the_device_and_drop_events() {
    const ROUNDS: usize = 200;
    let session = support::sim::Session::start();
    {
        let device = session.default_device(0);
        let ctx: &Context<'_> = &device;
        let from = ctx.create_stream().unwrap();
        let to = ctx.create_stream().unwrap();
        let sim = &session.sim;
        let baseline = sim.live_objects();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|sc| {
            let syncer = sc.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    ctx.synchronize_device().unwrap();
                    std::thread::sleep(std::time::Duration::from_micros(300));
                }
            });
            let (tx, rx) = std::sync::mpsc::channel::<Event<'_, Reset>>();
            let dropper = sc.spawn(move || {
                let own = ctx.create_stream().unwrap();
                for (i, event) in rx.into_iter().enumerate() {
                    if i % 2 == 0 {
                        drop(event);
                    } else {
                        let e = event.record(&own).unwrap().wait_and_reset(&own).unwrap();
                        drop(e);
                    }
                }
                own.destroy().unwrap();
            });
            let mut event: Event<'_, Reset> = ctx
                .create_event()
                .unwrap()
                .record(&from)
                .unwrap()
                .wait_and_reset(&from)
                .unwrap();
            for i in 0..ROUNDS {
                sim.sleep_kernel(to.as_raw(), 100);
                sim.sleep_kernel(from.as_raw(), 10);
                event = event.record(&to).unwrap().wait_and_reset(&from).unwrap();
                // An event whose last reset is on `to`, for the dropper.
                let e = ctx
                    .create_event()
                    .unwrap()
                    .record(&to)
                    .unwrap()
                    .wait_and_reset(&to)
                    .unwrap();
                tx.send(e).unwrap();
                if i % 9 == 8 {
                    to.synchronize().unwrap();
                }
            }
            drop(tx);
            dropper.join().unwrap();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            syncer.join().unwrap();
            event.destroy().unwrap();
        });
        to.destroy().unwrap();
        from.destroy().unwrap();
        assert_eq!(sim.live_objects(), baseline - 2, "join events left");
    }
    support::sim::assert_no_findings(&session.finish());
}

// ---- 6. The capacity at the pool's edges, lowered while joins wait, with unusable joins --

/// Joins into `to` (busy behind a long kernel) until `JoinCapacity`: how many were accepted.
fn joins_until_refused<'s>(
    sim: &support::sim::Sim,
    mut event: Event<'s, Reset>,
    from: &'s Stream<'_>,
    to: &'s Stream<'_>,
    limit: usize,
) -> (usize, Event<'s, Reset>) {
    for accepted in 0..limit {
        sim.sleep_kernel(from.as_raw(), 5);
        match event.try_record(to) {
            Ok(recorded) => event = recorded.wait_and_reset(from).unwrap(),
            Err(failed) => {
                let (error, back) = failed.into_parts();
                assert!(matches!(error, Error::JoinCapacity { .. }), "{error:?}");
                return (accepted, back);
            }
        }
    }
    (limit, event)
}

/// For capacities 1, 2, 63, 64, 65 and 129: exactly that many joins wait on a busy stream
/// (the query at the 64th and 128th finds it busy), the next is `JoinCapacity` with nothing
/// issued; after the stream's synchronisation as many again (from the array's done entries
/// and new ones). Then the capacity lowered to 3 while 40 joins wait: refused at once, and
/// accepted after a synchronisation. Then a join whose record fails (unusable, counted
/// against the capacity) at capacity 2. No finding, nothing left alive.
#[test]
fn e5_e9_capacity_at_the_pool_edges_and_lowered_while_joins_wait() {
    let session = support::sim::Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let from = ctx.create_stream().unwrap();
        let to = ctx.create_stream().unwrap();
        let sim = &session.sim;
        let baseline = sim.live_objects();
        let mut event: Event<'_, Reset> = ctx
            .create_event()
            .unwrap()
            .record(&from)
            .unwrap()
            .wait_and_reset(&from)
            .unwrap();
        for capacity in [1u32, 2, 63, 64, 65, 129] {
            ctx.set_join_capacity(capacity).unwrap();
            for round in 0..2 {
                sim.sleep_kernel(to.as_raw(), 200_000);
                sim.reset_call_counts();
                let (accepted, back) = joins_until_refused(sim, event, &from, &to, 200);
                event = back;
                assert_eq!(
                    accepted, capacity as usize,
                    "capacity {capacity} round {round}"
                );
                let queries = sim.call_count("aclrtStreamQuery");
                assert!(
                    queries <= u64::from(capacity) / 64 + 1,
                    "{queries} queries at capacity {capacity}"
                );
                assert_eq!(sim.call_count("aclrtSynchronizeStream"), 0);
                to.synchronize().unwrap();
            }
        }
        // Lowered while 40 joins wait.
        ctx.set_join_capacity(100).unwrap();
        sim.sleep_kernel(to.as_raw(), 200_000);
        let (accepted, back) = joins_until_refused(sim, event, &from, &to, 40);
        assert_eq!(accepted, 40);
        ctx.set_join_capacity(3).unwrap();
        let (accepted, back) = joins_until_refused(sim, back, &from, &to, 10);
        assert_eq!(accepted, 0, "a join past a lowered capacity");
        to.synchronize().unwrap();
        sim.sleep_kernel(to.as_raw(), 200_000);
        let (accepted, back) = joins_until_refused(sim, back, &from, &to, 10);
        assert_eq!(accepted, 3);
        to.synchronize().unwrap();
        // A join whose record fails is unusable, and counts: capacity 2, one unusable, one
        // more join, then refused.
        ctx.set_join_capacity(2).unwrap();
        sim.sleep_kernel(to.as_raw(), 200_000);
        sim.sleep_kernel(from.as_raw(), 5);
        sim.inject_fault("aclrtRecordEvent", FAULT, 1);
        let (error, back) = back.try_record(&to).unwrap_err().into_parts();
        assert!(!matches!(error, Error::JoinCapacity { .. }), "{error:?}");
        let (accepted, back) = joins_until_refused(sim, back, &from, &to, 10);
        assert_eq!(accepted, 1, "the unusable join is not counted");
        to.synchronize().unwrap();
        let (accepted, back) = joins_until_refused(sim, back, &from, &to, 2);
        assert_eq!(accepted, 2);
        back.destroy().unwrap();
        to.synchronize().unwrap();
        from.synchronize().unwrap();
        to.destroy().unwrap();
        from.destroy().unwrap();
        assert_eq!(sim.live_objects(), baseline - 2, "join events left");
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    support::sim::assert_no_findings(&session.finish());
}

/// A wait scope whose reset needs joins from two other waiting streams into the resetting
/// stream, which is busy, at a join capacity of 1: the second join is `JoinCapacity`. The
/// scope ends with that error and the event comes back reset (issued alone once every
/// waiting stream was seen done); the first join, issued, is not lost. No finding, nothing
/// left alive. (Covers `JoinCapacity` inside `Waited::reset`'s joins.)
#[test]
fn e5_join_capacity_inside_a_wait_scope_reset() {
    isolated(|| {
        let session = support::sim::Session::start();
        let reports = support::isolated::Reports::capture();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            ctx.set_join_capacity(1).unwrap();
            let sim = &session.sim;
            let baseline = sim.live_objects();
            {
                let (a, r, x, y) = (
                    ctx.create_stream().unwrap(),
                    ctx.create_stream().unwrap(),
                    ctx.create_stream().unwrap(),
                    ctx.create_stream().unwrap(),
                );
                sim.sleep_kernel(r.as_raw(), 20_000);
                let recorded = ctx.create_event().unwrap().record(&a).unwrap();
                let outcome = recorded.try_wait(&r, |mut w| {
                    w.also_wait(&x)?;
                    w.also_wait(&y)?;
                    w.reset()
                });
                let event = match outcome {
                    Err(ascend_typestate::WaitError::Reset(failed)) => {
                        let (error, event) = failed.into_parts();
                        assert!(matches!(error, Error::JoinCapacity { .. }), "{error:?}");
                        event
                    }
                    Err(other) => panic!("{:?}", other.error()),
                    Ok(event) => {
                        drop(event);
                        panic!("two joins waiting at a capacity of 1")
                    }
                };
                let reported = reports.take();
                assert!(
                    reported.iter().any(|(_, e)| e.contains("JoinCapacity")),
                    "{reported:#?}"
                );
                // The event is usable again.
                let event = event.record(&a).unwrap().wait_and_reset(&r).unwrap();
                event.destroy().unwrap();
                for s in [&a, &r, &x, &y] {
                    s.synchronize().unwrap();
                }
            }
            assert_eq!(sim.live_objects(), baseline, "join events left");
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        drop(reports);
        support::sim::assert_no_findings(&session.finish());
    });
}
