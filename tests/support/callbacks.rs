//! Helpers of the tests that run each case in a child process named by its test
//! (`RED_CHILD`), and attack the callback machinery: a watchdog thread, a value whose `Drop`
//! panics, a collecting drop-error handler.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::sync::mpsc;
use std::time::Duration;

/// Whether this process is the child run for `name`.
pub fn is_child(name: &str) -> bool {
    std::env::var("RED_CHILD").as_deref() == Ok(name)
}

#[derive(Debug)]
pub struct ChildOutcome {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

impl ChildOutcome {
    pub fn ok(&self) -> bool {
        !self.timed_out && self.code == Some(0)
    }
    pub fn describe(&self) -> String {
        format!(
            "code={:?} signal={:?} timed_out={}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code,
            self.signal,
            self.timed_out,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

fn tail(s: &str) -> &str {
    let n = s.len();
    if n > 6000 {
        let mut i = n - 6000;
        while !s.is_char_boundary(i) {
            i += 1;
        }
        &s[i..]
    } else {
        s
    }
}

/// Re-runs this test binary with only test `name`, as the child (`RED_CHILD=name`), killing
/// it after `timeout`. `stderr_full`: the child's stderr is `/dev/full`.
pub fn run_child(name: &str, timeout: Duration, stderr_full: bool) -> ChildOutcome {
    run_child_env(name, timeout, stderr_full, &[])
}

pub fn run_child_env(
    name: &str,
    timeout: Duration,
    stderr_full: bool,
    env: &[(&str, &str)],
) -> ChildOutcome {
    let mut vars: Vec<(&str, &OsStr)> = vec![
        ("RED_CHILD", OsStr::new(name)),
        ("RUST_BACKTRACE", OsStr::new("0")),
    ];
    vars.extend(env.iter().map(|(k, v)| (*k, OsStr::new(*v))));
    let stderr = if stderr_full {
        super::child::Stderr::DevFull
    } else {
        super::child::Stderr::Piped
    };
    let out = super::child::run(name, &vars, timeout, stderr);
    ChildOutcome {
        code: out.code(),
        signal: out.signal(),
        timed_out: out.timed_out(),
        stdout: out.stdout,
        stderr: out.stderr,
    }
}

/// Runs `body` on a thread; `None` if it did not finish within `timeout` (the thread is
/// left behind).
pub fn watchdog<T: Send + 'static>(
    timeout: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> Option<std::thread::Result<T>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
        let _ = tx.send(r);
    });
    rx.recv_timeout(timeout).ok()
}

/// A value whose `Drop` panics.
pub struct Bomb(pub &'static str);
impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("Bomb::drop: {}", self.0);
    }
}

/// Drop errors collected by [`collect`].
pub static DROP_ERRORS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

pub fn collect(what: &'static str, error: &ascend_typestate::Error) {
    DROP_ERRORS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(format!("{what}: {error}"));
}

pub fn take_drop_errors() -> Vec<String> {
    std::mem::take(&mut *DROP_ERRORS.lock().unwrap_or_else(|p| p.into_inner()))
}
