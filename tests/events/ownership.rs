//! The event's ownership as the instruction-count work left it: the inlined `Drop`
//! (`drop_event`), the wait scope that keeps its event in `wait`'s frame, the unwind guard that
//! releases it from the scope's fields, and the cold paths returning `WaitError`.
//! `sweep_children` sweeps faults over every way through the scope and `wait_and_reset`, each
//! case in a child process (E4, E5, E9: no finding, nothing live unless reported).

use crate::support;

use std::panic::{AssertUnwindSafe, catch_unwind};

use ascend_typestate::{Error, Event, Reset, WaitError};
use support::sim::{Finding, Session};

#[derive(Clone, Copy, Debug)]
enum Body {
    ResetOk,
    ResetThenErr,
    ResetThenPanic,
    ErrNoReset,
    PanicNoReset,
    ForgetThenErr,
    AlsoWaitResetOk,
    AlsoWaitPanic,
    AlsoWaitErr,
    AlsoWaitResetThenPanic,
}

const BODIES: &[Body] = &[
    Body::ResetOk,
    Body::ResetThenErr,
    Body::ResetThenPanic,
    Body::ErrNoReset,
    Body::PanicNoReset,
    Body::ForgetThenErr,
    Body::AlsoWaitResetOk,
    Body::AlsoWaitPanic,
    Body::AlsoWaitErr,
    Body::AlsoWaitResetThenPanic,
];

const CALLS: &[&str] = &[
    "aclrtResetEvent",
    "aclrtStreamWaitEvent",
    "aclrtSynchronizeStream",
    "aclrtDestroyEvent",
    "aclrtRecordEvent",
    "aclrtSynchronizeEvent",
    "aclrtCreateEventWithFlag",
    "aclrtSetCurrentContext",
];

/// One run: three cycles of an event through a wait scope with `body` in the middle one,
/// a fault armed just before the scope. Returns (findings, live objects after teardown,
/// drop-error reports, outcome text).
fn run(
    body: Body,
    call: &str,
    skip: u32,
    times: u32,
    via_wait_and_reset: bool,
) -> (Vec<Finding>, usize, Vec<String>, String) {
    let session = Session::start();
    session.expect_findings();
    let reports = support::DropErrors::capture();
    let baseline = session.sim.live_objects();
    let mut outcome = String::new();
    let mut leaked = false;
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let mut event: Option<Event<'_, Reset>> = Some(ctx.create_event().unwrap().into());
        for cycle in 0..3 {
            let Some(e) = event.take() else { break };
            session.sim.sleep_kernel(s1.as_raw(), 500);
            let rec = match e.try_record(&s1) {
                Ok(r) => r,
                Err(f) => {
                    outcome += &format!("[{cycle}] record failed: {}; ", f.error);
                    event = Some(f.value);
                    continue;
                }
            };
            if cycle == 1 {
                session.sim.inject_fault_at(call, 507000, skip, times);
            }
            let sim = &session.sim;
            let r = if via_wait_and_reset {
                rec.try_wait_and_reset(&s2)
            } else {
                let caught = catch_unwind(AssertUnwindSafe(|| {
                    rec.try_wait(&s2, |mut w| {
                        let b = if cycle == 1 { body } else { Body::ResetOk };
                        match b {
                            Body::ResetOk => w.reset(),
                            Body::ResetThenErr => {
                                let _ = w.reset()?;
                                Err(Error::InvalidArgument("red: after reset"))
                            }
                            Body::ResetThenPanic => {
                                let _ = w.reset();
                                panic!("red: after reset");
                            }
                            Body::ErrNoReset => Err(Error::InvalidArgument("red: no reset")),
                            Body::PanicNoReset => panic!("red: no reset"),
                            Body::ForgetThenErr => {
                                // `Waited` has no `Drop`: forgetting it is what a body that
                                // loses its `Waited` does (E4 must not depend on it).
                                #[allow(clippy::forget_non_drop)]
                                std::mem::forget(w);
                                Err(Error::InvalidArgument("red: forgot"))
                            }
                            Body::AlsoWaitResetOk => {
                                w.also_wait(&s3)?;
                                sim.sleep_kernel(s3.as_raw(), 300);
                                w.reset()
                            }
                            Body::AlsoWaitPanic => {
                                let _ = w.also_wait(&s3);
                                panic!("red: also_wait then panic");
                            }
                            Body::AlsoWaitErr => {
                                w.also_wait(&s3)?;
                                Err(Error::InvalidArgument("red: also_wait then err"))
                            }
                            Body::AlsoWaitResetThenPanic => {
                                let _ = w.also_wait(&s3);
                                let _ = w.reset();
                                panic!("red: also_wait, reset, panic");
                            }
                        }
                    })
                }));
                match caught {
                    Ok(r) => r,
                    Err(_) => {
                        outcome += &format!("[{cycle}] panicked; ");
                        // The event was released by the guard: a fresh one.
                        session.sim.clear_faults();
                        event = ctx.create_event().ok().map(Into::into);
                        continue;
                    }
                }
            };
            event = match r {
                Ok(e) => Some(e),
                Err(WaitError::NotWaited(f)) => {
                    outcome += &format!("[{cycle}] NotWaited({}); ", f.error);
                    // Drop the recorded event (its Drop must synchronise it).
                    drop(f.value);
                    None
                }
                Err(WaitError::Reset(f)) => {
                    outcome += &format!("[{cycle}] Reset({}); ", f.error);
                    Some(f.value)
                }
                Err(WaitError::Unreset(e)) => {
                    outcome += &format!("[{cycle}] Destroyed({e}); ");
                    None
                }
            };
            session.sim.clear_faults();
            if event.is_none() {
                event = ctx.create_event().ok().map(Into::into);
            }
        }
        session.sim.clear_faults();
        drop(event);
        for s in [s1, s2, s3] {
            if let Err(f) = s.try_destroy() {
                outcome += &format!("stream destroy: {}; ", f.error);
            }
        }
        let ok = match ctx.try_destroy() {
            Ok(()) => true,
            Err(f) => {
                outcome += &format!("ctx destroy: {}; ", f.error);
                std::mem::forget(f.value);
                false
            }
        };
        if ok {
            let _ = device.reset();
        } else {
            std::mem::forget(device);
            leaked = true;
        }
    }
    let live = session.sim.live_objects().saturating_sub(baseline);
    let findings = if leaked {
        let f = session.sim.findings();
        std::mem::forget(session);
        f
    } else {
        session.finish()
    };
    (findings, live, reports.take(), outcome)
}

fn is_bad(f: &Finding) -> bool {
    // Findings the injected faults themselves cannot cause when the crate is right.
    matches!(
        f.rule.as_str(),
        "E4" | "E5" | "E9" | "D6" | "D3" | "P2" | "S4" | "M1" | "M2" | "E1"
    )
}

fn case_in_child(args: &str) -> String {
    let out = support::child::run(
        &support::child::test_in(module_path!(), "child_case"),
        &[
            ("RT_CASE", std::ffi::OsStr::new(args)),
            ("ACLSIM_QUIET", std::ffi::OsStr::new("1")),
        ],
        std::time::Duration::from_secs(600),
        support::child::Stderr::Piped,
    );
    let text = out.stdout;
    text.lines()
        .find_map(|l| l.find("RESULT").map(|i| l[i..].to_owned()))
        .unwrap_or_else(|| format!("RESULT crashed {:?}: {}\n{}", out.status, text, out.stderr))
}

#[test]
fn child_case() {
    let Ok(args) = std::env::var("RT_CASE") else {
        return;
    };
    support::quiet_panics(&["red:", "inner"]);
    let v: Vec<&str> = args.split(',').collect();
    let body = BODIES[v[0].parse::<usize>().unwrap()];
    let call = v[1];
    let skip: u32 = v[2].parse().unwrap();
    let times: u32 = v[3].parse().unwrap();
    let war = v[4] == "1";
    let (findings, live, reports, outcome) = run(body, call, skip, times, war);
    let expected_e4 = call == "aclrtResetEvent" && times >= 3;
    let bad: Vec<_> = findings
        .iter()
        .filter(|f| is_bad(f) && !(expected_e4 && f.rule == "E4"))
        .collect();
    let leak_reported = !reports.is_empty();
    let foreign = reports.iter().any(|r| !r.contains("507000"));
    if !bad.is_empty() || (live != 0 && !leak_reported) || foreign {
        println!(
            "RESULT bad {body:?} {call} skip={skip} x{times} war={war}: live={live} outcome={outcome} findings={bad:?} reports={reports:?}"
        );
    } else {
        println!("RESULT ok live={live} {outcome}");
    }
}

#[test]
fn sweep_children() {
    if std::env::var("RT_CASE").is_ok() {
        return;
    }
    let mut bad = Vec::new();
    let mut n = 0;
    for (bi, _) in BODIES.iter().enumerate() {
        for &call in CALLS {
            for skip in 0..4 {
                for times in [1u32, 2, 3, 4] {
                    n += 1;
                    let r = case_in_child(&format!("{bi},{call},{skip},{times},0"));
                    if !r.starts_with("RESULT ok") {
                        println!("{r}");
                        bad.push(r);
                    }
                }
            }
        }
    }
    for &call in CALLS {
        for skip in 0..4 {
            for times in [1u32, 2, 3, 4] {
                n += 1;
                let r = case_in_child(&format!("0,{call},{skip},{times},1"));
                if !r.starts_with("RESULT ok") {
                    println!("{r}");
                    bad.push(r);
                }
            }
        }
    }
    println!("{n} cases, {} bad", bad.len());
    assert!(bad.is_empty());
}

/// Events moved to other threads, dropped in every state there (drop_event on a thread whose
/// cache knows no context), while the owner keeps using the streams.
#[test]
fn events_dropped_on_other_threads() {
    let session = Session::start();
    let reports = support::DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        for round in 0..50 {
            session.sim.sleep_kernel(s1.as_raw(), 200);
            let created = ctx.create_event().unwrap();
            let recorded = ctx.create_event().unwrap().record(&s1).unwrap();
            let reset = ctx
                .create_event()
                .unwrap()
                .record(&s1)
                .unwrap()
                .wait(&s2, |w| w.reset())
                .unwrap();
            let reset2 = ctx
                .create_event()
                .unwrap()
                .record(&s1)
                .unwrap()
                .wait_and_reset(&s2)
                .unwrap();
            std::thread::scope(|sc| {
                sc.spawn(move || drop(created));
                sc.spawn(move || drop(recorded));
                sc.spawn(move || drop(reset));
                // Re-recorded on the other thread's view of s1 (a join after s2's reset).
                let ctx = &ctx;
                sc.spawn(move || {
                    let s4 = ctx.create_stream().unwrap();
                    let r = reset2.try_record(&s4);
                    match r {
                        Ok(r) => drop(r.try_wait_and_reset(&s4).unwrap()),
                        Err(f) => panic!("{round}: {}", f.error),
                    }
                    let _ = &s4;
                });
            });
        }
        s1.destroy().unwrap();
        s2.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    support::end_clean(session, baseline, &reports);
}

/// A wait scope nested in another, inner panics: the inner guard releases the inner event,
/// the outer guard resets and releases the outer one; no double release.
#[test]
fn nested_wait_scopes_with_panics() {
    support::quiet_panics(&["red:", "inner"]);
    let session = Session::start();
    let reports = support::DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        for i in 0..30 {
            let a = ctx.create_event().unwrap().record(&s1).unwrap();
            let b = ctx.create_event().unwrap().record(&s2).unwrap();
            let r = catch_unwind(AssertUnwindSafe(|| {
                a.wait(&s2, |mut wa| {
                    if i % 3 == 0 {
                        wa.also_wait(&s3)?;
                    }
                    let inner = b.wait(&s3, |wb| {
                        if i % 2 == 0 {
                            let _ = wb.reset();
                        }
                        panic!("inner");
                    });
                    drop(inner);
                    wa.reset()
                })
            }));
            assert!(r.is_err());
        }
        for s in [s1, s2, s3] {
            s.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    support::end_clean(session, baseline, &reports);
}

/// Event drop while a slow record and a slow wait are pending, in every state, for E9.
#[test]
fn drop_under_pending_tasks_each_state() {
    let session = Session::start();
    let reports = support::DropErrors::capture();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        for _ in 0..10 {
            session.sim.sleep_kernel(s1.as_raw(), 3_000);
            let e = ctx.create_event().unwrap().record(&s1).unwrap();
            drop(e); // Recorded: must synchronise the record
            session.sim.sleep_kernel(s1.as_raw(), 3_000);
            session.sim.sleep_kernel(s3.as_raw(), 5_000);
            let e = ctx
                .create_event()
                .unwrap()
                .record(&s1)
                .unwrap()
                .wait(&s2, |mut w| {
                    w.also_wait(&s3)?;
                    w.reset()
                })
                .unwrap();
            drop(e); // Reset: the reset on s2 is ordered after s3's wait
            session.sim.sleep_kernel(s1.as_raw(), 3_000);
            let e = ctx.create_event().unwrap().record(&s1).unwrap();
            let e = e.wait_and_reset(&s2).unwrap();
            session.sim.sleep_kernel(s3.as_raw(), 3_000);
            // Re-record on s3 (join after s2's reset), wait on s1, drop in Reset.
            let e = e.record(&s3).unwrap().wait(&s1, |w| w.reset()).unwrap();
            drop(e);
        }
        for s in [s1, s2, s3] {
            s.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let reports = reports.take();
    let findings = session.finish();
    assert!(reports.is_empty(), "{reports:?}");
    support::sim::assert_no_findings(&findings);
}
