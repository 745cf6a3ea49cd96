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
