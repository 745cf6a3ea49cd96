//! Systematic fault injection: one realistic program against the typed API, run once clean
//! to count its runtime calls, then once per (function, occurrence, code) with exactly that
//! call failing (`aclsimInjectFaultAt(function, code, occurrence, 1)`).
//!
//! Every run must end with the injected error returned (the crate's [`Error`]), or, where
//! the crate recovers by issuing the failed call again (a reset, a join's destroy, a `Drop`
//! fallback's release), with the program's checked output correct and the injected error
//! reported to the drop-error handler: no call's failure may be swallowed. And: zero
//! checker findings, nothing alive and the runtime finalized (a following `Acl::init_with`
//! succeeds), within [`CASE_BOUND`]. Errors that reach the drop-error handler are counted
//! and printed per case. All failing cases are collected into one report.
//!
//! Codes: 507000 (`ACL_ERROR_RT_INTERNAL_ERROR`) at every call; 107019 (a stream wait that
//! timed out, P3) at every stream and device synchronisation, where it surfaces; and the
//! timeout codes of the synchronisations with a timeout: 507046 (stream, and device: the
//! simulator's device timeout is the stream one) and 507047 (event).
//!
//! Isolation: a failing case may leave the process unusable for the next one (an `Acl`
//! that cannot be finalized keeps the crate's process token, a hang keeps a thread). So the
//! cases run in worker processes (this test binary, re-run with [`WORKER_ENV`] set), each
//! case on its own thread; a worker stops at the first case that leaves the process
//! unusable (after reporting it) and the next worker carries on after it. Two chains of
//! workers share the cases, one per core. (`fault_sweep_worker` is that worker: run
//! without [`WORKER_ENV`], it does nothing.)

mod support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ascend_typestate::MallocPolicy;
use ascend_typestate::sys::{OPTIONAL_SYMBOLS, REQUIRED_SYMBOLS};
use ascend_typestate::{Acl, Error, InitOptions, Result, timeout};
use ascend_typestate::{CallbackMode, ReportThread};
use support::sim::Sim;

/// How long one case may run. The clean program takes tens of milliseconds; a case that
/// goes through the simulator's deadlock diagnosis (500 ms) a few times, a few seconds.
const CASE_BOUND: Duration = Duration::from_secs(5);
/// Set in a worker process: the file listing its cases.
const WORKER_ENV: &str = "FAULT_SWEEP_CASES";
/// Set in a worker process: the file it appends its results to.
const RESULTS_ENV: &str = "FAULT_SWEEP_RESULTS";
/// The worker's test name, which a worker process runs alone.
const WORKER_TEST: &str = "fault_sweep_worker";

/// The element count of the program's buffers.
const N: usize = 256;
/// The simulated kernel's function.
fn step(x: u32) -> u32 {
    x.wrapping_mul(3).wrapping_add(7)
}

/// How the program's checks of its own output start: a mismatch is an error of its own.
const SELF_CHECK: &str = "self-check: ";

/// `what` starts with [`SELF_CHECK`].
fn self_check(ok: bool, what: &'static str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(what))
    }
}

/// One injected failure: the call of `call` after `skip` others fails with `code`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fault {
    call: String,
    skip: u32,
    code: i32,
}

/// The program: every family of typed calls, explicit teardown, every error propagated with
/// `?` (whatever is alive then is dropped: the `Drop` fallbacks release it). It checks its
/// own output. `fault` is armed right after `aclInit`.
fn program(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = Acl::init_with(&InitOptions::default().library(path))?;
    let sim = acl.simulator().expect("self-check: the simulator");
    // Faults are armed here, after `Acl::init`: count from here, so that occurrence k of
    // the clean run is the k-th call a fault armed here can reach.
    sim.reset_call_counts();
    if let Some(fault) = fault {
        sim.inject_fault(&fault.call, fault.code, fault.skip, 1)
            .expect("arm the fault");
    }
    self_check(acl.device_count()? >= 1, "self-check: a device")?;
    self_check(
        !acl.runs_on_device()?,
        "self-check: the simulator runs on the host",
    )?;
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;

    // Buffers; synchronous copies and memset.
    let input: Vec<u32> = (0..N as u32).collect();
    let expected: Vec<u32> = input.iter().map(|&x| step(x)).collect();
    let mut host = ctx.alloc_host::<u32>(N)?;
    host.copy_from_slice(&input);
    let mut d_in = ctx.alloc::<u32>(N, MallocPolicy::HugeFirst)?;
    let mut d_out = ctx.alloc::<u32>(N, MallocPolicy::NormalOnly)?;
    let mut d_flag = ctx.alloc::<u8>(64, MallocPolicy::HugeOnly)?;
    ctx.memset(&mut d_out, 0xFF)?;
    ctx.copy(&mut d_in, &input[..])?;
    let mut back = vec![0u32; N];
    ctx.copy(&mut back[..], &d_in)?;
    self_check(back == input, "self-check: the synchronous round trip")?;

    let start = ctx.create_event()?.record(&s1)?;

    // An async scope on two streams: H2D, a kernel, D2H on the same stream, and a read of
    // the kernel's output on the other stream (joined after it), plus a memset there. The
    // synchronisations with a timeout run while that work is pending.
    let mut result = vec![0u32; N];
    let mut cross = vec![0u32; N];
    ctx.async_scope(|scope| {
        scope.memset(&s2, &mut d_flag, 0x5A)?;
        let staged = scope.copy(&s1, &mut d_in, &host)?;
        let mapped =
            scope.simulated_map(&s1, Duration::from_millis(2), staged, &mut d_out, step)?;
        scope.copy(&s1, &mut result, mapped)?;
        scope.copy(&s2, &mut cross, mapped)?;
        s2.synchronize_with(timeout!(1_000))?;
        ctx.synchronize_device_with(timeout!(1_000))?;
        Ok(())
    })?;
    self_check(
        result == expected,
        "self-check: the kernel's output, read on its stream",
    )?;
    self_check(
        cross == expected,
        "self-check: the kernel's output, read on the other stream",
    )?;

    // A report thread and a subscribed stream, which also waits on an event.
    let report = ReportThread::spawn(&ctx)?;
    let sub = report.subscribe(ctx.create_stream()?)?;
    let ran = Arc::new(AtomicUsize::new(0));
    let ev = ctx.create_event()?.record(&s1)?;
    ev.synchronize_with(timeout!(1_000))?;
    let ev = ev.wait(&s2, |mut waited| {
        waited.also_wait(&sub)?;
        waited.reset()
    })?;
    for mode in [CallbackMode::Blocking, CallbackMode::NonBlocking] {
        let ran = Arc::clone(&ran);
        sub.launch(mode, move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })?;
    }
    // Re-record, then wait and reset in one step.
    let ev = ev.record(&s1)?;
    let ev = ev.wait_and_reset(&s2)?;
    let end = ctx.create_event()?.record(&s2)?;
    end.synchronize()?;
    self_check(
        start.is_complete()?,
        "self-check: the start event is complete",
    )?;
    let ms = end.elapsed_since(&start)?;
    self_check(ms >= 0.0, "self-check: a non-negative elapsed time")?;
    s1.synchronize()?;
    ctx.synchronize_device()?;

    // Teardown, in reverse order, explicitly.
    end.destroy()?;
    ev.destroy()?;
    start.destroy()?;
    let s3 = sub.unsubscribe()?;
    self_check(
        ran.load(Ordering::SeqCst) == 2,
        "self-check: both callbacks ran",
    )?;
    s3.destroy()?;
    report.stop()?;
    let mut flags = [0u8; 64];
    ctx.copy(&mut flags[..], &d_flag)?;
    self_check(
        flags.iter().all(|&b| b == 0x5A),
        "self-check: the asynchronous memset",
    )?;
    d_flag.free()?;
    d_out.free()?;
    d_in.free()?;
    host.free()?;
    s2.destroy()?;
    s1.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

/// The runtime functions the crate can call, and `aclsimLaunchKernel` (`simulated_map`).
fn functions() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = REQUIRED_SYMBOLS.to_vec();
    all.extend_from_slice(OPTIONAL_SYMBOLS);
    all.push("aclsimLaunchKernel");
    all
}

/// The codes injected at each call of `call`: 507000, and the codes of a timeout that
/// surfaces there.
fn codes(call: &str) -> &'static [i32] {
    match call {
        "aclrtSynchronizeStream" | "aclrtSynchronizeDevice" => &[507000, 107019],
        "aclrtSynchronizeStreamWithTimeout" | "aclrtSynchronizeDeviceWithTimeout" => {
            &[507000, 107019, 507046]
        }
        "aclrtSynchronizeEventWithTimeout" => &[507000, 507047],
        // A wait refused with the wait-timeout code: at each wait the program issues.
        "aclrtStreamWaitEvent" => &[507000, 107019],
        "aclrtSynchronizeEvent" => &[507000, 507047],
        _ => &[507000],
    }
}

// ---- One case, in a worker process -------------------------------------------------------

/// What happened in one case, as a worker reports it.
#[derive(Debug, Default)]
struct CaseResult {
    /// "ok", "err", "panic", "hang" or "died" (the worker process died in the case).
    status: String,
    /// The fault was consumed: the function was called more than `skip` times.
    reached: bool,
    elapsed_ms: u64,
    /// The error or panic message, or how the worker died.
    message: String,
    findings: Vec<String>,
    /// Live runtime objects once the program returned (before the next init).
    live: usize,
    /// Whether the runtime was still initialized once the program returned.
    initialized: bool,
    /// Empty if a following `Acl::init_with` (and its finalize) succeeded.
    probe: String,
    drop_errors: Vec<String>,
    /// Calls of each function of [`functions`] by the program (not serialized: the clean
    /// run's only).
    counts: Vec<(&'static str, u64)>,
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Lists are joined with this (escaped fields never contain a tab).
const SEP: &str = " \u{1f} ";

impl CaseResult {
    fn to_line(&self, index: usize) -> String {
        let fields = [
            "result".to_owned(),
            index.to_string(),
            self.status.clone(),
            u8::from(self.reached).to_string(),
            self.elapsed_ms.to_string(),
            escape(&self.message),
            escape(&self.findings.join(SEP)),
            self.live.to_string(),
            u8::from(self.initialized).to_string(),
            escape(&self.probe),
            escape(&self.drop_errors.join(SEP)),
        ];
        fields.join("\t") + "\n"
    }

    fn from_line(line: &str) -> Option<(usize, CaseResult)> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 11 || f[0] != "result" {
            return None;
        }
        let list = |s: &str| -> Vec<String> {
            let s = unescape(s);
            if s.is_empty() {
                Vec::new()
            } else {
                s.split(SEP).map(str::to_owned).collect()
            }
        };
        Some((
            f[1].parse().ok()?,
            CaseResult {
                status: f[2].to_owned(),
                reached: f[3] == "1",
                elapsed_ms: f[4].parse().ok()?,
                message: unescape(f[5]),
                findings: list(f[6]),
                live: f[7].parse().ok()?,
                initialized: f[8] == "1",
                probe: unescape(f[9]),
                drop_errors: list(f[10]),
                counts: Vec::new(),
            },
        ))
    }

    /// Whether the process can run another case.
    fn process_usable(&self) -> bool {
        self.status != "hang" && self.probe.is_empty()
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic".to_owned()
    }
}

/// Runs the program once, on its own thread, bounded by [`CASE_BOUND`], and checks what it
/// left behind.
fn run_case(
    path: &Path,
    sim: &Sim,
    drops: &support::DropErrors,
    fault: Option<Fault>,
) -> CaseResult {
    sim.clear_findings();
    sim.reset_call_counts();
    drops.take();
    let started = Instant::now();
    let (tx, rx) = mpsc::channel();
    let thread_path = path.to_path_buf();
    let thread_fault = fault.clone();
    let handle = std::thread::spawn(move || {
        let outcome = program(&thread_path, thread_fault.as_ref());
        let _ = tx.send(outcome.map_err(|e| e.to_string()));
    });
    let mut result = CaseResult::default();
    match rx.recv_timeout(CASE_BOUND) {
        Ok(Ok(())) => result.status = "ok".into(),
        Ok(Err(error)) => {
            result.status = "err".into();
            result.message = error;
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            result.status = "hang".into();
            result.message = format!("did not finish within {CASE_BOUND:?}");
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            result.status = "panic".into();
            result.message = match handle.join() {
                Err(panic) => panic_text(panic.as_ref()),
                Ok(()) => "the case thread ended without a result".into(),
            };
        }
    }
    result.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    if let Some(fault) = &fault {
        result.reached = sim.call_count(&fault.call) > u64::from(fault.skip);
    } else {
        result.counts = functions()
            .into_iter()
            .map(|name| (name, sim.call_count(name)))
            .collect();
    }
    result.findings = sim
        .findings()
        .into_iter()
        .map(|f| format!("[{}] {}", f.rule, f.message))
        .collect();
    result.drop_errors = drops.take();
    if result.status == "hang" {
        // The case's thread still holds the runtime: nothing else can be checked.
        return result;
    }
    result.live = sim.live_objects();
    result.initialized = sim.runtime_initialized();
    sim.clear_faults();
    result.probe = match Acl::init_with(&InitOptions::default().library(path)) {
        Ok(acl) => match acl.try_finalize() {
            Ok(()) => String::new(),
            Err(failed) => format!("a following Acl's finalize failed: {}", failed.error),
        },
        Err(error) => format!("a following Acl::init_with failed: {error}"),
    };
    // The probe's own findings (none if the runtime was left clean) are not the case's.
    sim.clear_findings();
    result
}

/// A worker process: runs the cases listed in the [`WORKER_ENV`] file, appending one line
/// per case (and one before it) to the [`RESULTS_ENV`] file; exits at the first case that
/// leaves the process unusable.
#[test]
fn fault_sweep_worker() {
    let (Ok(cases), Ok(results)) = (std::env::var(WORKER_ENV), std::env::var(RESULTS_ENV)) else {
        return; // Not a worker: the sweep is `fault_sweep` below.
    };
    let cases = std::fs::read_to_string(cases).expect("the case list");
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(results)
        .expect("the results file");
    let path = support::simulator_path();
    let sim = Sim::open(&path);
    let drops = support::DropErrors::capture();
    for line in cases.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let (index, fault) = (
            f[0].parse::<usize>().expect("an index"),
            Fault {
                call: f[1].to_owned(),
                skip: f[2].parse().expect("a skip"),
                code: f[3].parse().expect("a code"),
            },
        );
        out.write_all(format!("start\t{index}\n").as_bytes())
            .expect("write a result");
        let result = run_case(&path, &sim, &drops, Some(fault));
        out.write_all(result.to_line(index).as_bytes())
            .expect("write a result");
        if !result.process_usable() {
            // The next worker process carries on after this case.
            std::process::exit(3);
        }
    }
}

// ---- The sweep ---------------------------------------------------------------------------

/// Runs `cases` (index, fault) in worker processes, one after the other, starting a new
/// worker after a case that left its worker unusable or killed it.
fn run_chain(chain: usize, cases: Vec<(usize, Fault)>, dir: &Path) -> BTreeMap<usize, CaseResult> {
    let exe = std::env::current_exe().expect("the test executable");
    let mut results: BTreeMap<usize, CaseResult> = BTreeMap::new();
    let mut pending = cases;
    let mut spawn = 0;
    while !pending.is_empty() {
        spawn += 1;
        let case_file = dir.join(format!("cases-{chain}-{spawn}.txt"));
        let result_file = dir.join(format!("results-{chain}-{spawn}.txt"));
        let stderr_file = dir.join(format!("stderr-{chain}-{spawn}.txt"));
        let mut list = String::new();
        for (index, fault) in &pending {
            let _ = writeln!(
                list,
                "{index}\t{}\t{}\t{}",
                fault.call, fault.skip, fault.code
            );
        }
        std::fs::write(&case_file, list).expect("write the case list");
        let mut child = Command::new(&exe)
            .args([WORKER_TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(WORKER_ENV, &case_file)
            .env(RESULTS_ENV, &result_file)
            .env("ACLSIM_QUIET", "1")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_file).expect("a stderr file"))
            .spawn()
            .expect("start a worker process");
        // The worker bounds each case itself; this only catches a worker stuck elsewhere.
        let mut last_len = 0;
        let mut last_change = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for the worker") {
                break status;
            }
            let len = std::fs::metadata(&result_file).map_or(0, |m| m.len());
            if len != last_len {
                last_len = len;
                last_change = Instant::now();
            } else if last_change.elapsed() > CASE_BOUND * 2 {
                let _ = child.kill();
                break child.wait().expect("wait for the killed worker");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let text = std::fs::read_to_string(&result_file).unwrap_or_default();
        let mut started = None;
        for line in text.lines() {
            if let Some(index) = line.strip_prefix("start\t") {
                started = index.parse::<usize>().ok();
            } else if let Some((index, result)) = CaseResult::from_line(line) {
                results.insert(index, result);
                started = None;
            }
        }
        if let Some(index) = started {
            let stderr = std::fs::read_to_string(&stderr_file).unwrap_or_default();
            let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            results.insert(
                index,
                CaseResult {
                    status: "died".into(),
                    message: format!(
                        "the worker process died in this case ({status}); its stderr ends with:\n{}",
                        tail.join("\n")
                    ),
                    ..CaseResult::default()
                },
            );
        }
        let before = pending.len();
        pending.retain(|(index, _)| !results.contains_key(index));
        if pending.len() == before {
            // No case ran at all: report the rest rather than loop.
            let stderr = std::fs::read_to_string(&stderr_file).unwrap_or_default();
            for (index, _) in pending.drain(..) {
                results.insert(
                    index,
                    CaseResult {
                        status: "died".into(),
                        message: format!("the worker ran no case ({status}): {stderr}"),
                        ..CaseResult::default()
                    },
                );
            }
        }
    }
    results
}

/// What is wrong with a case's result, if anything.
fn problems(fault: &Fault, result: &CaseResult) -> Vec<String> {
    let mut out = Vec::new();
    // The injected failure is returned, or at least reported (a `Drop` fallback's).
    let code = format!("({})", fault.code);
    let reported = result.drop_errors.iter().any(|e| e.contains(&code));
    match result.status.as_str() {
        "err" if result.message.contains(SELF_CHECK) => {
            out.push(format!("wrong output without an error: {}", result.message))
        }
        "err" if !result.reached => out.push(format!(
            "an error although the fault was not reached: {}",
            result.message
        )),
        "err" if !result.message.contains(&code) && !reported => out.push(format!(
            "the injected failure was lost: another error was returned ({})",
            result.message
        )),
        "err" => {}
        "ok" if !result.reached => {}
        // Recovered by a retry: the output was checked, the error reported.
        "ok" if reported => {}
        "ok" => out.push("returned Ok: the injected failure was lost".into()),
        "hang" | "panic" | "died" => out.push(format!("{}: {}", result.status, result.message)),
        other => out.push(format!("unknown status {other}")),
    }
    if !result.findings.is_empty() {
        out.push(format!(
            "{} checker finding(s): {}",
            result.findings.len(),
            result.findings.join(" / ")
        ));
    }
    if result.live != 0 {
        out.push(format!("{} live runtime object(s) afterwards", result.live));
    }
    if result.initialized && result.status != "hang" {
        out.push("the runtime was left initialized".into());
    }
    if !result.probe.is_empty() {
        out.push(result.probe.clone());
    }
    out
}

#[test]
fn fault_sweep() {
    if std::env::var_os(WORKER_ENV).is_some() {
        return; // A worker runs only `fault_sweep_worker`.
    }
    let begun = Instant::now();
    let path = support::simulator_path();
    let sim = Sim::open(&path);

    // 1. The clean run: it succeeds, the checker finds nothing, and its calls are counted.
    let clean = {
        let drops = support::DropErrors::capture();
        run_case(&path, &sim, &drops, None)
    };
    let none = Fault {
        call: String::new(),
        skip: 0,
        code: 0,
    };
    assert!(
        clean.status == "ok" && problems(&none, &clean).is_empty() && clean.drop_errors.is_empty(),
        "the program must succeed cleanly without faults: {clean:#?}"
    );
    println!("fault sweep: calls of the clean run");
    for (name, count) in &clean.counts {
        println!("  {name}: {count}");
    }

    // 2. and 3. One case per (function, occurrence, code). aclInit is not swept: faults
    // are armed once the runtime is initialized.
    let mut cases: Vec<(usize, Fault)> = Vec::new();
    for &(call, count) in &clean.counts {
        if call == "aclInit" {
            continue;
        }
        for skip in 0..count {
            for &code in codes(call) {
                let skip = u32::try_from(skip).expect("a small count");
                cases.push((
                    cases.len(),
                    Fault {
                        call: call.to_owned(),
                        skip,
                        code,
                    },
                ));
            }
        }
    }
    let dir = support::scratch_dir("fault-sweep");
    let chains = 2;
    let results: BTreeMap<usize, CaseResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..chains)
            .map(|chain| {
                let mine: Vec<(usize, Fault)> = cases
                    .iter()
                    .filter(|(index, _)| index % chains == chain)
                    .cloned()
                    .collect();
                let dir = &dir;
                scope.spawn(move || run_chain(chain, mine, dir))
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a chain of workers"))
            .collect()
    });

    // The report: every case, then every failing one.
    let mut failures = Vec::new();
    let mut not_reached = 0;
    let mut timeouts = 0;
    for (index, fault) in &cases {
        let label = format!("{}#{} code {}", fault.call, fault.skip, fault.code);
        if matches!(fault.code, 107019 | 507046 | 507047) {
            timeouts += 1;
        }
        let Some(result) = results.get(index) else {
            failures.push(format!("{label}: no result"));
            continue;
        };
        if !result.reached {
            not_reached += 1;
        }
        println!(
            "  {label}: {} in {} ms{}{}; {} drop error(s){}",
            result.status,
            result.elapsed_ms,
            if result.message.is_empty() { "" } else { ": " },
            result.message,
            result.drop_errors.len(),
            if result.drop_errors.is_empty() {
                String::new()
            } else {
                format!(": {}", result.drop_errors.join(" / "))
            }
        );
        let wrong = problems(fault, result);
        if !wrong.is_empty() {
            failures.push(format!("{label}: {}", wrong.join("; ")));
        }
    }
    println!(
        "fault sweep: {} cases ({} with 507000, {} with a timeout code), {} not reached \
         (the call happened fewer times than in the clean run), {} failing, {:.1} s",
        cases.len(),
        cases.len() - timeouts,
        timeouts,
        not_reached,
        failures.len(),
        begun.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {} fault-injection cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
