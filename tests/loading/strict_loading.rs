//! Finding and opening the runtime library (`src/sys/loader.rs`).
//!
//! Strict loading (deployments): no relative paths, bare names or fallback, the functions
//! from the one file named, a link followed as it is at the load; paths and files the loader
//! must never open (a NUL byte, a FIFO), a library for another machine, a broken installed
//! runtime not replaced by the development fallback.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use ascend_typestate::LoadError;
use ascend_typestate::sys::loader::{Api, LoadOptions, load_global};

use super::library_common::{run_probe, stub_source};

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
