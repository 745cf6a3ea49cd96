//! Systematic fault injection over what the crate gained since `tests/simulator/fault_sweep.rs` was
//! written: device states, stream configurations (stop on failure included), host
//! functions, E10 event re-use, force destroys, async scopes with simulated kernels and
//! cross-stream pending results, callbacks in a device's default context, pipelines (with a
//! simulated kernel and with models, run by another thread) and models executed
//! synchronously (static and dynamic-batch, loaded with their memory and from bytes).
//!
//! Four programs (`devices`, `scopes`, `models`: explicit teardown; `drops`: teardown by
//! `Drop` alone), each run once clean to count its runtime calls, then once per (function,
//! occurrence, code) with that call failing: once (`fault_sweep_features_once`), and twice
//! in a row (`fault_sweep_features_twice`: a retry of the failed call fails too). The codes
//! and the rules are those of `tests/simulator/fault_sweep.rs` (`support/sweep.rs`): the injected
//! error is returned, or the crate recovers and reports it; zero checker findings; nothing
//! alive and the runtime finalized afterwards. Besides:
//!
//! * a `Context::destroy` or `Device::reset` that succeeds while a runtime object is still
//!   alive is a failure of its own (the simulator says so only at `aclFinalize`, P2);
//! * the `devices` program stops a stop-on-failure context on purpose (a task failure
//!   injected with `aclsimInjectTaskFailure`, S6): that failure must be returned or reported
//!   once per stream of the context and once by the event whose record it dropped, whatever
//!   call fails around it;
//! * the `models` pipeline goes on after a failed frame (as an inference loop would), so the
//!   recovery of a slot is swept too; its first error is returned after the whole teardown.
//!
//! The sweeps print every case and the counts per outcome; all failing cases are listed in
//! the assertion's message.
//!
//! This module: the sweep, its check after each case and what the programs share; the
//! programs are in `feature_programs` (`devices`, `scopes`, `drops`) and
//! `feature_model_programs` (`models`, `scoped_models`).

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use ascend_typestate::simulator::{SimDtype, SimModel, Simulator};
use ascend_typestate::{Acl, InitOptions, Result};
use support::sweep::{self, CaseResult, Fault, Sweep};

use super::feature_model_programs::{models, scoped_models};
use super::feature_programs::{devices, drops, scopes};

/// The simulated kernels' functions.
pub(crate) fn step(x: u32) -> u32 {
    x.wrapping_mul(3).wrapping_add(7)
}

pub(crate) fn twice(x: u32) -> u32 {
    x.wrapping_mul(2)
}

/// The code of the task failure the device program injects on its stop-on-failure stream.
pub(crate) const TASK_CODE: i32 = 507_899;

// ---- What the programs record for the check after each case --------------------------

/// Teardown steps that succeeded over live runtime objects.
pub(crate) static VIOLATIONS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The memset that fails on purpose was issued (so its failure must surface).
pub(crate) static TASK_ISSUED: AtomicBool = AtomicBool::new(false);

/// How many times the program saw that failure returned.
pub(crate) static TASK_SEEN: AtomicUsize = AtomicUsize::new(0);

/// How many times the stop must be returned or reported in all (S6): once by each stream of
/// the stopped context, and once by each event whose record the stop dropped.
pub(crate) static TASK_REPORTS: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn begin_case() {
    VIOLATIONS.lock().unwrap_or_else(|p| p.into_inner()).clear();
    TASK_ISSUED.store(false, Ordering::SeqCst);
    TASK_SEEN.store(0, Ordering::SeqCst);
    TASK_REPORTS.store(0, Ordering::SeqCst);
}

/// After `step` succeeded, nothing of the runtime may be alive: else `step` succeeded over
/// a live object (D3, P2), which is recorded.
pub(crate) fn expect_nothing_alive(sim: &Simulator<'_>, step: &str) {
    let live = sim.live_objects();
    if live != 0 {
        VIOLATIONS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!(
                "{step} succeeded over {live} live runtime object(s)"
            ));
    }
}

/// The further checks of a case (see the module docs).
pub(crate) fn check(result: &CaseResult) -> Vec<String> {
    let mut out = std::mem::take(&mut *VIOLATIONS.lock().unwrap_or_else(|p| p.into_inner()));
    let code = format!("({TASK_CODE})");
    let seen = TASK_SEEN.load(Ordering::SeqCst)
        + usize::from(result.message.contains(&code))
        + result
            .drop_errors
            .iter()
            .filter(|e| e.contains(&code))
            .count();
    let expected = TASK_REPORTS.load(Ordering::SeqCst);
    if TASK_ISSUED.load(Ordering::SeqCst) && seen < expected {
        out.push(format!(
            "the stop's task failure {code} was returned or reported {seen} time(s), not \
             {expected} (once per stream of the stopped context, once per event whose record \
             it dropped): lost"
        ));
    }
    out
}

// ---- The models ------------------------------------------------------------------------

pub(crate) const ROWS: usize = 2;

pub(crate) const FEATURES: usize = 4;

pub(crate) const CLASSES: usize = 3;

pub(crate) fn weights() -> Vec<f32> {
    (0..FEATURES * CLASSES)
        .map(|i| ((i * 5 % 7) as f32 - 3.0) / 2.0)
        .collect()
}

pub(crate) const BIAS: [f32; CLASSES] = [0.5, -1.0, 0.25];

/// A linear classifier over `FEATURES` values, `ROWS` items (the largest gear's batch).
pub(crate) fn classifier(gears: &[u64]) -> SimModel {
    SimModel::new(
        SimDtype::F32,
        &[ROWS, FEATURES],
        SimDtype::F32,
        &[ROWS, CLASSES],
    )
    .batch_gears(gears)
    .time_per_item(Duration::from_micros(50))
    .matmul(FEATURES, CLASSES, &weights())
    .bias(&BIAS)
}

pub(crate) fn frame_input(n: u64) -> Vec<f32> {
    (0..ROWS * FEATURES)
        .map(|i| ((n as usize * 13 + i) % 11) as f32 / 4.0 - 1.0)
        .collect()
}

/// The static model's file, written once per process.
pub(crate) fn static_model_file() -> &'static PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = support::scratch_dir("fault-sweep-features-models").join("static.model");
        classifier(&[]).write(&path).expect("write the model file");
        path
    })
}

/// Runs `body` on a thread of its own, and returns what it returns (a panic goes on here).
pub(crate) fn on_another_thread<T: Send>(body: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    std::thread::scope(|threads| {
        threads
            .spawn(body)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

pub(crate) fn init(path: &Path, fault: Option<&Fault>) -> Result<Acl> {
    begin_case();
    let acl = Acl::init_with(&InitOptions::default().library(path))?;
    sweep::arm(&acl, fault);
    Ok(acl)
}

/// The runtime functions, the simulated kernel and the model functions.
pub(crate) fn functions() -> Vec<&'static str> {
    let mut all = sweep::runtime_functions();
    for &name in ascend_typestate::sys::model::MODEL_SYMBOLS {
        if !all.contains(&name) {
            all.push(name);
        }
    }
    all
}

pub(crate) const SWEEP: Sweep = Sweep {
    name: "fault sweep (features)",
    worker_test: "fault_sweep_features_worker",
    programs: &[
        ("devices", devices),
        ("scopes", scopes),
        ("models", models),
        ("scoped_models", scoped_models),
        ("drops", drops),
    ],
    functions,
    codes: sweep::default_codes,
    check,
    // The stop the `devices` and `drops` programs provoke, reported by `Drop`s.
    expected_reports: &["(507899)"],
};

/// The two sweeps share the machine's two cores: one at a time.
pub(crate) static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A worker process: runs the cases it is given (see `support/sweep.rs`).
#[test]
fn fault_sweep_features_worker() {
    sweep::worker(&SWEEP);
}

#[test]
fn fault_sweep_features_once() {
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return; // A worker runs only `fault_sweep_features_worker`.
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // Its clean run initialises the runtime outside any `Session`: a process of its own.
    if support::child::own_process("fault_sweep_features_once") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 1);
    support::child::passed("fault_sweep_features_once");
}

#[test]
fn fault_sweep_features_twice() {
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // Its clean run initialises the runtime outside any `Session`: a process of its own.
    if support::child::own_process("fault_sweep_features_twice") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 2);
    support::child::passed("fault_sweep_features_twice");
}
