//! Callback slots: the slot trampoline per closure type, the first-slot fast path and the
//! out-of-line search. Every launched closure must run exactly once and be dropped exactly once,
//! with its own captures (no type confusion), refused ones dropped once and never run; slots
//! never reused while busy; many in flight; several threads.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use ascend_typestate::{CallbackMode, Error, ReportThread};
use support::sim::Session;

const N: usize = 4096;

struct Ledger {
    runs: Vec<AtomicU32>,
    drops: Vec<AtomicU32>,
    bad: AtomicUsize,
    refused: Vec<AtomicBool>,
}

fn ledger() -> &'static Ledger {
    static L: std::sync::OnceLock<Ledger> = std::sync::OnceLock::new();
    L.get_or_init(|| Ledger {
        runs: (0..N).map(|_| AtomicU32::new(0)).collect(),
        drops: (0..N).map(|_| AtomicU32::new(0)).collect(),
        bad: AtomicUsize::new(0),
        refused: (0..N).map(|_| AtomicBool::new(false)).collect(),
    })
}

fn reset_ledger() {
    let l = ledger();
    for i in 0..N {
        l.runs[i].store(0, Ordering::SeqCst);
        l.drops[i].store(0, Ordering::SeqCst);
        l.refused[i].store(false, Ordering::SeqCst);
    }
    l.bad.store(0, Ordering::SeqCst);
}

/// Counted once per drop; checks its id's magic.
struct Token {
    id: usize,
    magic: u64,
}

impl Token {
    fn new(id: usize) -> Token {
        Token {
            id,
            magic: magic(id),
        }
    }
    fn ran(&self) {
        if self.magic != magic(self.id) {
            ledger().bad.fetch_add(1, Ordering::SeqCst);
        }
        ledger().runs[self.id].fetch_add(1, Ordering::SeqCst);
    }
}

fn magic(id: usize) -> u64 {
    (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xDEAD_BEEF
}

impl Drop for Token {
    fn drop(&mut self) {
        if self.magic != magic(self.id) {
            ledger().bad.fetch_add(1, Ordering::SeqCst);
        }
        ledger().drops[self.id].fetch_add(1, Ordering::SeqCst);
        self.magic = 0;
    }
}

/// A token whose drop panics (after counting).
struct Bomb(Token);
impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("red: bomb {}", self.0.id);
    }
}

#[repr(align(16))]
struct Aligned(u64, u64);

static GATE: AtomicBool = AtomicBool::new(true);

/// Launches closure kind `kind` with id `id`.
fn launch_kind(
    s: &ascend_typestate::Subscribed<'_, '_>,
    mode: CallbackMode,
    kind: usize,
    id: usize,
) -> Result<(), Error> {
    match kind % 7 {
        0 => {
            // 16 bytes: slot.
            let t = Token::new(id);
            s.launch(mode, move || t.ran())
        }
        1 => {
            // 48 bytes: slot, exactly full.
            let t = Token::new(id);
            let p = [id as u64; 4];
            s.launch(mode, move || {
                if p != [id as u64; 4] {
                    ledger().bad.fetch_add(1, Ordering::SeqCst);
                }
                t.ran()
            })
        }
        2 => {
            // 56 bytes: boxed.
            let t = Token::new(id);
            let p = [id as u64; 5];
            s.launch(mode, move || {
                if p != [id as u64; 5] {
                    ledger().bad.fetch_add(1, Ordering::SeqCst);
                }
                t.ran()
            })
        }
        3 => {
            // Over-aligned: boxed.
            let t = Token::new(id);
            let a = Aligned(id as u64, !(id as u64));
            s.launch(mode, move || {
                if a.0 != id as u64 || a.1 != !(id as u64) {
                    ledger().bad.fetch_add(1, Ordering::SeqCst);
                }
                t.ran()
            })
        }
        4 => {
            // A String inside a slot.
            let t = Token::new(id);
            let text = format!("cb-{id}");
            s.launch(mode, move || {
                if text != format!("cb-{id}") {
                    ledger().bad.fetch_add(1, Ordering::SeqCst);
                }
                t.ran()
            })
        }
        5 => {
            // A bomb: runs, then its drop panics (caught as a callback panic); refused, its
            // drop panics out of `launch`.
            let b = Bomb(Token::new(id));
            s.launch(mode, move || {
                let b = b;
                b.0.ran();
            })
        }
        _ => {
            // Gated: holds the report thread while later callbacks pile up.
            let t = Token::new(id);
            s.launch(mode, move || {
                while !GATE.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_micros(50));
                }
                t.ran()
            })
        }
    }
}

fn check(launched: &[usize], refused: &[usize]) -> Vec<String> {
    let l = ledger();
    let mut errors = Vec::new();
    for &id in launched {
        let (r, d) = (
            l.runs[id].load(Ordering::SeqCst),
            l.drops[id].load(Ordering::SeqCst),
        );
        if r != 1 || d != 1 {
            errors.push(format!("launched {id}: runs={r} drops={d}"));
        }
    }
    for &id in refused {
        let (r, d) = (
            l.runs[id].load(Ordering::SeqCst),
            l.drops[id].load(Ordering::SeqCst),
        );
        if r != 0 || d != 1 {
            errors.push(format!("refused {id}: runs={r} drops={d}"));
        }
    }
    if l.bad.load(Ordering::SeqCst) != 0 {
        errors.push(format!(
            "bad magic/captures: {}",
            l.bad.load(Ordering::SeqCst)
        ));
    }
    errors
}

fn launch_catching(
    s: &ascend_typestate::Subscribed<'_, '_>,
    mode: CallbackMode,
    kind: usize,
    id: usize,
) -> bool {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        launch_kind(s, mode, kind, id)
    })) {
        Ok(Ok(())) => true,
        Ok(Err(_)) => false,
        // A refused bomb: its drop panicked out of launch.
        Err(_) => false,
    }
}

#[test]
fn mixed_kinds_more_than_32_in_flight_with_refusals() {
    support::quiet_panics(&["red:", "inner"]);
    let session = Session::start();
    let reports = support::DropErrors::capture();
    let sim = session.acl().simulator().unwrap();
    let baseline = session.sim.live_objects();
    reset_ledger();
    let (mut launched, mut refused) = (Vec::new(), Vec::new());
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let mut id = 0;
        for round in 0..12 {
            GATE.store(false, Ordering::Release);
            // One gated callback first, then ~100 more behind it (slots fill up; boxing).
            for k in 0..100 {
                let kind = if k == 0 { 6 } else { (k * 7 + round) % 6 };
                if (k + round) % 13 == 5 {
                    sim.inject_fault("aclrtLaunchCallback", 507000, 0, 1 + (k % 2) as u32)
                        .unwrap();
                }
                let mode = if k % 3 == 0 {
                    CallbackMode::Blocking
                } else {
                    CallbackMode::NonBlocking
                };
                if launch_catching(&stream, mode, kind, id) {
                    launched.push(id);
                } else {
                    refused.push(id);
                }
                id += 1;
            }
            sim.clear_faults();
            GATE.store(true, Ordering::Release);
            if round % 2 == 0 {
                stream.synchronize().unwrap();
            }
        }
        let stream = stream.unsubscribe().unwrap();
        stream.destroy().unwrap();
        let _panics = report.take_panics();
        let _ = report.stop();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let errors = check(&launched, &refused);
    let live = session.sim.live_objects() - baseline;
    let reports = reports.take();
    let findings = session.finish();
    println!("launched {} refused {}", launched.len(), refused.len());
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(live, 0);
    assert!(
        reports.iter().all(|r| r.contains("panicked")),
        "reports: {reports:#?}"
    );
    support::sim::assert_no_findings(&findings);
}

/// Several threads, each with its own subscription on one report thread, one of them moved
/// between threads mid-flight; faults armed from one thread land on any.
#[test]
fn several_threads_and_a_moved_subscription() {
    support::quiet_panics(&["red:", "inner"]);
    let session = Session::start();
    let reports = support::DropErrors::capture();
    let sim = session.acl().simulator().unwrap();
    let baseline = session.sim.live_objects();
    reset_ledger();
    GATE.store(true, Ordering::Release);
    let results: std::sync::Mutex<(Vec<usize>, Vec<usize>)> = Default::default();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        std::thread::scope(|sc| {
            for t in 0..4usize {
                let (ctx, report, results, sim) = (&ctx, &report, &results, &sim);
                sc.spawn(move || {
                    let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
                    let (mut l, mut r) = (Vec::new(), Vec::new());
                    let mut stream = Some(stream);
                    for k in 0..400usize {
                        let id = t * 1000 + k;
                        if t == 0 && k % 37 == 11 {
                            sim.inject_fault("aclrtLaunchCallback", 507000, 0, 1)
                                .unwrap();
                        }
                        let s = stream.as_ref().unwrap();
                        if launch_catching(s, CallbackMode::NonBlocking, k % 6, id) {
                            l.push(id);
                        } else {
                            r.push(id);
                        }
                        if k % 100 == 50 {
                            // Move the subscription to a fresh thread and launch there.
                            let moved = stream.take().unwrap();
                            let back = std::thread::scope(|sc2| {
                                let (l, r) = (&mut l, &mut r);
                                sc2.spawn(move || {
                                    let moved = moved;
                                    for j in 0..20usize {
                                        let id = t * 1000 + 500 + (k / 100) * 20 + j;
                                        if launch_catching(
                                            &moved,
                                            CallbackMode::Blocking,
                                            j % 6,
                                            id,
                                        ) {
                                            l.push(id);
                                        } else {
                                            r.push(id);
                                        }
                                    }
                                    moved
                                })
                                .join()
                                .unwrap()
                            });
                            stream = Some(back);
                        }
                    }
                    let stream = stream.unwrap().unsubscribe().unwrap();
                    stream.destroy().unwrap();
                    let mut g = results.lock().unwrap();
                    g.0.extend(l);
                    g.1.extend(r);
                });
            }
        });
        sim.clear_faults();
        let _ = report.take_panics();
        let _ = report.stop();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let (launched, refused) = results.into_inner().unwrap();
    let errors = check(&launched, &refused);
    let live = session.sim.live_objects() - baseline;
    let reports = reports.take();
    let findings = session.finish();
    println!("launched {} refused {}", launched.len(), refused.len());
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(live, 0);
    assert!(
        reports.iter().all(|r| r.contains("panicked")),
        "reports: {reports:#?}"
    );
    support::sim::assert_no_findings(&findings);
}

/// A zero-sized closure and a closure of a generic type instantiated twice with the same
/// layout but different meaning: each trampoline must read its own type.
#[test]
fn zst_and_same_layout_types() {
    let session = Session::start();
    static ZST_RUNS: AtomicUsize = AtomicUsize::new(0);
    static A: AtomicUsize = AtomicUsize::new(0);
    static B: AtomicUsize = AtomicUsize::new(0);
    ZST_RUNS.store(0, Ordering::SeqCst);
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report
            .subscribe_with_capacity(ctx.create_stream().unwrap(), 1024)
            .unwrap();
        for i in 0..200u64 {
            stream
                .launch(CallbackMode::NonBlocking, || {
                    ZST_RUNS.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
            // Same layout (u64, u64), different bodies.
            let (x, y) = (i, i * 3);
            stream
                .launch(CallbackMode::NonBlocking, move || {
                    A.fetch_add((x + y) as usize, Ordering::SeqCst);
                })
                .unwrap();
            stream
                .launch(CallbackMode::NonBlocking, move || {
                    B.fetch_add((y - x) as usize, Ordering::SeqCst);
                })
                .unwrap();
        }
        let stream = stream.unsubscribe().unwrap();
        stream.destroy().unwrap();
        report.stop().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let s: u64 = (0..200u64).map(|i| i * 4).sum();
    let d: u64 = (0..200u64).map(|i| i * 2).sum();
    assert_eq!(ZST_RUNS.load(Ordering::SeqCst), 200);
    assert_eq!(A.load(Ordering::SeqCst) as u64, s);
    assert_eq!(B.load(Ordering::SeqCst) as u64, d);
    support::sim::assert_no_findings(&session.finish());
}
