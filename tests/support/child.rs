//! Running one test of the current test binary in a child process, so that a crash, an
//! abort or a hang fails that test only.

use std::ffi::OsStr;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Re-runs test `test` of this binary alone, with `env_var=1` set (the child's test body
/// checks it), killing it after `bound`. Returns its status (`None`: killed by the bound),
/// stdout and stderr.
pub fn in_child(
    test: &str,
    env_var: &str,
    bound: Duration,
) -> (Option<ExitStatus>, String, String) {
    in_child_with(test, &[(env_var, OsStr::new("1"))], bound)
}

/// As [`in_child`], with the variables `vars` set in the child (the first one is the one its
/// test body checks).
pub fn in_child_with(
    test: &str,
    vars: &[(&str, &OsStr)],
    bound: Duration,
) -> (Option<ExitStatus>, String, String) {
    let exe = std::env::current_exe().expect("current_exe");
    let mut child = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .envs(vars.iter().copied())
        .env("ACLSIM_QUIET", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child test");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break Some(s);
        }
        if started.elapsed() > bound {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().expect("the child's output");
    (
        status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// For a test that must run in a process of its own (it leaves the runtime initialised, a
/// handle kept, ...): in the test's own process, re-runs `test` in a child with `env_var`
/// set, asserts that it exited successfully and printed `marker`, and returns `true` (the
/// test then returns); in the child, returns `false` (the test runs its body, prints
/// `marker`, and exits).
pub fn ran_in_child(test: &str, env_var: &str, marker: &str) -> bool {
    if std::env::var_os(env_var).is_some() {
        return false;
    }
    let (status, out, err) = in_child(test, env_var, Duration::from_secs(60));
    assert!(status.is_some_and(|s| s.success()), "{out}\n{err}");
    assert!(out.contains(marker), "{out}\n{err}");
    true
}
