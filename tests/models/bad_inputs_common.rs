//! What the bad-input tests share (`bad_sizes`, `bad_paths`,
//! `bad_contents`, `slow_inputs`, `bad_library_paths`): the child-process runner with its
//! deadline, bounds on how long a call took and how long other threads waited for the
//! simulator, the peak RSS, FIFOs, and the checks of typed errors.

use crate::support;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ascend_typestate::{AclError, MallocPolicy};
use support::DropErrors;
use support::sim::Session;

/// Set in a child process: the test body runs there.
pub(crate) const CHILD: &str = "BAD_INPUTS_CHILD";

pub(crate) const POLICY: MallocPolicy = MallocPolicy::HugeFirst;

/// How long a runtime call from another thread may wait for the simulator while an attack
/// runs (its lock is held for microseconds by ordinary calls).
pub(crate) const PROBE_LIMIT: Duration = Duration::from_millis(250);

pub(crate) fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs test `test` alone in a child process with `vars` set, killed after `bound`. Fails on
/// a hang (the bound) or an abnormal exit (a signal, an abort, a failed assertion in the
/// child); returns the child's stdout and stderr.
pub(crate) fn run_child(test: &str, vars: &[(&str, &OsStr)], bound: Duration) -> String {
    let mut all: Vec<(&str, &OsStr)> = vec![(CHILD, OsStr::new("1"))];
    all.extend_from_slice(vars);
    let started = Instant::now();
    let (status, out, err) = support::child::in_child_with(test, &all, bound);
    let took = started.elapsed();
    let Some(status) = status else {
        panic!(
            "{test}: a hang: killed after {took:?} (bound {bound:?})\n--- child stdout\n{out}\n--- child stderr\n{err}"
        );
    };
    assert!(
        status.success(),
        "{test}: the child did not exit normally ({status}) after {took:?}\n--- child stdout\n{out}\n--- child stderr\n{err}"
    );
    format!("{out}\n{err}")
}

/// `f`'s result, asserting that it took less than `limit`.
pub(crate) fn quickly<R>(what: &str, limit: Duration, f: impl FnOnce() -> R) -> R {
    let started = Instant::now();
    let result = f();
    let took = started.elapsed();
    assert!(took < limit, "{what}: took {took:?} (limit {limit:?})");
    result
}

/// Runs `work` on this thread while another thread calls `probe` in a loop (a runtime call
/// that takes the simulator's lock); returns `work`'s result, how long it took, and the
/// longest single probe.
pub(crate) fn longest_probe_during<R>(
    probe: impl Fn() + Sync,
    work: impl FnOnce() -> R,
) -> (R, Duration, Duration) {
    let stop = AtomicBool::new(false);
    let probes = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let prober = s.spawn(|| {
            let mut longest = Duration::ZERO;
            while !stop.load(Ordering::SeqCst) {
                let started = Instant::now();
                probe();
                longest = longest.max(started.elapsed());
                probes.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1));
            }
            longest
        });
        while probes.load(Ordering::SeqCst) < 3 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let started = Instant::now();
        let result = work();
        let took = started.elapsed();
        stop.store(true, Ordering::SeqCst);
        let longest = prober.join().expect("the prober");
        (result, took, longest)
    })
}

/// The peak resident set size of this process (`VmHWM`), in bytes.
pub(crate) fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmHWM in kB");
    kb * 1024
}

pub(crate) fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

pub(crate) fn ends_clean(session: Session, baseline: usize, reports: &DropErrors) {
    support::end_clean(session, baseline, reports);
}

/// A typed error that is the runtime's code `code`.
pub(crate) fn is_code<T>(result: &ascend_typestate::Result<T>, code: AclError) -> bool {
    matches!(result, Err(e) if e.code() == Some(code))
}

pub(crate) fn show<T>(result: &ascend_typestate::Result<T>) -> String {
    match result {
        Ok(_) => "Ok".to_owned(),
        Err(e) => format!("Err({e:?})"),
    }
}
