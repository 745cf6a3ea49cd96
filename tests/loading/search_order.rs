//! Finding and opening the runtime library (`src/sys/loader.rs`).
//!
//! * the search order, through the pure `candidates` function (no environment mutation);
//! * the simulator, loaded from beside the test executable;
//! * the default search and `ASCEND_ACL_LIB` in a child process (this test executable run
//!   again with a controlled environment), so that this process's environment is never
//!   changed.

use crate::support;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;

use ascend_typestate::LoadError;
use ascend_typestate::sys::loader::{Api, Candidate, LoadOptions, candidates};

use super::library_common::{PROBE_ENV, candidate, run_probe, stub_source};

/// An environment lookup backed by a map, for `candidates`.
fn fake_env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
    let map: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    move |key| map.get(key).cloned()
}

/// The three files looked for under one install root, in order.
fn root_candidates(root: &str, source: &'static str) -> Vec<Candidate> {
    [
        "lib64/libascendcl.so",
        "runtime/lib64/libascendcl.so",
        "lib64/libacl_rt.so",
    ]
    .iter()
    .map(|rel| candidate(Path::new(root).join(rel), source))
    .collect()
}

const EVERYTHING_SET: &[(&str, &str)] = &[
    ("ASCEND_ACL_LIB", "/env/libascendcl.so"),
    ("ASCEND_HOME_PATH", "/home-path"),
    ("ASCEND_TOOLKIT_HOME", "/toolkit-home"),
    ("HOME", "/home/user"),
];

#[test]
fn explicit_path_is_the_only_candidate() {
    let exe = Path::new("/t/debug/examples/ex");
    let list = candidates(
        Some(Path::new("/explicit/libascendcl.so")),
        fake_env(EVERYTHING_SET),
        Some(exe),
    );
    assert_eq!(list, vec![candidate("/explicit/libascendcl.so", "caller")]);
}

#[test]
fn env_variable_is_the_only_candidate_without_explicit_path() {
    let exe = Path::new("/t/debug/examples/ex");
    let list = candidates(None, fake_env(EVERYTHING_SET), Some(exe));
    assert_eq!(
        list,
        vec![candidate("/env/libascendcl.so", "ASCEND_ACL_LIB")]
    );
}

#[test]
fn empty_env_variable_is_ignored() {
    let list = candidates(None, fake_env(&[("ASCEND_ACL_LIB", "")]), None);
    assert!(list.len() > 1, "{list:?}");
    assert!(
        list.iter().all(|c| c.source != "ASCEND_ACL_LIB"),
        "{list:?}"
    );
}

#[test]
fn full_search_order() {
    let env = fake_env(&[
        ("ASCEND_HOME_PATH", "/home-path"),
        ("ASCEND_TOOLKIT_HOME", "/toolkit-home"),
        ("HOME", "/home/user"),
    ]);
    let list = candidates(None, env, Some(Path::new("/t/debug/examples/ex")));

    let mut expected = Vec::new();
    expected.extend(root_candidates("/home-path", "$ASCEND_HOME_PATH"));
    expected.extend(root_candidates("/toolkit-home", "$ASCEND_TOOLKIT_HOME"));
    expected.extend(root_candidates(
        "/usr/local/Ascend/ascend-toolkit/latest",
        "default install",
    ));
    expected.extend(root_candidates("/usr/local/Ascend/cann", "default install"));
    expected.extend(root_candidates(
        "/home/user/Ascend/ascend-toolkit/latest",
        "$HOME install",
    ));
    expected.extend(root_candidates("/home/user/Ascend/cann", "$HOME install"));
    expected.push(candidate("libascendcl.so", "system loader"));
    expected.push(candidate("libacl_rt.so", "system loader"));
    expected.push(candidate(
        "/t/debug/examples/libascendcl.so",
        "beside the executable",
    ));
    expected.push(candidate(
        "/t/debug/deps/libascendcl.so",
        "beside the executable",
    ));
    assert_eq!(list, expected);
}

#[test]
fn search_without_environment_or_executable() {
    let list = candidates(None, fake_env(&[("ASCEND_HOME_PATH", "")]), None);
    let mut expected = Vec::new();
    expected.extend(root_candidates(
        "/usr/local/Ascend/ascend-toolkit/latest",
        "default install",
    ));
    expected.extend(root_candidates("/usr/local/Ascend/cann", "default install"));
    expected.push(candidate("libascendcl.so", "system loader"));
    expected.push(candidate("libacl_rt.so", "system loader"));
    assert_eq!(list, expected);
}

/// CANN 9.x puts link-time stubs under `ROOT/devlib/`: never a candidate.
#[test]
fn devlib_stubs_are_never_candidates() {
    let env = fake_env(&[("ASCEND_HOME_PATH", "/r"), ("HOME", "/h")]);
    let list = candidates(None, env, Some(Path::new("/t/debug/deps/test-1")));
    assert!(
        list.iter()
            .all(|c| !c.path.to_string_lossy().contains("devlib")),
        "{list:?}"
    );
}

#[test]
fn installed_runtime_comes_before_the_development_fallback() {
    let list = candidates(
        None,
        fake_env(&[("HOME", "/h")]),
        Some(Path::new("/t/debug/deps/test-1234")),
    );
    let system = list
        .iter()
        .position(|c| c.source == "system loader")
        .expect("a system loader candidate");
    let first_beside = list
        .iter()
        .position(|c| c.source == "beside the executable")
        .expect("a candidate beside the executable");
    assert!(system < first_beside, "{list:?}");
    assert!(
        list[..system].iter().all(|c| c.path.is_absolute()),
        "install roots are absolute paths: {list:?}"
    );
    assert_eq!(
        list[first_beside].path,
        Path::new("/t/debug/deps/libascendcl.so")
    );
}

#[test]
fn simulator_loads_from_beside_the_test_executable() {
    let path = support::simulator_path();
    let api = Api::load(&LoadOptions::default().path(&path))
        .unwrap_or_else(|e| panic!("the simulator must load with every required symbol: {e}"));
    assert_eq!(api.path(), path);
    assert_eq!(api.source(), "caller");
    assert!(format!("{api:?}").contains(&path.display().to_string()));
}

/// Not a test of its own: the child side of the tests below (passes trivially otherwise).
#[test]
fn probe_default_search() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    match Api::load(&LoadOptions::default()) {
        Ok(api) => println!("PROBE\tok\t{}\t{}", api.source(), api.path().display()),
        Err(LoadError::NotFound { tried }) => {
            println!("PROBE\tnotfound");
            for t in tried {
                println!(
                    "PROBE\ttried\t{}\t{}\t{}",
                    t.source,
                    t.path.display(),
                    t.reason
                );
            }
        }
        Err(e) => println!("PROBE\terror\t{e}"),
    }
}

#[test]
fn default_search_falls_back_to_the_simulator_beside_the_executable() {
    if Path::new("/usr/local/Ascend").exists() {
        eprintln!("skipped: a CANN install exists; the default search would find it first");
        return;
    }
    let sim = support::simulator_path();
    let lines = run_probe(&[]);
    assert_eq!(
        lines[0],
        ["ok", "beside the executable", &sim.display().to_string()],
        "{lines:?}"
    );
}

#[test]
fn env_variable_is_honoured_by_the_search() {
    let path = support::compile_shared_library("stub_env", &stub_source(&[], false));
    let lines = run_probe(&[("ASCEND_ACL_LIB", &path)]);
    assert_eq!(
        lines[0],
        ["ok", "ASCEND_ACL_LIB", &path.display().to_string()],
        "{lines:?}"
    );
}

#[test]
fn env_variable_is_exclusive_even_when_it_is_wrong() {
    // The simulator sits beside the executable, but an explicit choice is never replaced.
    let dir = support::scratch_dir("env-missing");
    let path = dir.join("libascendcl.so");
    let lines = run_probe(&[("ASCEND_ACL_LIB", &path)]);
    assert_eq!(
        lines,
        [
            vec!["notfound".to_owned()],
            vec![
                "tried".to_owned(),
                "ASCEND_ACL_LIB".to_owned(),
                path.display().to_string(),
                "does not exist".to_owned(),
            ],
        ]
    );
}
