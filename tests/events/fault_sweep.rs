//! An event-heavy program (multi-stream waits, `also_wait`, `wait_and_reset`,
//! re-records that need joins, a panicking scope, an early-error scope, elapsed time, a
//! thread) swept with one injected fault, and with two faults in a row, at every call.
//! Each case runs in a child process (this binary re-run with `RED_SWEEP_CASE`), bounded by
//! a watchdog. A case fails on: a checker finding, a hang, a crash, a live object or a
//! runtime left initialised after teardown (unless `LiveChildren` was reported), or an
//! injected error neither returned nor reported.

use crate::support;

use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use ascend_typestate::{Acl, Error, Event, InitOptions, Reset, Result};
use support::sim::Sim;

const CASE_ENV: &str = "RED_SWEEP_CASE";
const CASE_BOUND: Duration = Duration::from_secs(8);

static DROPS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn on_drop_error(what: &'static str, error: &Error) {
    DROPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(format!("{what}: {error}"));
}

#[derive(Clone, Debug)]
struct Fault {
    call: String,
    skip: u32,
    times: u32,
    code: i32,
}

/// The event program. `variant` selects extra paths.
fn program(path: &Path, fault: Option<&Fault>, variant: u32) -> Result<()> {
    let acl = Acl::init_with(&InitOptions::default().library(path))?;
    let sim = acl.simulator().expect("the simulator");
    sim.reset_call_counts();
    if let Some(f) = fault {
        sim.inject_fault(&f.call, f.code, f.skip, f.times)
            .expect("arm");
    }
    let kernels = Sim::open(path);
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let s3 = ctx.create_stream()?;
    // The context is current (created last, streams of it): kernels may be launched raw.
    kernels.sleep_kernel(s3.as_raw(), 1_000);
    let start = ctx.create_event()?.record(&s1)?;
    let e = ctx.create_event()?.record(&s1)?;
    let e = e.wait(&s2, |mut w| {
        w.also_wait(&s3)?;
        w.reset()
    })?;
    kernels.sleep_kernel(s2.as_raw(), 500);
    let e = e.record(&s1)?; // joined after the reset on s2
    let e = e.wait_and_reset(&s3)?; // joined after the reset on s2 too
    let e = e.record(&s2)?; // joined after the reset on s3
    let e: Event<'_, Reset> = match variant {
        1 => {
            // A panicking scope after a second wait: `wait` resets on unwind.
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                e.wait(&s1, |mut w| -> Result<_> {
                    w.also_wait(&s3)?;
                    panic!("red: panic in a wait scope")
                })
            }));
            match caught {
                Ok(r) => r?,
                Err(_) => ctx.create_event()?.into(),
            }
        }
        2 => {
            // An early error after a second wait: `wait` resets.
            match e.try_wait(&s1, |mut w| {
                w.also_wait(&s3)?;
                Err(Error::InvalidArgument("red: the body's own error"))
            }) {
                Ok(e) => e,
                Err(ascend_typestate::WaitError::Reset(f)) => {
                    if !matches!(f.error, Error::InvalidArgument(_)) {
                        return Err(f.error);
                    }
                    f.value
                }
                Err(other) => return Err(other.into()),
            }
        }
        3 => {
            // The event moves to another thread, which waits on a stream of its own
            // (joined after the reset on s3, a stream of this thread) and finishes it there.
            let ctx_ref = &ctx;
            std::thread::scope(|sc| {
                sc.spawn(move || -> Result<()> {
                    let t = ctx_ref.create_stream()?;
                    let e2 = e.wait(&t, |w| w.reset())?;
                    let e2 = e2.record(&t)?;
                    e2.synchronize()?;
                    e2.destroy()?;
                    t.destroy()?;
                    Ok(())
                })
                .join()
                .expect("the thread")
            })?;
            ctx.create_event()?.into()
        }
        _ => e.wait(&s1, |mut w| {
            w.also_wait(&s2)?;
            w.also_wait(&s3)?;
            w.reset()
        })?,
    };
    let e = e.record(&s3)?;
    let end = ctx.create_event()?.record(&s1)?;
    end.synchronize()?;
    start.synchronize()?;
    let _ms = end.elapsed_since(&start)?;
    let _ = e.is_complete()?;
    s2.synchronize()?;
    end.destroy()?;
    e.destroy()?;
    start.destroy()?;
    s3.destroy()?;
    s2.destroy()?;
    s1.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

fn functions() -> Vec<&'static str> {
    vec![
        "aclrtSetDevice",
        "aclrtResetDevice",
        "aclrtCreateContext",
        "aclrtDestroyContext",
        "aclrtSetCurrentContext",
        "aclrtCreateStream",
        "aclrtDestroyStream",
        "aclrtSynchronizeStream",
        "aclrtSynchronizeStreamWithTimeout",
        "aclrtStreamWaitEvent",
        "aclrtCreateEventWithFlag",
        "aclrtDestroyEvent",
        "aclrtRecordEvent",
        "aclrtResetEvent",
        "aclrtQueryEventStatus",
        "aclrtSynchronizeEvent",
        "aclrtEventElapsedTime",
        "aclrtSynchronizeDevice",
        "aclFinalize",
    ]
}

/// Runs one case in this process and prints one `RESULT` line.
fn run_case_here(path: &Path, fault: Option<Fault>, variant: u32) {
    ascend_typestate::set_drop_error_handler(on_drop_error);
    let sim = Sim::open(path);
    sim.clear_findings();
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_path_buf();
    let f2 = fault.clone();
    std::thread::spawn(move || {
        let r = program(&p, f2.as_ref(), variant);
        let _ = tx.send(r.map_err(|e| e.to_string()));
    });
    let status = match rx.recv_timeout(CASE_BOUND) {
        Ok(Ok(())) => "ok".to_owned(),
        Ok(Err(e)) => format!("err {e}"),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => "hang".to_owned(),
        Err(_) => "panic".to_owned(),
    };
    let reached = fault
        .as_ref()
        .map(|f| sim.call_count(&f.call) > u64::from(f.skip))
        .unwrap_or(false);
    let counts: Vec<String> = functions()
        .iter()
        .map(|n| format!("{n}={}", sim.call_count(n)))
        .collect();
    let findings: Vec<String> = sim
        .findings()
        .iter()
        .map(|f| format!("[{}] {}", f.rule, f.message))
        .collect();
    let live = if status == "hang" {
        0
    } else {
        sim.live_objects()
    };
    let init = sim.runtime_initialized();
    let drops = DROPS.lock().unwrap_or_else(|p| p.into_inner()).clone();
    println!(
        "\nRESULT\t{status}\t{}\t{live}\t{}\t{}\t{}\t{}",
        u8::from(reached),
        u8::from(init),
        findings.join(" | ").replace(['\t', '\n'], " "),
        drops.join(" | ").replace(['\t', '\n'], " "),
        counts.join(",")
    );
    let _ = std::io::stdout().flush();
    std::process::exit(0);
}

#[derive(Debug, Default)]
struct Outcome {
    status: String,
    reached: bool,
    live: usize,
    init: bool,
    findings: String,
    drops: String,
    counts: Vec<(String, u64)>,
}

fn run_child(fault: Option<&Fault>, variant: u32) -> Outcome {
    let spec = match fault {
        Some(f) => format!("{}:{}:{}:{}:{variant}", f.call, f.skip, f.times, f.code),
        None => format!("-:0:0:0:{variant}"),
    };
    let out = support::child::run(
        &support::child::test_in(module_path!(), "child_entry"),
        &[
            (CASE_ENV, std::ffi::OsStr::new(&spec)),
            ("ACLSIM_QUIET", std::ffi::OsStr::new("1")),
        ],
        CASE_BOUND + Duration::from_secs(5),
        support::child::Stderr::Piped,
    );
    let status = out.status;
    let stdout = out.stdout.as_str();
    let Some(line) = stdout
        .lines()
        .find_map(|l| l.find("RESULT\t").map(|i| &l[i..]))
    else {
        return Outcome {
            status: format!(
                "died ({status:?}): {}",
                out.stderr
                    .lines()
                    .rev()
                    .take(6)
                    .collect::<Vec<_>>()
                    .join(" / ")
            ),
            ..Outcome::default()
        };
    };
    let f: Vec<&str> = line.split('\t').collect();
    Outcome {
        status: f[1].to_owned(),
        reached: f[2] == "1",
        live: f[3].parse().unwrap(),
        init: f[4] == "1",
        findings: f[5].to_owned(),
        drops: f[6].to_owned(),
        counts: f[7]
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
            .collect(),
    }
}

#[test]
fn child_entry() {
    let Ok(spec) = std::env::var(CASE_ENV) else {
        return;
    };
    let p: Vec<&str> = spec.split(':').collect();
    let fault = (p[0] != "-").then(|| Fault {
        call: p[0].to_owned(),
        skip: p[1].parse().unwrap(),
        times: p[2].parse().unwrap(),
        code: p[3].parse().unwrap(),
    });
    let variant = p[4].parse().unwrap();
    run_case_here(&support::simulator_path(), fault, variant);
}

fn problems(fault: &Fault, o: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    let code = format!("{}", fault.code);
    let reported = o.drops.contains(&code);
    let leak_reported = o.drops.contains("still alive") || o.status.contains("still alive");
    match o.status.as_str() {
        s if s.starts_with("err") => {
            if !o.reached {
                out.push(format!("error without the fault reached: {s}"));
            } else if !s.contains(&code) && !reported {
                out.push(format!("injected error lost: {s}"));
            }
        }
        "ok" => {
            if o.reached && !reported {
                out.push("Ok although the fault was reached and not reported".into());
            }
        }
        other => out.push(other.to_owned()),
    }
    if !o.findings.is_empty() {
        out.push(format!("findings: {}", o.findings));
    }
    if (o.live != 0 || o.init) && !leak_reported && !o.status.starts_with("died") {
        out.push(format!(
            "live={} initialized={} without a LiveChildren report",
            o.live, o.init
        ));
    }
    out
}

fn sweep(variant: u32, times_list: &[u32]) {
    if std::env::var_os(CASE_ENV).is_some() {
        return;
    }
    let clean = run_child(None, variant);
    assert!(
        clean.status == "ok" && clean.findings.is_empty() && clean.live == 0 && !clean.init,
        "clean run: {clean:#?}"
    );
    let mut cases = Vec::new();
    for (call, count) in &clean.counts {
        if call == "aclFinalize" && *count == 0 {
            continue;
        }
        for skip in 0..*count {
            for &times in times_list {
                let codes: &[i32] = match call.as_str() {
                    "aclrtSynchronizeStream" | "aclrtSynchronizeDevice" => &[507000, 107019],
                    "aclrtSynchronizeEvent" => &[507000, 507047],
                    _ => &[507000],
                };
                for &code in codes {
                    cases.push(Fault {
                        call: call.clone(),
                        skip: skip as u32,
                        times,
                        code,
                    });
                }
            }
        }
    }
    let results: Vec<(Fault, Outcome)> = std::thread::scope(|sc| {
        let chunks: Vec<Vec<Fault>> = (0..2)
            .map(|i| {
                cases
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| j % 2 == i)
                    .map(|(_, c)| c.clone())
                    .collect()
            })
            .collect();
        let hs: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                sc.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|f| {
                            let o = run_child(Some(&f), variant);
                            (f, o)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut failures = Vec::new();
    for (f, o) in &results {
        let p = problems(f, o);
        if !p.is_empty() {
            failures.push(format!(
                "{}#{} x{} code {}: {} || status={} drops={}",
                f.call,
                f.skip,
                f.times,
                f.code,
                p.join("; "),
                o.status,
                o.drops
            ));
        }
    }
    println!(
        "variant {variant}: {} cases, {} failing",
        results.len(),
        failures.len()
    );
    for f in &failures {
        println!("FAIL {f}");
    }
    assert!(failures.is_empty(), "{} failing cases", failures.len());
}

#[test]
fn sweep_plain_single() {
    sweep(0, &[1]);
}
#[test]
fn sweep_plain_double() {
    sweep(0, &[2]);
}
#[test]
fn sweep_panic_scope() {
    sweep(1, &[1, 2]);
}
#[test]
fn sweep_early_error_scope() {
    sweep(2, &[1, 2]);
}
#[test]
fn sweep_thread_scope() {
    sweep(3, &[1, 2]);
}
