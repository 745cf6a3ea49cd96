//! Tests whose every body runs in a child process of its own (`support::isolated`).
//!
//! * [`isolated`]: runs a test's body in a child process (the test binary re-executed with a
//!   filter selecting that one test), so that a crash, an abort, a hang (a watchdog kills
//!   the child) or a leaked runtime handle fails that test only, never the harness or the
//!   other tests of the binary.
//! * [`Reports`]: what reaches the drop-error handler, with the typed error's `Debug` form.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::Mutex;
use std::time::Duration;

/// Set in a child to the name of the test it runs.
pub const CHILD_ENV: &str = "ASCEND_TYPESTATE_ISOLATED_CHILD";

/// How to run a child.
#[derive(Clone, Debug)]
pub struct Child {
    /// Extra environment variables of the child.
    pub env: Vec<(String, String)>,
    /// The watchdog: the child is killed (and the test fails) after this long.
    pub timeout: Duration,
    /// The child's stderr is `/dev/full` (every write to it fails) instead of a pipe.
    pub stderr_to_dev_full: bool,
}

impl Default for Child {
    fn default() -> Child {
        Child {
            env: Vec::new(),
            timeout: Duration::from_secs(60),
            stderr_to_dev_full: false,
        }
    }
}

impl Child {
    pub fn env(mut self, key: &str, value: &str) -> Child {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Child {
        self.timeout = timeout;
        self
    }

    pub fn stderr_to_dev_full(mut self) -> Child {
        self.stderr_to_dev_full = true;
        self
    }
}

/// How a child ended.
#[derive(Debug)]
pub struct Outcome {
    pub name: String,
    /// `None`: killed by the watchdog.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// What happened, for an assertion message.
    pub fn describe(&self) -> String {
        let how = match self.status {
            None => "hung: killed by the watchdog".to_owned(),
            Some(s) => match (s.code(), s.signal()) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => {
                    let name = match signal {
                        6 => " (SIGABRT: abort)",
                        11 => " (SIGSEGV)",
                        7 => " (SIGBUS)",
                        9 => " (SIGKILL)",
                        _ => "",
                    };
                    format!("killed by signal {signal}{name}")
                }
                (None, None) => format!("{s}"),
            },
        };
        format!(
            "child `{}` {how}\n--- child stdout ---\n{}\n--- child stderr ---\n{}",
            self.name, self.stdout, self.stderr
        )
    }

    /// Asserts that the child ran its one test and that it passed (exit status 0).
    pub fn assert_passed(&self) {
        let passed = self.status.is_some_and(|s| s.success());
        assert!(passed, "{}", self.describe());
        assert!(
            self.stdout.contains("1 passed"),
            "the child did not run its test (filter mismatch?): {}",
            self.describe()
        );
    }
}

/// The name of the running test: libtest runs each test on a thread named after it.
pub fn test_name() -> String {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("main");
    assert_ne!(name, "main", "run the tests with the libtest harness");
    name.to_owned()
}

/// Whether this process is the child started for the running test.
pub fn is_child() -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|v| v == test_name())
}

/// Re-executes the test binary for the running test only, and waits for it (watchdog:
/// `child.timeout`).
pub fn spawn_self(child: &Child) -> Outcome {
    let name = test_name();
    let mut vars: Vec<(&str, &OsStr)> = vec![(CHILD_ENV, OsStr::new(name.as_str()))];
    for (key, value) in &child.env {
        vars.push((key.as_str(), OsStr::new(value.as_str())));
    }
    let stderr = if child.stderr_to_dev_full {
        super::child::Stderr::DevFull
    } else {
        super::child::Stderr::Piped
    };
    let out = super::child::run(&name, &vars, child.timeout, stderr);
    Outcome {
        name,
        status: out.status,
        stdout: out.stdout,
        stderr: out.stderr,
    }
}

/// Runs `body` in a child process (see the module docs) and asserts that it passed.
pub fn isolated(body: impl FnOnce()) {
    isolated_with(Child::default(), body)
}

/// [`isolated`] with options.
pub fn isolated_with(child: Child, body: impl FnOnce()) {
    if is_child() {
        body();
        return;
    }
    spawn_self(&child).assert_passed();
}

/// The drop-error handler's reports while a value lives: `(what, format!("{error:?}"))`.
/// The handler is process-wide: use it in a child (one test per process).
pub struct Reports {
    previous: ascend_typestate::DropErrorHandler,
}

static REPORTS: Mutex<Vec<(&'static str, String)>> = Mutex::new(Vec::new());

fn collect(what: &'static str, error: &ascend_typestate::Error) {
    REPORTS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((what, format!("{error:?}")));
}

impl Reports {
    pub fn capture() -> Reports {
        REPORTS.lock().unwrap_or_else(|p| p.into_inner()).clear();
        Reports {
            previous: ascend_typestate::set_drop_error_handler(collect),
        }
    }

    /// Every report since the last call, in order.
    pub fn take(&self) -> Vec<(&'static str, String)> {
        std::mem::take(&mut *REPORTS.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Drop for Reports {
    fn drop(&mut self) {
        ascend_typestate::set_drop_error_handler(self.previous);
    }
}
