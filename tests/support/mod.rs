//! Helpers shared by the integration tests (`mod support;` in each test binary; see
//! `tests/README.md`).
//!
//! Not every test crate uses every helper.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The simulator's library: Cargo builds it (a dev-dependency cdylib) into the directory of
/// the test executable, `target/<profile>/deps/libascendcl.so`.
pub fn simulator_path() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("the test executable has a directory");
    let path = dir.join(ascend_typestate::sys::loader::LIBRARY_NAME);
    assert!(
        path.is_file(),
        "the simulator was not built beside the test executable: {} is missing \
         (it is the dev-dependency `ascendcl-sim`, a cdylib; run the tests with cargo)",
        path.display()
    );
    path
}

/// A fresh directory for files a test writes, under Cargo's per-target scratch directory.
/// `name` must be unique per test; the process id keeps concurrent runs apart.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    // A leftover from an earlier run with the same pid is replaced.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

/// Compiles `source` (C) into a shared library `lib<name>.so` in a fresh scratch directory
/// with `cc -shared -fPIC`, and returns its path.
pub fn compile_shared_library(name: &str, source: &str) -> PathBuf {
    compile_shared_library_with(name, source, &[])
}

/// As [`compile_shared_library`], with extra arguments for the compiler after the source
/// (libraries to link, `-Wl,-rpath,...`).
pub fn compile_shared_library_with(name: &str, source: &str, extra: &[&str]) -> PathBuf {
    let dir = scratch_dir(name);
    let c_file = dir.join(format!("{name}.c"));
    let so_file = dir.join(format!("lib{name}.so"));
    std::fs::write(&c_file, source).expect("write the C stub");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let output = Command::new(&cc)
        .args(["-shared", "-fPIC", "-Wall", "-o"])
        .arg(&so_file)
        .arg(&c_file)
        .args(extra)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run the C compiler `{cc}` ({e}); install gcc (.ci/run does)")
        });
    assert!(
        output.status.success(),
        "`{cc}` failed on {}:\n{}",
        c_file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    so_file
}

pub mod callbacks;
pub mod child;
pub mod isolated;
pub mod sim;
pub mod sweep;

/// What reaches the drop-error handler while a value of this type lives. The handler is
/// process-wide: use it inside a `Session` (one test at a time) or in a test binary of its own.
///
/// The collecting handler is installed once and never swapped back: a test that ends its
/// `Session` before its `DropErrors` must not put the previous handler back while the next
/// test already collects (that race once lost a report). Outside any capture the reports
/// go to the handler that was installed before the first capture.
pub struct DropErrors {
    _private: (),
}

static DROP_ERRORS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
static CAPTURING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static UNCAPTURED: std::sync::OnceLock<ascend_typestate::DropErrorHandler> =
    std::sync::OnceLock::new();

fn collect_drop_error(what: &'static str, error: &ascend_typestate::Error) {
    if CAPTURING.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        if let Some(handler) = UNCAPTURED.get() {
            handler(what, error);
        }
        return;
    }
    DROP_ERRORS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(format!("{what}: {error}"));
}

impl DropErrors {
    /// Starts collecting.
    pub fn capture() -> DropErrors {
        UNCAPTURED.get_or_init(|| ascend_typestate::set_drop_error_handler(collect_drop_error));
        DROP_ERRORS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        CAPTURING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        DropErrors { _private: () }
    }

    /// `what: error` of each report since the last call, in order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *DROP_ERRORS.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Drop for DropErrors {
    fn drop(&mut self) {
        CAPTURING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Ends a session that must leave nothing behind: no drop-error report since `reports`
/// began, no runtime object beyond the `baseline` count, and no checker finding.
pub fn end_clean(session: sim::Session, baseline: usize, reports: &DropErrors) {
    let live = session.sim.live_objects() - baseline;
    let reports = reports.take();
    let findings = session.finish();
    assert!(reports.is_empty(), "{reports:?}");
    assert_eq!(live, 0);
    sim::assert_no_findings(&findings);
}

/// Keeps the panics a test provokes on purpose (their message contains one of `markers`) out
/// of the output; any other panic still goes to the previous hook.
pub fn quiet_panics(markers: &'static [&'static str]) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if !markers.iter().any(|m| message.contains(m)) {
            previous(info);
        }
    }));
}

/// Exits the process (code 99) if the test is still running after `secs` (a hang), unless
/// the returned value was dropped.
pub struct Watchdog(std::sync::Arc<std::sync::atomic::AtomicBool>);
pub fn watchdog(name: &'static str, secs: u64) -> Watchdog {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d = std::sync::Arc::clone(&done);
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(secs));
        if !d.load(std::sync::atomic::Ordering::SeqCst) {
            eprintln!("WATCHDOG: {name} still running after {secs} s: HANG");
            std::process::exit(99);
        }
    });
    Watchdog(done)
}
impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
