// Over 700 lines, kept whole: one engine. Its worker side (a case run, its result encoded)
// and its driver side (chains of workers, each result decoded and judged against the same
// rules) share one wire format and one set of rules; split, they would be scattered.
//! Systematic fault injection, shared by the sweeps (`tests/simulator/fault_sweep.rs`,
//! `tests/simulator/fault_sweep_features.rs`): programs against the typed API, each run once clean to
//! count its runtime calls, then once per (program, function, occurrence, code) with that
//! call failing `times` times in a row (`aclsimInjectFaultAt(function, code, occurrence,
//! times)`).
//!
//! Every run must end with the injected error returned (the crate's [`Error`]), or, where
//! the crate recovers by issuing the failed call again (a reset, a join's destroy, a `Drop`
//! fallback's release), with the program's checked output correct and the injected error
//! reported to the drop-error handler: no call's failure may be swallowed. And: zero
//! checker findings, nothing alive and the runtime finalized (a following `Acl::init_with`
//! succeeds), within [`CASE_BOUND`], plus whatever the sweep's own [`Sweep::check`] asks.
//! All failing cases are collected into one report.
//!
//! Isolation: a failing case may leave the process unusable for the next one (an `Acl`
//! that cannot be finalized keeps the crate's process token, a hang keeps a thread). So the
//! cases run in worker processes (the test binary, re-run with [`WORKER_ENV`] set, running
//! only [`Sweep::worker_test`]), each case on its own thread; a worker stops at the first
//! case that leaves the process unusable (after reporting it) and the next worker carries
//! on after it. Two chains of workers share the cases, one per core.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ascend_typestate::sys::{OPTIONAL_SYMBOLS, REQUIRED_SYMBOLS};
use ascend_typestate::{Acl, Error, InitOptions, Result};

use super::sim::Sim;

/// How long one case may run. A clean program takes tens of milliseconds; a case that
/// goes through the simulator's deadlock diagnosis (500 ms) a few times, a few seconds.
pub const CASE_BOUND: Duration = Duration::from_secs(5);
/// Set in a worker process: the file listing its cases.
pub const WORKER_ENV: &str = "FAULT_SWEEP_CASES";
/// Set in a worker process: the file it appends its results to.
const RESULTS_ENV: &str = "FAULT_SWEEP_RESULTS";

/// How the programs' checks of their own output start: a mismatch is an error of its own.
pub const SELF_CHECK: &str = "self-check: ";

/// `what` starts with [`SELF_CHECK`].
pub fn self_check(ok: bool, what: &'static str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(what))
    }
}

/// One injected failure: the `times` calls of `call` after `skip` others fail with `code`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub call: String,
    pub skip: u32,
    pub code: i32,
    pub times: u32,
}

/// Arms `fault` (if any) on the runtime `acl` initialised: call counts start here, so that
/// occurrence k of the clean run is the k-th call a fault armed here can reach. Programs
/// call this right after `Acl::init_with`.
pub fn arm(acl: &Acl, fault: Option<&Fault>) {
    let sim = acl.simulator().expect("self-check: the simulator");
    sim.reset_call_counts();
    if let Some(fault) = fault {
        sim.inject_fault(&fault.call, fault.code, fault.skip, fault.times)
            .expect("arm the fault");
    }
}

/// A program of a sweep: initialises the runtime from the library at the path, arms the
/// fault with [`arm`], runs, tears everything down explicitly and finalizes.
pub type Program = fn(&Path, Option<&Fault>) -> Result<()>;

/// A sweep: its programs, which functions are swept, with which codes.
pub struct Sweep {
    /// For messages and the scratch directory.
    pub name: &'static str,
    /// The test that runs [`worker`] for this sweep (a worker process runs it alone).
    pub worker_test: &'static str,
    /// The programs, by name; each is swept on its own calls.
    pub programs: &'static [(&'static str, Program)],
    /// The functions whose calls are counted and swept.
    pub functions: fn() -> Vec<&'static str>,
    /// The codes injected at each call of a function.
    pub codes: fn(&str) -> &'static [i32],
    /// Further problems of a case, judged in the worker right after it (e.g. from what the
    /// program recorded in statics); empty when the case is fine.
    pub check: fn(&CaseResult) -> Vec<String>,
    /// Drop-error reports a clean run may make (each containing one of these): the errors
    /// of a failure the program provokes on purpose, reported by the `Drop` of its handles.
    pub expected_reports: &'static [&'static str],
}

/// No further problems.
pub fn no_check(_: &CaseResult) -> Vec<String> {
    Vec::new()
}

/// The runtime functions the crate can call, and `aclsimLaunchKernel` (`simulated_map`).
pub fn runtime_functions() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = REQUIRED_SYMBOLS.to_vec();
    all.extend_from_slice(OPTIONAL_SYMBOLS);
    all.push("aclsimLaunchKernel");
    // It returns a text, not a code, and the last-error queries return the code they read
    // (P6): nothing to inject (the simulator refuses to).
    all.retain(|f| {
        ![
            "aclGetRecentErrMsg",
            "aclrtGetLastError",
            "aclrtPeekAtLastError",
        ]
        .contains(f)
    });
    all
}

/// The codes injected at each call of `call`: 507000, and the codes of a timeout that
/// surfaces there: 107019 (a stream wait that timed out, P3) at every stream and device
/// synchronisation and at every wait; 507046 (stream, and device: the simulator's device
/// timeout is the stream one) and 507047 (event) at the synchronisations with a timeout.
pub fn default_codes(call: &str) -> &'static [i32] {
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
pub struct CaseResult {
    /// "ok", "err", "panic", "hang" or "died" (the worker process died in the case).
    pub status: String,
    /// The fault was consumed: the function was called more than `skip` times.
    pub reached: bool,
    pub elapsed_ms: u64,
    /// The error or panic message, or how the worker died.
    pub message: String,
    pub findings: Vec<String>,
    /// Live runtime objects once the program returned (before the next init).
    pub live: usize,
    /// Whether the runtime was still initialized once the program returned.
    pub initialized: bool,
    /// Empty if a following `Acl::init_with` (and its finalize) succeeded.
    pub probe: String,
    pub drop_errors: Vec<String>,
    /// What [`Sweep::check`] found.
    pub extra: Vec<String>,
    /// Calls of each swept function by the program (not serialized: the clean run's only).
    pub counts: Vec<(&'static str, u64)>,
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
            escape(&self.extra.join(SEP)),
        ];
        fields.join("\t") + "\n"
    }

    fn from_line(line: &str) -> Option<(usize, CaseResult)> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 12 || f[0] != "result" {
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
                extra: list(f[11]),
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

/// Runs `program` once, on its own thread, bounded by [`CASE_BOUND`], and checks what it
/// left behind.
fn run_case(
    sweep: &Sweep,
    program: Program,
    path: &Path,
    sim: &Sim,
    drops: &super::DropErrors,
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
        result.counts = (sweep.functions)()
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
        result.extra = (sweep.check)(&result);
        return result;
    }
    result.live = sim.live_objects();
    result.initialized = sim.runtime_initialized();
    sim.clear_faults();
    result.probe = match Acl::init_with(&InitOptions::default().library(path)) {
        Ok(acl) => match acl.finalize() {
            Ok(()) => String::new(),
            Err(failed) => format!("a following Acl's finalize failed: {}", failed),
        },
        Err(error) => format!("a following Acl::init_with failed: {error}"),
    };
    // The probe's own findings (none if the runtime was left clean) are not the case's.
    sim.clear_findings();
    result.extra = (sweep.check)(&result);
    result
}

/// A worker process: runs the cases listed in the [`WORKER_ENV`] file, appending one line
/// per case (and one before it) to the results file; exits at the first case that leaves
/// the process unusable. Does nothing outside a worker process.
pub fn worker(sweep: &Sweep) {
    let (Ok(cases), Ok(results)) = (std::env::var(WORKER_ENV), std::env::var(RESULTS_ENV)) else {
        return; // Not a worker.
    };
    let cases = std::fs::read_to_string(cases).expect("the case list");
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(results)
        .expect("the results file");
    let path = super::simulator_path();
    let sim = Sim::open(&path);
    let drops = super::DropErrors::capture();
    for line in cases.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let index = f[0].parse::<usize>().expect("an index");
        let program = sweep.programs[f[1].parse::<usize>().expect("a program")].1;
        let fault = Fault {
            call: f[2].to_owned(),
            skip: f[3].parse().expect("a skip"),
            code: f[4].parse().expect("a code"),
            times: f[5].parse().expect("a count"),
        };
        out.write_all(format!("start\t{index}\n").as_bytes())
            .expect("write a result");
        let result = run_case(sweep, program, &path, &sim, &drops, Some(fault));
        out.write_all(result.to_line(index).as_bytes())
            .expect("write a result");
        if !result.process_usable() {
            // The next worker process carries on after this case.
            std::process::exit(3);
        }
    }
}

// ---- The sweep ---------------------------------------------------------------------------

/// One case: which program, which fault.
#[derive(Clone, Debug)]
struct Case {
    index: usize,
    program: usize,
    fault: Fault,
}

/// Runs `cases` in worker processes, one after the other, starting a new worker after a
/// case that left its worker unusable or killed it.
fn run_chain(
    sweep: &Sweep,
    chain: usize,
    cases: Vec<Case>,
    dir: &Path,
) -> BTreeMap<usize, CaseResult> {
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
        for case in &pending {
            let f = &case.fault;
            let _ = writeln!(
                list,
                "{}\t{}\t{}\t{}\t{}\t{}",
                case.index, case.program, f.call, f.skip, f.code, f.times
            );
        }
        std::fs::write(&case_file, list).expect("write the case list");
        let mut child = Command::new(&exe)
            .args([
                super::child::full_name(sweep.worker_test).as_str(),
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
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
        pending.retain(|case| !results.contains_key(&case.index));
        if pending.len() == before {
            // No case ran at all: report the rest rather than loop.
            let stderr = std::fs::read_to_string(&stderr_file).unwrap_or_default();
            for case in pending.drain(..) {
                results.insert(
                    case.index,
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

/// The functions that return a pointer, a size or a type, not an `aclError`: a failure has no
/// code to carry (a null, a 0 or an undefined type is all the caller sees), so an error naming
/// the function is that failure.
const NO_CODE: &[&str] = &[
    "aclrtGetSocName",
    "aclmdlCreateDesc",
    "aclmdlGetNumInputs",
    "aclmdlGetNumOutputs",
    "aclmdlGetInputSizeByIndex",
    "aclmdlGetOutputSizeByIndex",
    "aclmdlGetInputDataType",
    "aclmdlGetOutputDataType",
    "aclmdlGetInputFormat",
    "aclmdlGetOutputFormat",
    "aclmdlCreateDataset",
    "aclmdlGetDatasetNumBuffers",
    "aclmdlGetDatasetBuffer",
    "aclCreateDataBuffer",
    "aclGetDataBufferAddr",
    "aclGetDataBufferSizeV2",
];

/// How the injected failure shows in a message: its code, or for a function of [`NO_CODE`]
/// its name.
fn marker(fault: &Fault) -> String {
    if NO_CODE.contains(&fault.call.as_str()) {
        fault.call.clone()
    } else {
        format!("({})", fault.code)
    }
}

/// What is wrong with a case's result, if anything.
fn problems(fault: &Fault, result: &CaseResult) -> Vec<String> {
    let mut out = Vec::new();
    // The injected failure is returned, or at least reported (a `Drop` fallback's).
    let code = marker(fault);
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
    out.extend(result.extra.iter().cloned());
    out
}

/// How a case ended, for the counts.
fn outcome(fault: &Fault, result: &CaseResult) -> &'static str {
    let code = marker(fault);
    match result.status.as_str() {
        _ if !result.reached && matches!(result.status.as_str(), "ok" | "err") => "not reached",
        "err" if result.message.contains(&code) => "error returned",
        "err" => "another error returned",
        "ok" if result.drop_errors.iter().any(|e| e.contains(&code)) => "recovered",
        "ok" => "ok",
        "hang" => "hang",
        "panic" => "panic",
        _ => "died",
    }
}

/// Runs every program of `sweep` clean (it must succeed with nothing to report), then once
/// per (program, function, occurrence, code) with `times` failures in a row there, on two
/// chains of worker processes. Prints every case and the counts; returns the failing
/// cases, one line each.
pub fn run(sweep: &Sweep, times: u32) -> Vec<String> {
    let begun = Instant::now();
    let path = super::simulator_path();
    let sim = Sim::open(&path);
    let drops = super::DropErrors::capture();

    // 1. The clean runs: each succeeds, the checker finds nothing, and its calls are counted.
    let none = Fault {
        call: String::new(),
        skip: 0,
        code: 0,
        times: 0,
    };
    let mut cases: Vec<Case> = Vec::new();
    for (number, &(name, program)) in sweep.programs.iter().enumerate() {
        let clean = run_case(sweep, program, &path, &sim, &drops, None);
        let expected = |report: &String| {
            sweep
                .expected_reports
                .iter()
                .any(|marker| report.contains(marker))
        };
        assert!(
            clean.status == "ok"
                && problems(&none, &clean).is_empty()
                && clean.drop_errors.iter().all(expected),
            "{}: the program {name} must succeed cleanly without faults: {clean:#?}",
            sweep.name
        );
        println!("{}: calls of the clean run of {name}", sweep.name);
        for (function, count) in &clean.counts {
            if *count > 0 {
                println!("  {function}: {count}");
            }
        }
        // 2. One case per (function, occurrence, code). aclInit is not swept: faults are
        // armed once the runtime is initialized.
        for &(call, count) in &clean.counts {
            if call == "aclInit" {
                continue;
            }
            for skip in 0..count {
                for &code in (sweep.codes)(call) {
                    cases.push(Case {
                        index: cases.len(),
                        program: number,
                        fault: Fault {
                            call: call.to_owned(),
                            skip: u32::try_from(skip).expect("a small count"),
                            code,
                            times,
                        },
                    });
                }
            }
        }
    }
    drop(drops);

    let slug: String = sweep
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = super::scratch_dir(&format!("{slug}-x{times}"));
    let chains = 2;
    let results: BTreeMap<usize, CaseResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..chains)
            .map(|chain| {
                let mine: Vec<Case> = cases
                    .iter()
                    .filter(|case| case.index % chains == chain)
                    .cloned()
                    .collect();
                let dir = &dir;
                scope.spawn(move || run_chain(sweep, chain, mine, dir))
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a chain of workers"))
            .collect()
    });

    // The report: every case, then the counts; the failing cases are returned.
    let mut failures = Vec::new();
    let mut outcomes: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut timeouts = 0;
    for case in &cases {
        let fault = &case.fault;
        let program = if sweep.programs.len() > 1 {
            format!("{}: ", sweep.programs[case.program].0)
        } else {
            String::new()
        };
        let repeat = if times > 1 {
            format!(" x{times}")
        } else {
            String::new()
        };
        let label = format!(
            "{program}{}#{} code {}{repeat}",
            fault.call, fault.skip, fault.code
        );
        if matches!(fault.code, 107019 | 507046 | 507047) {
            timeouts += 1;
        }
        let Some(result) = results.get(&case.index) else {
            failures.push(format!("{label}: no result"));
            continue;
        };
        *outcomes.entry(outcome(fault, result)).or_default() += 1;
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
    let per_outcome: Vec<String> = outcomes
        .iter()
        .map(|(what, count)| format!("{count} {what}"))
        .collect();
    println!(
        "{} (each fault {times} time(s) in a row): {} cases run ({} with 507000, {} with a \
         timeout code): {}; {} failing, {:.1} s",
        sweep.name,
        cases.len(),
        cases.len() - timeouts,
        timeouts,
        per_outcome.join(", "),
        failures.len(),
        begun.elapsed().as_secs_f64()
    );
    failures
}

/// [`run`], asserting that no case failed.
pub fn run_and_assert(sweep: &Sweep, times: u32) {
    let failures = run(sweep, times);
    assert!(
        failures.is_empty(),
        "{}: {} fault-injection cases failed:\n{}",
        sweep.name,
        failures.len(),
        failures.join("\n")
    );
}
