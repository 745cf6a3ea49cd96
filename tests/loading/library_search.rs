//! Issue 2: finding and opening the runtime library (`src/sys/loader.rs`).
//!
//! * the search order, through the pure `candidates` function (no environment mutation);
//! * `Api::load` on missing files, on C stubs compiled here with `cc` (a stub without the
//!   optional symbols, one without a required symbol), and on the simulator;
//! * the default search and `ASCEND_ACL_LIB` in a child process (this test executable run
//!   again with a controlled environment), so that this process's environment is never
//!   changed.

use crate::support;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use ascend_typestate::result::CallError;
use ascend_typestate::sys::loader::{Api, Candidate, LoadOptions, candidates, load_global};
use ascend_typestate::sys::{OPTIONAL_SYMBOLS, REQUIRED_SYMBOLS};
use ascend_typestate::{AclError, LoadError};

// ---- The search order (pure) -------------------------------------------------------------

/// An environment lookup backed by a map, for `candidates`.
fn fake_env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
    let map: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    move |key| map.get(key).cloned()
}

fn candidate(path: impl Into<PathBuf>, source: &'static str) -> Candidate {
    Candidate {
        path: path.into(),
        source,
    }
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
    expected.push(candidate("libascendcl.so", "system loader"));
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
    assert_eq!(list, expected);
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

// ---- Api::load: missing and broken files ------------------------------------------------

#[test]
fn nonexistent_explicit_path_is_not_found_and_listed() {
    let dir = support::scratch_dir("nonexistent");
    let path = dir.join("no-such-libascendcl.so");
    let err = Api::load(&LoadOptions::default().path(&path)).expect_err("nothing to load");
    let LoadError::NotFound { tried } = &err else {
        panic!("expected NotFound, got {err:?}");
    };
    assert_eq!(
        tried.len(),
        1,
        "an explicit path is the only candidate: {tried:?}"
    );
    assert_eq!(tried[0].path, path);
    assert_eq!(tried[0].source, "caller");
    assert!(!tried[0].reason.is_empty());
    let shown = err.to_string();
    assert!(
        shown.contains(&path.display().to_string()),
        "Display must list the path tried: {shown}"
    );
}

#[test]
fn explicit_path_that_is_not_a_library_reports_the_loader_answer() {
    let dir = support::scratch_dir("not-a-library");
    let path = dir.join("libascendcl.so");
    std::fs::write(&path, "this is not an ELF file\n").unwrap();
    let err = Api::load(&LoadOptions::default().path(&path)).expect_err("not a library");
    let LoadError::NotFound { tried } = &err else {
        panic!("expected NotFound, got {err:?}");
    };
    assert_eq!(tried.len(), 1, "{tried:?}");
    assert_eq!(tried[0].path, path);
    assert_ne!(
        tried[0].reason, "does not exist",
        "the file exists: {tried:?}"
    );
    assert!(err.to_string().contains(&tried[0].reason), "{err}");
}

// ---- Api::load: C stubs ------------------------------------------------------------------

/// What every stub function without a dedicated body returns: a code no runtime uses, so a
/// test sees that the call really reached the stub and that an unknown code survives.
const STUB_CODE: i32 = 424_242;

/// A C stub runtime exporting every required and (if `with_optional`) optional symbol,
/// except those in `omit`. A few functions have real bodies; the rest return [`STUB_CODE`].
fn stub_source(omit: &[&str], with_optional: bool) -> String {
    let mut source = String::from("/* generated by tests/loading/library_search.rs */\n");
    let optional: &[&str] = if with_optional { OPTIONAL_SYMBOLS } else { &[] };
    for &name in REQUIRED_SYMBOLS.iter().chain(optional) {
        if omit.contains(&name) {
            continue;
        }
        let body = match name {
            "aclrtGetDeviceCount" => {
                "int aclrtGetDeviceCount(unsigned int *count) { *count = 3; return 0; }".to_owned()
            }
            "aclrtSetDevice" => {
                "int aclrtSetDevice(int device) { return device == 0 ? 0 : 107001; }".to_owned()
            }
            // The optional ones echo their timeout, so a test sees the argument arrive.
            "aclrtSynchronizeDeviceWithTimeout" => {
                "int aclrtSynchronizeDeviceWithTimeout(int timeout) { return timeout; }".to_owned()
            }
            "aclrtSynchronizeEventWithTimeout" => {
                "int aclrtSynchronizeEventWithTimeout(void *event, int timeout) \
                 { (void)event; return timeout; }"
                    .to_owned()
            }
            // A pointer, not a code: no message kept (an `int` here would be read as one).
            "aclGetRecentErrMsg" => "const char *aclGetRecentErrMsg(void) { return 0; }".to_owned(),
            other => format!("int {other}(void) {{ return {STUB_CODE}; }}"),
        };
        source.push_str(&body);
        source.push('\n');
    }
    source
}

#[test]
fn stub_without_optional_symbols_loads_and_reports_unsupported_at_the_call() {
    let path = support::compile_shared_library("stub_no_optional", &stub_source(&[], false));
    let api = Api::load(&LoadOptions::default().path(&path)).expect("the stub loads");
    assert_eq!(api.path(), path);
    assert_eq!(api.source(), "caller");

    // Required calls work, arguments and results cross the boundary.
    assert_eq!(api.get_device_count().unwrap(), 3);
    // SAFETY (this block and the raw calls below): a stub library, not a runtime any typed
    // handle uses.
    unsafe { api.set_device(0) }.unwrap();
    let err = unsafe { api.set_device(1) }.expect_err("the stub rejects device 1");
    assert!(
        matches!(
            err,
            CallError::Failed {
                call: "aclrtSetDevice",
                code: AclError::RtInvalidDeviceId,
                ..
            }
        ),
        "{err:?}"
    );
    // An unknown code travels intact through the whole path.
    let err = unsafe { api.init(None) }.expect_err("the stub's aclInit returns STUB_CODE");
    assert!(
        matches!(
            err,
            CallError::Failed {
                call: "aclInit",
                code: AclError::Unknown(STUB_CODE),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.code().map(AclError::code), Some(STUB_CODE));

    // The optional symbols are absent: reported by has_symbol, and only at their call.
    for symbol in OPTIONAL_SYMBOLS {
        assert!(!api.has_symbol(symbol), "{symbol} should be absent");
    }
    for symbol in REQUIRED_SYMBOLS {
        assert!(api.has_symbol(symbol), "{symbol} should be present");
    }
    assert!(!api.has_symbol("aclNoSuchFunction"));
    assert!(api.functions().aclrtSynchronizeEventWithTimeout.is_none());

    let err =
        unsafe { api.synchronize_device_with_timeout(10) }.expect_err("optional symbol absent");
    assert!(
        matches!(
            err,
            CallError::Unsupported {
                symbol: "aclrtSynchronizeDeviceWithTimeout"
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("aclrtSynchronizeDeviceWithTimeout"),
        "{err}"
    );

    // SAFETY: the stub lacks the symbol, so nothing is called and the null handle is never
    // dereferenced.
    let err = unsafe { api.synchronize_event_with_timeout(std::ptr::null_mut(), 10) }
        .expect_err("optional symbol absent");
    assert!(
        matches!(
            err,
            CallError::Unsupported {
                symbol: "aclrtSynchronizeEventWithTimeout"
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("aclrtSynchronizeEventWithTimeout"),
        "{err}"
    );

    // Still usable after an Unsupported answer.
    assert_eq!(api.get_device_count().unwrap(), 3);
}

#[test]
fn stub_with_optional_symbols_calls_them() {
    let path = support::compile_shared_library("stub_with_optional", &stub_source(&[], true));
    let api = Api::load(&LoadOptions::default().path(&path)).expect("the stub loads");
    for symbol in OPTIONAL_SYMBOLS {
        assert!(api.has_symbol(symbol), "{symbol} should be present");
    }
    // SAFETY: a stub library, not a runtime any typed handle uses.
    unsafe { api.synchronize_device_with_timeout(0) }.unwrap();
    // SAFETY: as above.
    let err = unsafe { api.synchronize_device_with_timeout(507_046) }.unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Failed {
                call: "aclrtSynchronizeDeviceWithTimeout",
                code: AclError::RtStreamSyncTimeout,
                ..
            }
        ),
        "{err:?}"
    );
    // SAFETY: the stub ignores the handle.
    let result = unsafe { api.synchronize_event_with_timeout(std::ptr::null_mut(), 507_047) };
    assert!(
        matches!(
            result,
            Err(CallError::Failed {
                call: "aclrtSynchronizeEventWithTimeout",
                code: AclError::RtEventSyncTimeout,
                ..
            })
        ),
        "{result:?}"
    );
}

#[test]
fn stub_missing_a_required_symbol_is_rejected_naming_it() {
    let path = support::compile_shared_library(
        "stub_no_create_stream",
        &stub_source(&["aclrtCreateStream"], true),
    );
    let err = Api::load(&LoadOptions::default().path(&path)).expect_err("missing symbol");
    let LoadError::MissingSymbol {
        library,
        symbol,
        reason,
    } = &err
    else {
        panic!("expected MissingSymbol, got {err:?}");
    };
    assert_eq!(*symbol, "aclrtCreateStream");
    assert_eq!(library, &path);
    assert!(!reason.is_empty());
    let shown = err.to_string();
    assert!(shown.contains("aclrtCreateStream"), "{shown}");
    assert!(shown.contains(&path.display().to_string()), "{shown}");
}

#[test]
fn every_required_symbol_is_checked_at_load() {
    // Dropping any one required symbol fails the load, naming that symbol.
    // (A handful, not all 38: each needs a compile.)
    for (i, &missing) in REQUIRED_SYMBOLS
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 9 == 0 || *i == REQUIRED_SYMBOLS.len() - 1)
    {
        let path = support::compile_shared_library(
            &format!("stub_missing_{i}"),
            &stub_source(&[missing], true),
        );
        match Api::load(&LoadOptions::default().path(&path)) {
            Err(LoadError::MissingSymbol { symbol, .. }) => assert_eq!(symbol, missing),
            other => panic!("without {missing}: expected MissingSymbol, got {other:?}"),
        }
    }
}

#[test]
fn global_runtime_is_loaded_once() {
    if support::child::own_process("global_runtime_is_loaded_once") {
        return;
    }
    // The only test of this executable that touches the process-wide runtime.
    let path = support::compile_shared_library("stub_global", &stub_source(&[], false));
    let first = load_global(&LoadOptions::default().path(&path)).expect("the stub loads");
    assert_eq!(first.path(), path);
    let again = load_global(&LoadOptions::default().path(&path)).unwrap();
    assert!(std::ptr::eq(first, again));
    let default = load_global(&LoadOptions::default()).unwrap();
    assert!(std::ptr::eq(first, default), "the loaded runtime is reused");
    assert!(std::ptr::eq(
        first,
        ascend_typestate::sys::loader::global().unwrap()
    ));

    let other = path.with_file_name("libother.so");
    match load_global(&LoadOptions::default().path(&other)) {
        Err(LoadError::AlreadyLoaded { loaded, requested }) => {
            assert_eq!(loaded, path);
            assert_eq!(requested, other);
        }
        res => panic!("expected AlreadyLoaded, got {res:?}"),
    }
    support::child::passed("global_runtime_is_loaded_once");
}

// ---- The simulator -----------------------------------------------------------------------

#[test]
fn simulator_loads_from_beside_the_test_executable() {
    let path = support::simulator_path();
    let api = Api::load(&LoadOptions::default().path(&path))
        .unwrap_or_else(|e| panic!("the simulator must load with every required symbol: {e}"));
    assert_eq!(api.path(), path);
    assert_eq!(api.source(), "caller");
    assert!(format!("{api:?}").contains(&path.display().to_string()));
}

// ---- The search in a child process -------------------------------------------------------

/// Set in the child: `probe_default_search` then loads with the default options and prints
/// the outcome.
const PROBE_ENV: &str = "ASCEND_TYPESTATE_LOADER_PROBE";

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

/// Runs this test executable's `probe_default_search` with the variables the search reads
/// removed (and `LD_LIBRARY_PATH`, which Cargo points at the simulator's directory), plus
/// `vars`; returns the probe's lines, split on tabs, without the `PROBE` tag.
fn run_probe(vars: &[(&str, &Path)]) -> Vec<Vec<String>> {
    let mut all: Vec<(&str, &std::ffi::OsStr)> = vec![(PROBE_ENV, std::ffi::OsStr::new("1"))];
    all.extend(vars.iter().map(|(k, v)| (*k, v.as_os_str())));
    let output = support::child::run_without(
        "probe_default_search",
        &[
            "LD_LIBRARY_PATH",
            "ASCEND_ACL_LIB",
            "ASCEND_HOME_PATH",
            "ASCEND_TOOLKIT_HOME",
            "HOME",
        ],
        &all,
        std::time::Duration::from_secs(600),
        support::child::Stderr::Piped,
    );
    let stdout = output.stdout.as_str();
    assert!(
        output.success(),
        "the probe failed:\n{stdout}\n{}",
        output.stderr
    );
    let lines: Vec<Vec<String>> = stdout
        .lines()
        // libtest prints "test probe_default_search ... " on the line of the first output.
        .filter_map(|l| l.find("PROBE\t").map(|at| &l[at + "PROBE\t".len()..]))
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect();
    assert!(!lines.is_empty(), "the probe printed nothing:\n{stdout}");
    lines
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

// ---- Strict loading (deployments) --------------------------------------------------------

#[test]
fn strict_loading_refuses_relative_paths_and_bare_names_before_opening_anything() {
    for path in ["libascendcl.so", "./libascendcl.so", "lib64/libascendcl.so"] {
        match Api::load(&LoadOptions::default().strict(path)) {
            Err(LoadError::NotAbsolute { path: p }) => assert_eq!(p, Path::new(path)),
            other => panic!("{path}: expected NotAbsolute, got {other:?}"),
        }
        // The process-wide loader refuses it the same way, whatever is loaded.
        assert!(matches!(
            load_global(&LoadOptions::default().strict(path)),
            Err(LoadError::NotAbsolute { .. })
        ));
    }
}

#[test]
fn strict_loading_of_the_simulator_reports_the_real_file() {
    let path = support::simulator_path();
    let api = Api::load(&LoadOptions::default().strict(&path)).expect("the simulator loads");
    assert_eq!(api.source(), "strict");
    assert_eq!(api.path(), path);
    assert_eq!(api.resolved_path(), std::fs::canonicalize(&path).unwrap());

    // Through a link (as CANN's `latest`): the report names the file behind it.
    let dir = support::scratch_dir("strict-link");
    let link = dir.join("libascendcl.so");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let api = Api::load(&LoadOptions::default().strict(&link)).expect("a link to the simulator");
    assert_eq!(api.path(), link);
    assert_eq!(api.resolved_path(), std::fs::canonicalize(&path).unwrap());
}

#[test]
fn strict_loading_has_no_fallback_and_names_the_one_file() {
    let dir = support::scratch_dir("strict-missing");
    let missing = dir.join("libascendcl.so");
    let err = Api::load(&LoadOptions::default().strict(&missing)).expect_err("nothing there");
    let LoadError::NotFound { tried } = &err else {
        panic!("expected NotFound, got {err:?}");
    };
    // Only that file: no system loader, no install roots, no simulator beside the executable
    // (which exists here and would be found by the default search).
    assert_eq!(tried.len(), 1, "{tried:?}");
    assert_eq!(tried[0].path, missing);
    assert_eq!(tried[0].source, "strict");
    assert!(!err.to_string().contains("tried, in order"), "{err}");
}

/// A library that defines nothing itself and depends on the simulator: `dlsym` finds every
/// function in its dependency. The default loader accepts it and reports where the functions
/// come from; strict loading refuses it, naming that file.
#[test]
fn strict_loading_refuses_a_library_whose_functions_come_from_another_file() {
    let sim = support::simulator_path();
    let sim_dir = sim.parent().unwrap().to_str().unwrap().to_owned();
    let forwarder = support::compile_shared_library_with(
        "forwarder",
        "/* Defines no runtime function: all come from the simulator it needs. */\n\
         int forwarder_marker(void) { return 1; }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{sim_dir}"),
            "-lascendcl",
            &format!("-Wl,-rpath,{sim_dir}"),
            // RPATH, not RUNPATH: it beats the LD_LIBRARY_PATH cargo sets, which may name
            // another copy of the simulator.
            "-Wl,--disable-new-dtags",
        ],
    );
    let relaxed = Api::load(&LoadOptions::default().path(&forwarder)).expect("loads");
    assert_eq!(relaxed.path(), forwarder);
    assert!(same_file(relaxed.resolved_path(), &sim));
    match Api::load(&LoadOptions::default().strict(&forwarder)) {
        Err(e @ LoadError::ResolvedElsewhere { .. }) => {
            let LoadError::ResolvedElsewhere {
                requested,
                resolved,
                ..
            } = &e
            else {
                unreachable!()
            };
            assert_eq!(*requested, std::fs::canonicalize(&forwarder).unwrap());
            assert!(same_file(resolved, &sim), "{resolved:?}");
            assert!(e.to_string().contains("aclInit"), "{e}");
        }
        other => panic!("expected ResolvedElsewhere, got {other:?}"),
    }
}

/// A library that defines `aclInit` itself but takes every other function from its
/// dependency (the simulator): strict loading checks every function, not only `aclInit`.
#[test]
fn strict_loading_refuses_a_library_that_forwards_all_but_acl_init() {
    let sim = support::simulator_path();
    let sim_dir = sim.parent().unwrap().to_str().unwrap().to_owned();
    let partial = support::compile_shared_library_with(
        "partial_forwarder",
        "int aclInit(const char *config) { (void)config; return 0; }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{sim_dir}"),
            "-lascendcl",
            &format!("-Wl,-rpath,{sim_dir}"),
            // RPATH, not RUNPATH: it beats the LD_LIBRARY_PATH cargo sets, which may name
            // another copy of the simulator.
            "-Wl,--disable-new-dtags",
        ],
    );
    match Api::load(&LoadOptions::default().strict(&partial)) {
        Err(LoadError::ResolvedElsewhere {
            symbol, resolved, ..
        }) => {
            assert_ne!(symbol, "aclInit");
            assert!(same_file(&resolved, &sim), "{resolved:?}");
        }
        other => panic!("expected ResolvedElsewhere, got {other:?}"),
    }
    // Without strict loading it loads, and the report names where `aclInit` is.
    let api = Api::load(&LoadOptions::default().path(&partial)).unwrap();
    assert_eq!(
        api.resolved_path(),
        std::fs::canonicalize(&partial).unwrap()
    );
}

/// Whether two paths name one file (Cargo hard-links the simulator into two directories).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let id = |p: &Path| std::fs::metadata(p).map(|m| (m.dev(), m.ino())).ok();
    id(a).is_some() && id(a) == id(b)
}

/// A complete stub runtime, `lib<name>.so`, in a directory of its own.
fn full_stub(name: &str) -> PathBuf {
    support::compile_shared_library(name, &stub_source(&[], true))
}

/// A CANN-style `latest` link changed under a running process: strict loading resolves
/// the link before opening, so it reports (and loads) the file the link names now, and a
/// strict load of the file loaded first is not mistaken for another one.
#[test]
fn strict_loading_follows_a_link_changed_after_a_load() {
    let v1 = full_stub("stub_v1");
    let v2 = full_stub("stub_v2");
    let dir = support::scratch_dir("strict-latest");
    let latest = dir.join("latest.so");
    std::os::unix::fs::symlink(&v1, &latest).unwrap();
    let first = Api::load(&LoadOptions::default().strict(&latest)).unwrap();
    assert_eq!(first.resolved_path(), std::fs::canonicalize(&v1).unwrap());
    std::fs::remove_file(&latest).unwrap();
    std::os::unix::fs::symlink(&v2, &latest).unwrap();
    let second = Api::load(&LoadOptions::default().strict(&latest)).unwrap();
    assert_eq!(second.resolved_path(), std::fs::canonicalize(&v2).unwrap());
    let again = Api::load(&LoadOptions::default().strict(&v1)).unwrap();
    assert_eq!(again.resolved_path(), std::fs::canonicalize(&v1).unwrap());
}

#[test]
fn a_path_with_a_nul_byte_is_refused_before_the_loader() {
    use std::os::unix::ffi::OsStrExt as _;
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/x\0y/libascendcl.so"));
    let err = Api::load(&LoadOptions::default().path(&path)).expect_err("refused");
    let LoadError::NotFound { tried } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(tried[0].reason, "contains a NUL byte");
}

#[test]
fn a_fifo_is_not_opened() {
    let dir = support::scratch_dir("fifo");
    let fifo = dir.join("libascendcl.so");
    let status = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    // `dlopen` would block on it forever.
    let err = Api::load(&LoadOptions::default().path(&fifo)).expect_err("refused");
    let LoadError::NotFound { tried } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(tried[0].reason, "not a regular file");
}

/// A runtime built for the board (aarch64) copied to an x86_64 machine, or the reverse:
/// the loader says "No such file or directory"; the message says what the file is.
#[test]
fn a_library_for_another_machine_is_named_as_such() {
    let dir = support::scratch_dir("other-machine");
    let path = dir.join("libascendcl.so");
    let other: u16 = if cfg!(target_arch = "aarch64") {
        62
    } else {
        183
    };
    let mut header = vec![0u8; 64];
    header[..4].copy_from_slice(b"\x7fELF");
    header[4] = 2; // 64-bit
    header[5] = 1; // little-endian
    header[6] = 1; // version
    header[16] = 3; // ET_DYN
    header[18..20].copy_from_slice(&other.to_le_bytes());
    std::fs::write(&path, header).unwrap();
    let err = Api::load(&LoadOptions::default().path(&path)).expect_err("another machine");
    let LoadError::NotFound { tried } = &err else {
        panic!("{err:?}")
    };
    let expected = if other == 183 {
        "for aarch64"
    } else {
        "for x86_64"
    };
    assert!(tried[0].reason.contains(expected), "{}", tried[0].reason);
    assert!(
        tried[0].reason.contains("this process is 64-bit"),
        "{}",
        tried[0].reason
    );
}

/// An installed runtime that exists but cannot be loaded is never replaced by the
/// simulator beside the executable: the search reports it instead.
#[test]
fn a_broken_installed_runtime_is_not_replaced_by_the_development_fallback() {
    let root = support::scratch_dir("broken-install");
    std::fs::create_dir_all(root.join("lib64")).unwrap();
    std::fs::write(root.join("lib64/libascendcl.so"), "not a library\n").unwrap();
    let lines = run_probe(&[("ASCEND_HOME_PATH", &root)]);
    assert_eq!(lines[0], ["notfound"], "{lines:?}");
    let beside: Vec<_> = lines
        .iter()
        .filter(|l| l.get(1).map(String::as_str) == Some("beside the executable"))
        .collect();
    assert!(!beside.is_empty(), "{lines:?}");
    for line in beside {
        assert!(
            line[3].starts_with("not tried: an installed runtime"),
            "{line:?}"
        );
    }
}

// ---- The model API: in the runtime, beside it (libacl_mdl.so), or unavailable (MD) ---------

/// A C stub model library exporting every model function except those in `omit`; each
/// returns [`STUB_CODE`] (only `aclmdlQuerySize`, which returns a code, is called).
fn model_stub_source(omit: &[&str]) -> String {
    let mut source = String::from("/* generated by tests/loading/library_search.rs */\n");
    for &name in ascend_typestate::sys::model::MODEL_SYMBOLS {
        if !omit.contains(&name) {
            source.push_str(&format!("int {name}(void) {{ return {STUB_CODE}; }}\n"));
        }
    }
    source
}

/// A stub runtime without model functions in a directory of its own, with `model_library`
/// (if any) copied beside it as `libacl_mdl.so`.
fn split_install(name: &str, model_library: Option<&str>) -> PathBuf {
    let runtime = support::compile_shared_library(name, &stub_source(&[], true));
    if let Some(source) = model_library {
        let model = support::compile_shared_library(&format!("{name}_mdl"), source);
        let beside = runtime
            .parent()
            .expect("a directory")
            .join(ascend_typestate::sys::model::MODEL_LIBRARY);
        std::fs::copy(&model, &beside).expect("copy the model library beside the runtime");
    }
    runtime
}

#[test]
fn model_functions_are_found_in_libacl_mdl_beside_the_runtime() {
    let runtime = split_install("split_runtime", Some(&model_stub_source(&[])));
    let api = Api::load(&LoadOptions::default().path(&runtime)).expect("the stub loads");
    if let Err(missing) = api.models() {
        panic!("{missing}");
    }
    // The call reaches the model library's function.
    let err = api
        .model_query_size(c"model.om")
        .expect_err("the stub answers STUB_CODE");
    assert!(
        matches!(
            err,
            CallError::Failed {
                call: "aclmdlQuerySize",
                code: AclError::Unknown(STUB_CODE),
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_missing_model_library_makes_only_the_model_api_unavailable() {
    let runtime = split_install("runtime_without_models", None);
    let api = Api::load(&LoadOptions::default().path(&runtime)).expect("the runtime still loads");
    let Err(missing) = api.models() else {
        panic!("no model functions anywhere, yet found");
    };
    assert_eq!(missing.symbol, "aclmdlCreateDesc");
    assert_eq!(missing.tried[0].0, api.resolved_path());
    assert!(
        missing.to_string().contains("aclmdlCreateDesc"),
        "{missing}"
    );
    let err = api.model_query_size(c"model.om").expect_err("unavailable");
    assert!(
        matches!(
            err,
            CallError::Unsupported {
                symbol: "aclmdlCreateDesc"
            }
        ),
        "{err:?}"
    );
    // The runtime itself is untouched.
    assert_eq!(api.get_device_count().unwrap(), 3);
}

#[test]
fn a_model_library_missing_a_function_is_named_by_that_function() {
    let runtime = split_install(
        "split_runtime_incomplete",
        Some(&model_stub_source(&["aclmdlExecuteAsync"])),
    );
    let api = Api::load(&LoadOptions::default().path(&runtime)).expect("the stub loads");
    let Err(missing) = api.models() else {
        panic!("one model function is missing, yet found");
    };
    assert_eq!(missing.symbol, "aclmdlExecuteAsync");
    assert!(
        missing
            .tried
            .iter()
            .any(|(path, _)| path.ends_with("libacl_mdl.so")),
        "{missing}"
    );
    let err =
        ascend_typestate::Error::from(api.model_query_size(c"model.om").expect_err("unavailable"));
    assert!(
        matches!(
            err,
            ascend_typestate::Error::Unsupported {
                symbol: "aclmdlExecuteAsync"
            }
        ),
        "{err:?}"
    );
}

// ---- Bad library files: refused before `dlopen`, through every entry (issue 23) -----------

/// Set in the child: `sweep_child` loads the file `SWEEP_PATH` names through the entry this
/// variable names (`strict`, `library`, `env`, or `model` for the model library).
const SWEEP_ENTRY: &str = "ASCEND_TYPESTATE_SWEEP_ENTRY";
const SWEEP_PATH: &str = "ASCEND_TYPESTATE_SWEEP_PATH";

/// Each entry and the `TriedPath::source` it reports.
const ENTRIES: [(&str, &str); 3] = [
    ("strict", "strict"),
    ("library", "caller"),
    ("env", "ASCEND_ACL_LIB"),
];

/// A child's deadline: a hang (a FIFO opened for reading blocks) is a failure, not a stuck run.
const CHILD_BOUND: std::time::Duration = std::time::Duration::from_secs(30);

/// Not a test of its own: the child side of the sweep (passes trivially otherwise). Prints
/// one `SWEEP` line per path tried, or what else happened.
#[test]
fn sweep_child() {
    use ascend_typestate::{Acl, Error, InitOptions};
    let Some(entry) = std::env::var_os(SWEEP_ENTRY) else {
        return;
    };
    let path = PathBuf::from(std::env::var_os(SWEEP_PATH).unwrap_or_default());
    let result = match entry.to_str() {
        Some("strict") => Acl::init_with(&InitOptions::default().strict_library(&path)),
        Some("library") => Acl::init_with(&InitOptions::default().library(&path)),
        Some("env") => Acl::init(), // ASCEND_ACL_LIB names the file.
        _ => {
            // `path` is a runtime with a model library beside it.
            let api = Api::load(&LoadOptions::default().path(&path)).expect("the runtime loads");
            match api.models() {
                Ok(_) => println!("SWEEP\tmodels found"),
                Err(missing) => {
                    for (file, reason) in &missing.tried {
                        let reason = reason.as_deref().unwrap_or("-");
                        println!("SWEEP\tmodel\t{}\t{reason}", file.display());
                    }
                }
            }
            return;
        }
    };
    match result {
        Ok(acl) => println!("SWEEP\tloaded\t{}", acl.library()),
        Err(Error::Load(error)) => match *error {
            LoadError::NotFound { tried } => {
                for t in tried {
                    println!("SWEEP\trefused\t{}\t{}", t.source, t.reason);
                }
            }
            other => println!("SWEEP\tanother load error\t{other:?}"),
        },
        Err(other) => println!("SWEEP\tanother error\t{other:?}"),
    }
}

/// Runs `sweep_child` for `entry` on `path`; asserts that the child exited normally (no
/// signal, no deadline) and returns its `SWEEP` lines, split on tabs, and its run time.
fn sweep_in_child(entry: &str, path: &Path) -> (Vec<Vec<String>>, std::time::Duration) {
    sweep_in_child_with(entry, path, &[])
}

/// [`sweep_in_child`] with `extra` variables set in the child (`LD_LIBRARY_PATH`).
fn sweep_in_child_with(
    entry: &str,
    path: &Path,
    extra: &[(&str, &std::ffi::OsStr)],
) -> (Vec<Vec<String>>, std::time::Duration) {
    let mut vars = vec![
        (SWEEP_ENTRY, std::ffi::OsStr::new(entry)),
        (SWEEP_PATH, path.as_os_str()),
    ];
    vars.extend_from_slice(extra);
    if entry == "env" {
        vars.push(("ASCEND_ACL_LIB", path.as_os_str()));
    }
    let started = std::time::Instant::now();
    let (status, stdout, stderr) = support::child::in_child_with("sweep_child", &vars, CHILD_BOUND);
    let took = started.elapsed();
    let shown = path.display();
    let Some(status) = status else {
        panic!("{entry} {shown}: killed after {CHILD_BOUND:?} (a hang)\n{stdout}\n{stderr}");
    };
    assert!(
        status.success(),
        "{entry} {shown}: the child did not exit normally ({status})\n{stdout}\n{stderr}"
    );
    let lines: Vec<Vec<String>> = stdout
        .lines()
        .filter_map(|l| l.find("SWEEP\t").map(|at| &l[at + "SWEEP\t".len()..]))
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect();
    assert!(
        !lines.is_empty(),
        "{entry} {shown}: nothing printed\n{stdout}\n{stderr}"
    );
    (lines, took)
}

/// Loads `path` through every entry, each in a child process (a `SIGBUS` fails this test, not
/// the harness): each is a typed `Error::Load(NotFound)` naming that one file with a reason
/// containing `expected`. Returns the slowest child's time.
fn refused_by_every_entry(path: &Path, expected: &str) -> std::time::Duration {
    let mut slowest = std::time::Duration::ZERO;
    for (entry, source) in ENTRIES {
        let (lines, took) = sweep_in_child(entry, path);
        slowest = slowest.max(took);
        assert_eq!(lines.len(), 1, "{entry} {}: {lines:?}", path.display());
        let line = &lines[0];
        assert_eq!(
            line[..2],
            ["refused", source],
            "{entry} {}: {line:?}",
            path.display()
        );
        assert!(
            line[2].contains(expected),
            "{entry} {}: expected a reason with `{expected}`, got `{}`",
            path.display(),
            line[2]
        );
    }
    slowest
}

/// The simulator's bytes (a 64-bit little-endian ELF shared library, as every target of
/// this crate's tests).
fn simulator_bytes() -> Vec<u8> {
    let bytes = std::fs::read(support::simulator_path()).unwrap();
    assert_eq!(
        bytes[..6],
        *b"\x7fELF\x02\x01",
        "a 64-bit little-endian ELF"
    );
    bytes
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// The offset in the file of each program header and its `p_type` (ELF64).
fn program_headers(bytes: &[u8]) -> Vec<(usize, u32)> {
    let phoff = usize::try_from(u64_at(bytes, 32)).unwrap();
    let (size, count) = (
        usize::from(u16_at(bytes, 54)),
        usize::from(u16_at(bytes, 56)),
    );
    assert_eq!(size, 56);
    (0..count)
        .map(|i| {
            let at = phoff + i * size;
            (
                at,
                u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()),
            )
        })
        .collect()
}

/// The program header of the simulator's first segment of type `kind`.
fn first_of(bytes: &[u8], kind: u32) -> usize {
    program_headers(bytes)
        .into_iter()
        .find(|&(_, k)| k == kind)
        .map(|(at, _)| at)
        .unwrap_or_else(|| panic!("no segment of type {kind}"))
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;

/// This target's `e_machine` and another one's, for crafted headers.
fn machines() -> (u16, u16) {
    if cfg!(target_arch = "aarch64") {
        (183, 62)
    } else {
        (62, 183)
    }
}

/// A 64-bit ELF header (`ET_DYN`, no program headers) for `machine`, in `big` or little
/// byte order.
fn elf64_header(machine: u16, big: bool) -> Vec<u8> {
    let mut header = vec![0u8; 64];
    header[..4].copy_from_slice(b"\x7fELF");
    header[4] = 2;
    header[5] = if big { 2 } else { 1 };
    header[6] = 1;
    let put16 = |h: &mut Vec<u8>, at: usize, v: u16| {
        let b = if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        h[at..at + 2].copy_from_slice(&b);
    };
    put16(&mut header, 16, 3); // ET_DYN
    put16(&mut header, 18, machine);
    put16(&mut header, 52, 64); // e_ehsize
    put16(&mut header, 54, 56); // e_phentsize
    header
}

#[test]
fn the_whole_simulator_loads_through_every_entry_in_a_child() {
    // The control: the sweep's harness sees a load succeed, and the checks accept the
    // simulator (a copy, so that strict loading's file is the one checked).
    let dir = support::scratch_dir("sweep-whole");
    let copy = dir.join("libascendcl.so");
    std::fs::copy(support::simulator_path(), &copy).unwrap();
    for (entry, _) in ENTRIES {
        let (lines, _) = sweep_in_child(entry, &copy);
        assert_eq!(lines.len(), 1, "{entry}: {lines:?}");
        assert_eq!(lines[0][0], "loaded", "{entry}: {lines:?}");
    }
}

#[test]
fn truncated_copies_of_the_simulator_are_refused_through_every_entry() {
    let bytes = simulator_bytes();
    let dir = support::scratch_dir("sweep-truncated");
    // Where the loadable segments end, and where the section headers begin.
    let loads_end = program_headers(&bytes)
        .into_iter()
        .filter(|&(_, kind)| kind == PT_LOAD)
        .map(|(at, _)| u64_at(&bytes, at + 8) + u64_at(&bytes, at + 32))
        .max()
        .unwrap();
    let loads_end = usize::try_from(loads_end).unwrap();
    let half = bytes.len() / 2;
    assert!(
        u64_at(&bytes, 40) as usize > half,
        "section headers in the second half"
    );
    let cases: [(usize, &str); 9] = [
        (0, "empty file"),
        (1, "shorter than an ELF header"),
        (16, "shorter than an ELF header"),
        (63, "shorter than an ELF header"),
        (64, "truncated: the program headers"),
        (4096, "truncated: PT_LOAD segment"),
        (loads_end - 1, "truncated: PT_LOAD segment"),
        // Every segment is there, the section headers are not: still a copy cut short.
        (loads_end, "truncated: the section headers"),
        (half, "truncated"),
    ];
    for (size, expected) in cases {
        let path = dir.join(format!("libascendcl-{size}.so"));
        std::fs::write(&path, &bytes[..size]).unwrap();
        refused_by_every_entry(&path, expected);
    }
}

#[test]
fn an_empty_file_a_text_file_and_a_directory_are_refused_through_every_entry() {
    let dir = support::scratch_dir("sweep-not-libraries");
    let empty = dir.join("empty.so");
    std::fs::File::create(&empty).unwrap();
    refused_by_every_entry(&empty, "empty file");
    let text = dir.join("text.so");
    std::fs::write(&text, "INPUT(libascendcl.so.1)\n").unwrap();
    refused_by_every_entry(&text, "not an ELF file");
    let directory = dir.join("libascendcl.so");
    std::fs::create_dir(&directory).unwrap();
    refused_by_every_entry(&directory, "not a regular file");
}

#[test]
fn special_files_and_link_loops_are_refused_through_every_entry() {
    refused_by_every_entry(Path::new("/dev/zero"), "not a regular file");
    let dir = support::scratch_dir("sweep-loop");
    let (a, b) = (dir.join("a.so"), dir.join("b.so"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    refused_by_every_entry(&a, "symbolic links");
}

#[test]
fn a_fifo_is_refused_through_every_entry_without_blocking() {
    let dir = support::scratch_dir("sweep-fifo");
    let fifo = dir.join("libascendcl.so");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let slowest = refused_by_every_entry(&fifo, "not a regular file");
    eprintln!("FIFO: slowest child {slowest:?}");
}

#[test]
fn a_huge_sparse_file_is_refused_without_being_read() {
    let dir = support::scratch_dir("sweep-sparse");
    let size = 8 << 30;
    // Zeros.
    let zeros = dir.join("zeros.so");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(size)
        .unwrap();
    let slowest = refused_by_every_entry(&zeros, "not an ELF file");
    eprintln!("8 GiB of zeros: slowest child {slowest:?}");
    // A header claiming the most program headers the field allows, at the file's end.
    let claims = dir.join("claims.so");
    let mut header = elf64_header(machines().0, false);
    put_u64(&mut header, 32, size - 64);
    header[56..58].copy_from_slice(&u16::MAX.to_le_bytes());
    std::fs::write(&claims, &header).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&claims)
        .unwrap()
        .set_len(size)
        .unwrap();
    let slowest = refused_by_every_entry(&claims, "65535 program headers");
    eprintln!("8 GiB claiming 65535 program headers: slowest child {slowest:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn elf_files_for_another_target_are_refused_through_every_entry() {
    let dir = support::scratch_dir("sweep-targets");
    let (ours, other) = machines();
    let name = |m: u16| if m == 183 { "aarch64" } else { "x86_64" };
    // Another machine, header crafted by hand.
    let foreign = dir.join("foreign.so");
    std::fs::write(&foreign, elf64_header(other, false)).unwrap();
    let expected = format!(
        "a 64-bit ELF file for {}; this process is 64-bit {}",
        name(other),
        name(ours)
    );
    refused_by_every_entry(&foreign, &expected);
    // A 32-bit library of this machine's family (x86 or arm), header crafted by hand.
    let (ours32, name32) = if ours == 183 {
        (40u16, "arm")
    } else {
        (3, "x86")
    };
    let mut elf32 = vec![0u8; 52];
    elf32[..7].copy_from_slice(b"\x7fELF\x01\x01\x01");
    elf32[16..18].copy_from_slice(&3u16.to_le_bytes());
    elf32[18..20].copy_from_slice(&ours32.to_le_bytes());
    let bits32 = dir.join("elf32.so");
    std::fs::write(&bits32, &elf32).unwrap();
    refused_by_every_entry(&bits32, &format!("a 32-bit ELF file for {name32}"));
    // This machine, the other byte order.
    let big = dir.join("big-endian.so");
    std::fs::write(&big, elf64_header(ours, true)).unwrap();
    refused_by_every_entry(&big, "a big-endian ELF file; this process is little-endian");
}

/// Copies of the simulator with one header field changed, each refused before `dlopen`
/// (unchanged, the copy loads: `the_whole_simulator_loads_through_every_entry_in_a_child`).
#[test]
fn patched_copies_of_the_simulator_are_refused_through_every_entry() {
    let bytes = simulator_bytes();
    let dir = support::scratch_dir("sweep-patched");
    let len = bytes.len() as u64;
    let write = |name: &str, patch: &dyn Fn(&mut Vec<u8>)| {
        let mut copy = bytes.clone();
        patch(&mut copy);
        let path = dir.join(name);
        std::fs::write(&path, copy).unwrap();
        path
    };
    // An executable, not a library.
    let exec = write("exec.so", &|b| {
        b[16..18].copy_from_slice(&2u16.to_le_bytes())
    });
    refused_by_every_entry(&exec, "not a shared library: ELF type 2");
    // The program headers past the end of the file.
    let phoff = write("phoff.so", &|b| put_u64(b, 32, len - 8));
    refused_by_every_entry(&phoff, "truncated: the program headers");
    // The last PT_LOAD's bytes past the end of the file (its size grown by the file's).
    let last_load = program_headers(&bytes)
        .into_iter()
        .rfind(|&(_, kind)| kind == PT_LOAD)
        .unwrap()
        .0;
    let load = write("load.so", &|b| {
        let filesz = u64_at(b, last_load + 32);
        put_u64(b, last_load + 32, filesz + len);
        let memsz = u64_at(b, last_load + 40);
        put_u64(b, last_load + 40, memsz + len);
    });
    refused_by_every_entry(&load, "truncated: PT_LOAD segment");
    // No PT_DYNAMIC (its header made PT_NULL).
    let dynamic = first_of(&bytes, PT_DYNAMIC);
    let no_dynamic = write("no-dynamic.so", &|b| b[dynamic..dynamic + 4].fill(0));
    refused_by_every_entry(&no_dynamic, "no PT_DYNAMIC segment");
    // PT_DYNAMIC in no loaded segment (`dlopen` dies of SIGSEGV on it).
    let stray = write("stray-dynamic.so", &|b| {
        put_u64(b, dynamic + 16, 1 << 40);
        put_u64(b, dynamic + 24, 1 << 40);
    });
    refused_by_every_entry(&stray, "the PT_DYNAMIC segment (program header");
}

/// Segments the loader (or the unwinder) reads in memory must be where one `PT_LOAD` maps
/// their own bytes: each copy of the simulator below moves one of them, or takes the write
/// permission from the segment holding `PT_DYNAMIC`, and is refused before `dlopen`.
#[test]
fn segments_read_in_memory_must_be_mapped_from_their_own_bytes() {
    const PT_TLS: u32 = 7;
    const PT_PHDR: u32 = 6;
    const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
    let bytes = simulator_bytes();
    let dir = support::scratch_dir("sweep-segments");
    let write = |name: &str, patch: &dyn Fn(&mut Vec<u8>)| {
        let mut copy = bytes.clone();
        patch(&mut copy);
        let path = dir.join(name);
        std::fs::write(&path, copy).unwrap();
        path
    };
    // The file offset moved, the address kept: memory no longer holds those bytes.
    for (kind, name) in [(PT_GNU_EH_FRAME, "PT_GNU_EH_FRAME"), (PT_TLS, "PT_TLS")] {
        let Some((at, _)) = program_headers(&bytes)
            .into_iter()
            .find(|&(_, k)| k == kind)
        else {
            eprintln!("note: the simulator has no {name} segment; case skipped");
            continue;
        };
        let moved = write(&format!("moved-{name}.so"), &|b| {
            let offset = u64_at(b, at + 8);
            put_u64(b, at + 8, offset + 16);
        });
        refused_by_every_entry(&moved, &format!("the {name} segment (program header"));
    }
    // PT_PHDR moved by 8 bytes in the file and in memory: consistent, but not the table.
    if let Some((at, _)) = program_headers(&bytes)
        .into_iter()
        .find(|&(_, k)| k == PT_PHDR)
    {
        let phdr = write("moved-phdr.so", &|b| {
            let (offset, vaddr) = (u64_at(b, at + 8), u64_at(b, at + 16));
            put_u64(b, at + 8, offset + 8);
            put_u64(b, at + 16, vaddr + 8);
        });
        refused_by_every_entry(&phdr, "is not the program header table");
    }
    // The segment holding the dynamic section made read-only (glibc writes to it).
    let dynamic = first_of(&bytes, PT_DYNAMIC);
    let dynamic_at = u64_at(&bytes, dynamic + 16);
    let holder = program_headers(&bytes)
        .into_iter()
        .find(|&(at, kind)| {
            let (vaddr, memsz) = (u64_at(&bytes, at + 16), u64_at(&bytes, at + 40));
            kind == PT_LOAD && (vaddr..vaddr + memsz).contains(&dynamic_at)
        })
        .expect("the PT_LOAD holding PT_DYNAMIC")
        .0;
    let read_only = write("read-only-dynamic.so", &|b| {
        b[holder + 4] &= !2; // PF_W
    });
    refused_by_every_entry(&read_only, "lies in a read-only PT_LOAD segment");
}

// ---- Bare names: the files on LD_LIBRARY_PATH, checked in glibc's order (issue 23) -------

/// Loads the bare name `libascendcl.so` (the entry `library`, which takes it as given) in a
/// child whose `LD_LIBRARY_PATH` is `dirs`; returns the `SWEEP` lines.
fn bare_name_with_library_path(dirs: &[&Path]) -> Vec<Vec<String>> {
    let joined = std::env::join_paths(dirs).expect("directories without `:`");
    let (lines, _) = sweep_in_child_with(
        "library",
        Path::new("libascendcl.so"),
        &[("LD_LIBRARY_PATH", &joined)],
    );
    lines
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A FIFO where glibc would open it for a bare name, in an `LD_LIBRARY_PATH` directory or
/// in one of its hardware-capability subdirectories (`tls`, searched first by glibc 2.36 and
/// earlier), is refused, naming it: `dlopen` would wait for a writer forever.
#[test]
fn a_fifo_found_for_a_bare_name_on_ld_library_path_is_refused_naming_it() {
    let dir = support::scratch_dir("bare-fifo");
    for sub in ["", "tls"] {
        let holder = dir.join(sub);
        std::fs::create_dir_all(&holder).unwrap();
        let fifo = holder.join("libascendcl.so");
        mkfifo(&fifo);
        let lines = bare_name_with_library_path(&[&dir]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0][..2], ["refused", "caller"], "{lines:?}");
        let expected = format!(
            "{} (on LD_LIBRARY_PATH, where the system loader would open it): not a regular file",
            fifo.display()
        );
        assert_eq!(lines[0][2], expected, "{lines:?}");
        std::fs::remove_file(&fifo).unwrap();
    }
}

/// glibc's search passes over a library for another machine and goes on; so does the check,
/// and the simulator in a later directory loads. The first library found ends the search: a
/// FIFO in a later directory is never reached, by glibc or by the check.
#[test]
fn the_bare_name_check_passes_over_and_stops_where_glibc_does() {
    let sim_dir = support::simulator_path().parent().unwrap().to_path_buf();
    let dir = support::scratch_dir("bare-order");
    let (foreign, fifo_dir) = (dir.join("foreign"), dir.join("fifo"));
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::create_dir_all(&fifo_dir).unwrap();
    let (_, other) = machines();
    let mut header = elf64_header(other, false);
    header[20] = 1; // e_version, which glibc checks before the machine
    std::fs::write(foreign.join("libascendcl.so"), header).unwrap();
    mkfifo(&fifo_dir.join("libascendcl.so"));
    for dirs in [
        [&foreign, &sim_dir, &fifo_dir],
        [&sim_dir, &fifo_dir, &foreign],
    ] {
        let dirs = dirs.map(PathBuf::as_path);
        let lines = bare_name_with_library_path(&dirs);
        assert_eq!(lines.len(), 1, "{dirs:?}: {lines:?}");
        assert_eq!(lines[0][0], "loaded", "{dirs:?}: {lines:?}");
        assert!(lines[0][1].contains("the simulator"), "{lines:?}");
    }
    // The FIFO first: refused.
    let lines = bare_name_with_library_path(&[&fifo_dir, &sim_dir]);
    assert_eq!(lines[0][0], "refused", "{lines:?}");
}

/// `$ORIGIN` in `LD_LIBRARY_PATH` is the executable's directory, for glibc and for the check.
#[test]
fn origin_in_ld_library_path_is_the_executables_directory() {
    let exe_dir = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let dir = std::fs::canonicalize(support::scratch_dir("bare-origin")).unwrap();
    let fifo = dir.join("libascendcl.so");
    mkfifo(&fifo);
    // `dir` relative to the executable's directory.
    let common = exe_dir
        .components()
        .zip(dir.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut relative = PathBuf::from("$ORIGIN");
    for _ in exe_dir.components().skip(common) {
        relative.push("..");
    }
    relative.extend(dir.components().skip(common));
    let lines = bare_name_with_library_path(&[&relative]);
    assert_eq!(lines[0][0], "refused", "{lines:?}");
    assert!(lines[0][2].ends_with("not a regular file"), "{lines:?}");
    assert!(lines[0][2].contains("/../"), "the expanded path: {lines:?}");
}

/// The model library's bare name (`libacl_mdl.so`, newer CANN) is checked the same way: a
/// FIFO on `LD_LIBRARY_PATH` makes the model API unavailable, naming it, instead of a hang.
#[test]
fn a_fifo_named_like_the_model_library_on_ld_library_path_is_refused() {
    let runtime = split_install("runtime_mdl_fifo", None);
    let dir = support::scratch_dir("bare-mdl-fifo");
    let fifo = dir.join(ascend_typestate::sys::model::MODEL_LIBRARY);
    mkfifo(&fifo);
    let (lines, _) =
        sweep_in_child_with("model", &runtime, &[("LD_LIBRARY_PATH", dir.as_os_str())]);
    let line = lines
        .iter()
        .find(|l| l[0] == "model" && l[1] == "libacl_mdl.so")
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        line[2].starts_with(&fifo.display().to_string()) && line[2].ends_with("not a regular file"),
        "{line:?}"
    );
}

/// `libacl_mdl.so` beside the runtime is checked as the runtime is: a truncated one is named
/// with its reason, and the runtime stays usable.
#[test]
fn a_truncated_model_library_beside_the_runtime_is_refused() {
    let runtime = split_install("runtime_truncated_mdl", None);
    let beside = runtime.with_file_name(ascend_typestate::sys::model::MODEL_LIBRARY);
    std::fs::write(&beside, &simulator_bytes()[..4096]).unwrap();
    let (lines, _) = sweep_in_child("model", &runtime);
    let line = lines
        .iter()
        .find(|l| l[0] == "model" && Path::new(&l[1]) == beside)
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        line[2].starts_with("truncated: PT_LOAD segment"),
        "{line:?}"
    );
}

/// `Acl::library` says when the simulator is what loaded (issue 24): under `cargo` the
/// system loader finds it on cargo's library path, and "found by: system loader" alone
/// would read like a vendor runtime.
#[test]
fn the_library_line_says_simulator_when_the_simulator_loaded() {
    // This executable's process-wide runtime is `global_runtime_is_loaded_once`'s stub: the
    // body runs in a child process of its own.
    const CHILD: &str = "ASCEND_TYPESTATE_LIBRARY_LINE_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let (status, out, err) = support::child::in_child(
            "the_library_line_says_simulator_when_the_simulator_loaded",
            CHILD,
            CHILD_BOUND,
        );
        assert!(
            status.is_some_and(|s| s.success()),
            "the child failed ({status:?}):\n{out}\n{err}"
        );
        return;
    }
    let session = support::sim::Session::start();
    let library = session.acl().library();
    assert!(library.is_simulator());
    let line = library.to_string();
    assert!(
        line.contains("(the simulator, version ") && line.contains(", found by: "),
        "{line}"
    );
    assert_eq!(
        library.path(),
        support::simulator_path().canonicalize().unwrap()
    );
    drop(library);
    session.finish();
}
