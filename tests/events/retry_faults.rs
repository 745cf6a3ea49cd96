//! Double and triple faults in the event retry paths, escalated from the
//! drop-error handler (a report of a first failure arms the next one, so that it lands in
//! the retry window), with two threads racing on events and streams of one context.
//! Each seed runs in a child process under a watchdog.

use crate::support;
use crate::support::callbacks as common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

use ascend_typestate::simulator::Simulator;
use ascend_typestate::{Acl, Error, Event, InitOptions, Reset, WaitError};
use common::run_child_env;

static SIM: OnceLock<Simulator<'static>> = OnceLock::new();
static REPORTS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static RNG: AtomicU64 = AtomicU64::new(1);
static INJECTED: Mutex<Vec<String>> = Mutex::new(Vec::new());
static ESCALATE: AtomicU64 = AtomicU64::new(0);

fn rand() -> u64 {
    // xorshift, shared by the threads (order does not matter much).
    let mut x = RNG.load(Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    RNG.store(x, Ordering::Relaxed);
    x
}

const CALLS: &[&str] = &[
    "aclrtResetEvent",
    "aclrtResetEvent",
    "aclrtResetEvent",
    "aclrtSynchronizeStream",
    "aclrtSynchronizeStream",
    "aclrtCreateEventWithFlag",
    "aclrtRecordEvent",
    "aclrtStreamWaitEvent",
    "aclrtDestroyEvent",
    "aclrtDestroyEvent",
    "aclrtSynchronizeEvent",
];

fn inject_random(tag: &str) {
    let Some(sim) = SIM.get() else { return };
    let call = CALLS[(rand() % CALLS.len() as u64) as usize];
    let times = 1 + (rand() % 3) as u32;
    let skip = (rand() % 3) as u32;
    if sim.inject_fault(call, 507000, skip, times).is_ok() {
        INJECTED
            .lock()
            .unwrap()
            .push(format!("{tag}: {call} skip {skip} x{times}"));
    }
}

fn handler(what: &'static str, error: &Error) {
    REPORTS.lock().unwrap().push(format!("{what}: {error}"));
    // Escalate: a report arms another fault, a few times per run.
    if ESCALATE.load(Ordering::Relaxed) > 0 && rand().is_multiple_of(2) {
        ESCALATE.fetch_sub(1, Ordering::Relaxed);
        inject_random(what);
    }
}

fn program(acl: &Acl) -> Result<(), Error> {
    let sim = acl.simulator().unwrap();
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let (a, b, c) = (
        ctx.create_stream()?,
        ctx.create_stream()?,
        ctx.create_stream()?,
    );
    let d = ctx.create_stream()?;
    let fresh = || -> Result<Event<'_, Reset>, Error> { Ok(ctx.create_event()?.into()) };
    std::thread::scope(|sc| -> Result<(), Error> {
        let (tx, rx) = mpsc::channel::<Event<'_, Reset>>();
        let worker = sc.spawn(move || -> Vec<String> {
            let d = d;
            // The other thread: re-records events reset on the main thread's streams on its
            // own stream `d` (joins recorded on those streams from here), waits and resets
            // them on `d`, then drops them (their release synchronises `d`).
            let mut errors = Vec::new();
            for e in rx {
                let r = match e.try_record(&d) {
                    Ok(r) => r,
                    Err(f) => {
                        errors.push(format!("record: {}", f.error));
                        continue;
                    }
                };
                match r.try_wait_and_reset(&d) {
                    Ok(e) => drop(e),
                    Err(e) => errors.push(format!("wait_and_reset: {e}")),
                }
            }
            if let Err(f) = d.try_destroy() {
                errors.push(format!("d.destroy: {}", f.error));
            }
            errors
        });
        let mut e = fresh()?;
        for round in 0..6 {
            if round == 1 {
                inject_random("start");
            }
            // A busy producer, so that the waits and joins really wait.
            let r = e.try_record(&a).map_err(Error::from)?;
            e = match r.try_wait(&b, |mut w| {
                w.also_wait(&c)?;
                w.reset()
            }) {
                Ok(e) => e,
                Err(WaitError::Reset(f)) => f.value,
                Err(other) => {
                    println!("scope: {other}");
                    fresh()?
                }
            };
            // Re-record on c: joined after b's pending reset.
            let r = match e.try_record(&c) {
                Ok(r) => r,
                Err(f) => {
                    println!("record: {}", f.error);
                    e = f.value;
                    continue;
                }
            };
            e = match r.try_wait_and_reset(&a) {
                Ok(e) => e,
                Err(WaitError::Reset(f)) => f.value,
                Err(other) => {
                    println!("wait_and_reset: {other}");
                    fresh()?
                }
            };
            // Body error: wait resets itself.
            let r = match e.try_record(&b) {
                Ok(r) => r,
                Err(f) => {
                    e = f.value;
                    continue;
                }
            };
            e = match r.try_wait(&c, |mut w| {
                w.also_wait(&a)?;
                Err(Error::InvalidArgument("the body's error"))
            }) {
                Ok(_) => unreachable!(),
                Err(WaitError::Reset(f)) => f.value,
                Err(other) => {
                    println!("body-error scope: {other}");
                    fresh()?
                }
            };
            // Panic in the body: the scope resets and releases the event.
            let r = match e.try_record(&a) {
                Ok(r) => r,
                Err(f) => {
                    e = f.value;
                    continue;
                }
            };
            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = r.wait(&b, |mut w| {
                    let _ = w.also_wait(&c);
                    panic!("body panic");
                });
            }));
            let _ = panicked;
            e = fresh()?;
            // An event reset on b, handed to the other thread.
            let x = ctx.create_event()?.record(&a)?;
            match x.try_wait_and_reset(&b) {
                Ok(x) => tx.send(x).unwrap(),
                Err(err) => println!("x: {err}"),
            }
            let _ = sim;
        }
        drop(tx);
        let errors = worker.join().unwrap();
        println!("worker errors: {errors:?}");
        e.destroy()?;
        Ok(())
    })?;
    for s in [a, b, c] {
        s.destroy()?;
    }
    ctx.destroy()?;
    device.reset()?;
    Ok(())
}

fn child(seed: u64) {
    let path = support::simulator_path();
    ascend_typestate::set_drop_error_handler(handler);
    RNG.store(
        seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        Ordering::Relaxed,
    );
    for _ in 0..(seed % 7) {
        rand();
    }
    ESCALATE.store(
        std::env::var("EVENT_FAULT_ESC")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3),
        Ordering::Relaxed,
    );
    let acl = Acl::init_with(&InitOptions::default().library(&path)).unwrap();
    let sim = acl.simulator().unwrap();
    sim.clear_findings();
    let _ = SIM.set(sim);
    let outcome = program(&acl);
    println!("program: {outcome:?}");
    sim.clear_faults();
    ESCALATE.store(0, Ordering::Relaxed);
    let findings = sim.findings();
    let live = sim.live_objects();
    let finalized = acl.finalize();
    println!("finalize: {finalized:?}");
    println!("injected: {:#?}", INJECTED.lock().unwrap());
    println!("reports: {:#?}", REPORTS.lock().unwrap());
    for f in &findings {
        println!("FINDING [{}] {}", f.rule, f.message);
    }
    let live_after = if finalized.is_ok() { 0 } else { live };
    println!("live before finalize: {live}");
    let bad_findings: Vec<_> = findings.iter().filter(|f| f.rule != "E4").collect();
    if !bad_findings.is_empty() {
        println!("BAD: findings other than E4");
    }
    match &finalized {
        Ok(()) => {}
        Err(Error::LiveChildren { .. }) => println!("LEAK reported as LiveChildren"),
        Err(e) => println!("BAD: finalize failed: {e}"),
    }
    let _ = live_after;
    std::process::exit(0);
}

#[test]
fn event_fault_seed_child() {
    let Ok(seed) = std::env::var("EVENT_FAULT_SEED") else {
        return;
    };
    child(seed.parse().unwrap());
}

/// Seeds 0..N: every child must finish within the bound, exit cleanly, and leave no finding
/// but E4 (a reset that could not be issued at all).
#[test]
fn double_and_triple_event_faults_sweep() {
    if std::env::var("EVENT_FAULT_SEED").is_ok() {
        return;
    }
    let n: u64 = std::env::var("EVENT_FAULT_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let start: u64 = std::env::var("EVENT_FAULT_FROM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut bad = Vec::new();
    for seed in start..start + n {
        let s = seed.to_string();
        let out = run_child_env(
            "event_fault_seed_child",
            Duration::from_secs(20),
            false,
            &[("EVENT_FAULT_SEED", s.as_str()), ("ACLSIM_QUIET", "1")],
        );
        let e4 = out.stdout.matches("FINDING [E4]").count();
        let leak = out.stdout.contains("LEAK");
        let summary = format!(
            "seed {seed}: code {:?} signal {:?} timed_out {} e4 {e4} leak {leak}",
            out.code, out.signal, out.timed_out
        );
        println!("{summary}");
        if !out.ok() || out.stdout.contains("BAD") {
            bad.push(format!("{summary}\n{}", out.describe()));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n=====\n"));
}
