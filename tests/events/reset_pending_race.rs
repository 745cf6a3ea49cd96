//! A stream's "reset pending" counter (E5 joins) raced from another
//! thread.
//!
//! An event is `Send` and keeps a pointer to its last resetting stream; dropping it on
//! another thread synchronises that stream and stores the counter snapshot taken when that
//! synchronisation began. The resetting stream was once marked *before* the reset was
//! issued: a snapshot taken after the mark, by a synchronisation that ended before the reset
//! was queued, made the stream read "not pending" with the reset still queued. The next
//! record or wait then skipped its join (E1/E5), a reset overtook a pending wait (E5) and
//! the streams deadlocked, or an event was destroyed under its reset (E9). The mark now
//! follows the issued reset (`Stream::mark_reset_pending`); these tests keep it so.
//!
//! Everything below is safe code; the simulator's extension API is used only to launch sleep
//! kernels (`support::sim::Sim::sleep_kernel`) and read call counts/findings.

use crate::support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use ascend_typestate::{Acl, Error, Event, InitOptions, Reset};
use support::sim::Sim;

const CHILD_ENV: &str = "RED_RACE_CHILD";

/// Runs `test` of this binary in a child process with `CHILD_ENV` set.
fn in_child(test: &str, bound: Duration) -> (Option<std::process::ExitStatus>, String, String) {
    support::child::in_child(test, CHILD_ENV, bound)
}

fn drop_error(what: &'static str, error: &Error) {
    println!("DROP-ERROR {what}: {error}");
}

/// The racing program. Prints `HIT <iteration>` when a record of the event was issued
/// without its join although the previous reset is still queued, then `FINDING ...` lines.
fn race_program(iterations: usize, idle_waiters: usize) {
    ascend_typestate::set_drop_error_handler(drop_error);
    let path = support::simulator_path();
    let kernels = Sim::open(&path);
    let acl = Acl::init_with(&InitOptions::default().library(&path)).unwrap();
    let sim = acl.simulator().unwrap();
    sim.clear_findings();
    let device = acl.set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let s1 = ctx.create_stream().unwrap(); // records
    let r = ctx.create_stream().unwrap(); // first waiter: resets
    let s4 = ctx.create_stream().unwrap(); // waiter of the next scope
    let s5 = ctx.create_stream().unwrap(); // slow also_wait stream, joined into r last
    let idle: Vec<_> = (0..idle_waiters)
        .map(|_| ctx.create_stream().unwrap())
        .collect();
    let mut hit = None;
    std::thread::scope(|sc| {
        let (tx, rx) = mpsc::channel::<Event<'_, Reset>>();
        let dropper = sc.spawn(move || {
            // Drops each event as soon as it arrives: `Event::release` synchronises its
            // resetting stream `r` from this thread.
            for e in rx {
                drop(e);
            }
        });
        let mut e1: Event<'_, Reset> = ctx.create_event().unwrap().into();
        for i in 0..iterations {
            // An event whose last reset is on `r`, pending (not yet synchronised).
            let e2 = ctx
                .create_event()
                .unwrap()
                .record(&s1)
                .unwrap()
                .wait_and_reset(&r)
                .unwrap();
            kernels.sleep_kernel(s5.as_raw(), 3_000);
            let recorded = e1.record(&s1).unwrap();
            let mut e2 = Some(e2);
            let reset = recorded
                .wait(&r, |mut w| {
                    for s in &idle {
                        w.also_wait(s)?;
                    }
                    w.also_wait(&s5)?;
                    // Hand `e2` to the other thread right before the reset is marked.
                    tx.send(e2.take().unwrap()).unwrap();
                    w.reset()
                })
                .unwrap();
            // `r` now has: wait(e1), joins from the idle streams and from s5 (blocked
            // behind s5's 3 ms kernel), then the reset of e1. A record of e1 on s1 must be
            // joined after that reset.
            // A join is a wait issued by `record` (the record itself issues none); its event
            // may be a kept one, so event creations do not count joins.
            let before = sim.call_count("aclrtStreamWaitEvent");
            let again = reset.record(&s1).unwrap();
            let joins = sim.call_count("aclrtStreamWaitEvent") - before;
            if joins == 0 {
                println!("HIT {i}: record issued without a join while the reset is queued");
                hit = Some(i);
                // The next scope on s4: no join either; its reset overtakes the pending
                // wait of s5 (E5) and nothing can release it any more.
                let next = again.wait_and_reset(&s4);
                println!(
                    "next scope: {:?}",
                    next.as_ref().map(|_| ()).map_err(|e| e.to_string())
                );
                let t0 = Instant::now();
                let r5 = s5.synchronize_with(ascend_typestate::timeout!(3_000));
                println!("s5 synchronize_with(3 s): {r5:?} after {:?}", t0.elapsed());
                for f in sim.findings() {
                    println!("FINDING [{}] {}", f.rule, f.message);
                }
                let _ = std::io::Write::flush(&mut std::io::stdout());
                // Nothing can be torn down cleanly: stop here.
                std::process::exit(0);
            }
            // Not hit: let everything drain and go again.
            let e = again.wait_and_reset(&r).unwrap();
            for s in idle.iter().chain([&s1, &r, &s4, &s5]) {
                s.synchronize().unwrap();
            }
            e1 = e;
        }
        drop(tx);
        dropper.join().unwrap();
        drop(e1);
    });
    for f in sim.findings() {
        println!("FINDING [{}] {}", f.rule, f.message);
    }
    println!("no hit in {iterations} iterations ({hit:?})");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    std::process::exit(0);
}

#[test]
fn race_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let iterations = std::env::var("RED_RACE_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let idle = std::env::var("RED_RACE_IDLE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24);
    race_program(iterations, idle);
}

/// The counter race: a reset marked before it is issued can be hidden by a synchronisation
/// on another thread.
#[test]
fn reset_pending_counter_race_keeps_the_join() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let (status, out, err) = in_child("race_child", Duration::from_secs(120));
    println!(
        "status {status:?}\n{out}\nstderr tail: {}",
        err.lines().rev().take(5).collect::<Vec<_>>().join(" / ")
    );
    assert!(
        !out.contains("HIT") && !out.contains("FINDING"),
        "the race was hit"
    );
    assert!(status.is_some(), "the child hung");
}

/// The same counter race, minimal: one thread pipelines `record(s1)` → `wait_and_reset(s2)`
/// → `destroy()`; the other drops events whose last reset is also on `s2` (their `Drop`
/// synchronises `s2`). A synchronisation snapshot taken between `mark_reset_pending` and
/// `aclrtResetEvent` hides the new reset, and `destroy` then releases the event under its
/// queued wait/reset: an E9 finding (on the real runtime, an event destroyed under a task
/// that still refers to it).
#[test]
fn counter_race_never_destroys_an_event_under_its_queued_reset_e9() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let (tx_done, rx_done) = mpsc::channel();
    std::thread::spawn(move || {
        let session = support::sim::Session::start();
        let mut e9 = 0;
        let mut rounds = 0;
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            std::thread::scope(|sc| {
                let (tx, rx) = mpsc::channel::<Event<'_, Reset>>();
                sc.spawn(move || {
                    for e in rx {
                        drop(e);
                    }
                });
                for _ in 0..40_000 {
                    rounds += 1;
                    // An event whose pending reset is on s2, finished on the other thread.
                    let e = ctx
                        .create_event()
                        .unwrap()
                        .record(&s1)
                        .unwrap()
                        .wait_and_reset(&s2)
                        .unwrap();
                    tx.send(e).unwrap();
                    // Meanwhile, here: the usual step, and destroy.
                    let f = ctx
                        .create_event()
                        .unwrap()
                        .record(&s1)
                        .unwrap()
                        .wait_and_reset(&s2)
                        .unwrap();
                    f.destroy().unwrap();
                    e9 = session
                        .sim
                        .findings()
                        .iter()
                        .filter(|f| f.rule == "E9")
                        .count();
                    if e9 > 0 {
                        break;
                    }
                }
                drop(tx);
            });
            s1.destroy().unwrap();
            s2.destroy().unwrap();
        }
        let findings = session.finish();
        let _ = tx_done.send((rounds, e9, findings));
    });
    let (rounds, e9, findings) = rx_done
        .recv_timeout(Duration::from_secs(120))
        .expect("hang: the program did not finish");
    println!("{rounds} rounds, E9 after round {rounds}: {findings:#?}");
    assert_eq!(e9, 0, "E9 after {rounds} rounds: {findings:#?}");
    support::sim::assert_no_findings(&findings);
}
