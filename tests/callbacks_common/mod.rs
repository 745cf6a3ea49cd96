//! Red-team helpers shared by `tests/red_callbacks_*.rs` (included with `#[path]`); as a
//! test binary of its own it has no tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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
    use std::os::unix::process::ExitStatusExt;
    let exe = std::env::current_exe().unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let out_path = dir.join(format!("red-{name}-{}.out", std::process::id()));
    let err_path = dir.join(format!("red-{name}-{}.err", std::process::id()));
    let out = std::fs::File::create(&out_path).unwrap();
    let err: Stdio = if stderr_full {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
            .into()
    } else {
        std::fs::File::create(&err_path).unwrap().into()
    };
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("RED_CHILD", name)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    ChildOutcome {
        code: status.code(),
        signal: status.signal(),
        timed_out,
        stdout,
        stderr,
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
