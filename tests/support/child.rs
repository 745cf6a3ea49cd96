//! Running one test of the current test binary in a child process, so that a crash, an
//! abort or a hang fails that test only. The one re-run-in-a-child loop of the test suite:
//! every helper that runs a test in a child ([`run`], [`in_child`], [`ran_in_child`],
//! `support::isolated`, `support::callbacks::run_child`, the event and memory sweeps) ends here.
//!
//! A test binary holds its tests in modules (`tests/<area>/main.rs`), so a test's full name
//! is `module::name`; a test may name the child test by its bare function name, which
//! [`full_name`] resolves.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where a child's stderr goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stderr {
    /// A pipe, read into [`Outcome::stderr`].
    Piped,
    /// `/dev/full`: every write to it fails.
    DevFull,
}

/// How a child ended.
#[derive(Debug)]
pub struct Outcome {
    /// The full name of the test the child ran.
    pub test: String,
    /// `None`: killed by the bound.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// Killed by the bound.
    pub fn timed_out(&self) -> bool {
        self.status.is_none()
    }

    /// The exit code (`None`: killed by a signal or by the bound).
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// The signal that killed it (the bound's kill included).
    pub fn signal(&self) -> Option<i32> {
        self.status.and_then(|s| s.signal())
    }

    /// Exited with status 0.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

/// The names of this binary's tests (`--list`), read once.
fn test_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        let out = Command::new(exe)
            .args(["--list", "--format", "terse"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .expect("list the tests of this binary");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_suffix(": test"))
            .map(str::to_owned)
            .collect()
    })
}

/// The full name (`module::name`) of test `test` of this binary: `test` itself when it is
/// one, else the only test named `…::test` (the one in the running test's module when
/// several are).
pub fn full_name(test: &str) -> String {
    let names = test_names();
    if names.iter().any(|n| n == test) {
        return test.to_owned();
    }
    let suffix = format!("::{test}");
    let matches: Vec<&String> = names.iter().filter(|n| n.ends_with(&suffix)).collect();
    match matches.as_slice() {
        [one] => (*one).clone(),
        [] => test.to_owned(),
        several => {
            let thread = std::thread::current();
            let module = thread
                .name()
                .and_then(|n| n.rsplit_once("::"))
                .map(|(module, _)| module.to_owned());
            module
                .map(|m| format!("{m}{suffix}"))
                .filter(|n| several.contains(&n))
                .unwrap_or_else(|| panic!("test `{test}` is ambiguous: {several:?}"))
        }
    }
}

/// Re-runs test `test` of this binary alone (`--exact`, one thread; a bare name is resolved
/// by [`full_name`]), with the variables `vars` set, killing it after `bound`. Both pipes
/// are read while the child runs.
pub fn run(test: &str, vars: &[(&str, &OsStr)], bound: Duration, stderr: Stderr) -> Outcome {
    run_without(test, &[], vars, bound, stderr)
}

/// As [`run`], with the variables `removed` taken out of the child's environment first.
pub fn run_without(
    test: &str,
    removed: &[&str],
    vars: &[(&str, &OsStr)],
    bound: Duration,
    stderr: Stderr,
) -> Outcome {
    let test = full_name(test);
    let exe = std::env::current_exe().expect("current_exe");
    let mut command = Command::new(exe);
    command.args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"]);
    for var in removed {
        command.env_remove(var);
    }
    command
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    match stderr {
        Stderr::Piped => command.stderr(Stdio::piped()),
        Stderr::DevFull => command.stderr(
            File::options()
                .write(true)
                .open("/dev/full")
                .expect("open /dev/full"),
        ),
    };
    let mut child = command.spawn().expect("spawn the child test");
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break Some(s);
        }
        if started.elapsed() > bound {
            // Our own child, by its handle.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        test,
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

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
/// test body checks), and `ACLSIM_QUIET=1`.
pub fn in_child_with(
    test: &str,
    vars: &[(&str, &OsStr)],
    bound: Duration,
) -> (Option<ExitStatus>, String, String) {
    let mut vars = vars.to_vec();
    vars.push(("ACLSIM_QUIET", OsStr::new("1")));
    let out = run(test, &vars, bound, Stderr::Piped);
    (out.status, out.stdout, out.stderr)
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

/// The name of test `test` of module `module` (its `module_path!()`) in this binary: the
/// path without the crate's name (`events::fault_sweep` → `fault_sweep::test`). Unambiguous
/// from any thread, where [`full_name`] needs the running test's thread for names that
/// several modules use.
pub fn test_in(module: &str, test: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_owned(),
    }
}

/// The variable [`own_process`] sets in the child.
pub const OWN_PROCESS: &str = "ASCEND_TYPESTATE_OWN_PROCESS";

/// [`ran_in_child`] for a test of a shared binary that changes process-wide state (a leaked
/// runtime, the drop-error handler, the loaded library): `true` in the test's own process,
/// once the child passed and printed [`passed`]'s marker; `false` in the child.
/// Bound: 30 minutes (a test's own watchdog, if any, fires first).
pub fn own_process(test: &str) -> bool {
    if std::env::var_os(OWN_PROCESS).is_some() {
        return false;
    }
    let (status, out, err) = in_child(test, OWN_PROCESS, Duration::from_secs(1800));
    assert!(
        status.is_some_and(|s| s.success()),
        "{test}: {status:?}\n{out}\n{err}"
    );
    assert!(
        out.contains(&format!("{test}: passed in its own process")),
        "{out}\n{err}"
    );
    true
}

/// The marker [`own_process`] waits for, printed by the child at the end of the test.
pub fn passed(test: &str) {
    println!("{test}: passed in its own process");
}
