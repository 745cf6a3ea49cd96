//! Bad input: every function that takes a path, a size or bytes
//! from the user answers bad input with a typed error (never a signal, a hang or an unbounded
//! allocation), and the simulator never blocks other threads on a slow file.
//!
//! One test per attack. Each asserts the correct behaviour, so it fails while the library or
//! the simulator is wrong. Attacks that could crash, hang or exhaust memory run in a child
//! process with a deadline (`tests/support/child.rs`): a signal or a hang fails that test only.
//! This module: `paths_*` model paths, `config_*` the `aclInit` configuration path.

use crate::support;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{Acl, AclError, Error, InitOptions, ModelSource};
use support::DropErrors;
use support::sim::Session;

use super::bad_inputs_common::{
    POLICY, PROBE_LIMIT, ends_clean, is_child, longest_probe_during, mkfifo, quickly, run_child,
    show,
};

/// Paths the existing tests do not try, through every entry that takes a model path
/// (`load_model`, `load_dynamic_model`, `model_memory_size`, `ModelSource::file_with_memory`):
/// empty, a link loop, longer than `PATH_MAX`, through a file as a directory, `/dev/null`,
/// `/proc/self/fd/0`-like links to pipes, non-UTF-8: `Error::ModelFile`, before the runtime.
#[test]
fn paths_every_model_entry_refuses_odd_paths_before_the_runtime() {
    use std::os::unix::ffi::OsStrExt;
    let dir = support::scratch_dir("bad_input_odd_paths");
    let (a, b) = (dir.join("a.om"), dir.join("b.om"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let file = dir.join("file");
    std::fs::write(&file, "aclsim-model 1\n").unwrap();
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let long = dir.join("x".repeat(5000));
    let cases: Vec<PathBuf> = vec![
        PathBuf::new(),
        a,
        long,
        file.join("inside"),
        PathBuf::from("/dev/null"),
        dir.join(OsStr::from_bytes(b"\xff\xfe-not-utf8")),
        PathBuf::from("/"),
        fifo,
    ];
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.default_device(0);
        let calls = || {
            [
                "aclmdlLoadFromFile",
                "aclmdlLoadFromFileWithMem",
                "aclmdlQuerySize",
            ]
            .iter()
            .map(|c| session.sim.call_count(c))
            .sum::<u64>()
        };
        let before = calls();
        for path in &cases {
            let outcomes = [
                device.load_model(path).map(drop),
                device.load_dynamic_model(path).map(drop),
                device.model_memory_size(path).map(drop),
                device
                    .load_model(ModelSource::file_with_memory(
                        path,
                        device.alloc::<u8>(4096, POLICY).unwrap(),
                        device.alloc::<u8>(4096, POLICY).unwrap(),
                    ))
                    .map(drop),
            ];
            for outcome in &outcomes {
                assert!(
                    matches!(outcome, Err(Error::ModelFile { path: p, .. }) if &**p == path.as_path()),
                    "{:?}: {}",
                    path,
                    show(outcome)
                );
            }
        }
        assert_eq!(calls(), before, "the runtime was called");
    }
    ends_clean(session, baseline, &reports);
}

/// TOCTOU in `model_path`: another thread swaps the model file for a FIFO (and back) by
/// `rename` while this one loads it. A load may fail (the runtime finds a FIFO) but must
/// return, with a typed error, and other threads' calls are not blocked meanwhile.
#[test]
fn paths_a_model_file_swapped_for_a_fifo_after_the_check() {
    if !is_child() {
        let out = run_child(
            "paths_a_model_file_swapped_for_a_fifo_after_the_check",
            &[],
            Duration::from_secs(60),
        );
        eprintln!(
            "{}",
            out.lines()
                .filter(|l| l.contains("swap:"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        return;
    }
    let dir = support::scratch_dir("bad_input_swap_model");
    let model = dir.join("model.real");
    SimModel::new(SimDtype::F32, &[4], SimDtype::F32, &[4])
        .write(&model)
        .unwrap();
    let fifo = dir.join("model.fifo");
    mkfifo(&fifo);
    let path = dir.join("model.om");
    std::fs::hard_link(&model, &path).unwrap();
    let stop = AtomicBool::new(false);
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.default_device(0);
        let (ok, model_file, runtime, other) = std::thread::scope(|s| {
            s.spawn(|| {
                let (tmp_a, tmp_b) = (dir.join("tmp.a"), dir.join("tmp.b"));
                while !stop.load(Ordering::SeqCst) {
                    let _ = std::fs::hard_link(&model, &tmp_a);
                    let _ = std::fs::rename(&tmp_a, &path);
                    let _ = std::fs::hard_link(&fifo, &tmp_b);
                    let _ = std::fs::rename(&tmp_b, &path);
                }
            });
            let counts = longest_probe_during(
                || {
                    session.acl().device_count().unwrap();
                },
                || {
                    let (mut ok, mut model_file, mut runtime, mut other) = (0, 0, 0, Vec::new());
                    let started = Instant::now();
                    let mut i = 0u64;
                    while started.elapsed() < Duration::from_secs(3) {
                        i += 1;
                        let result = quickly("a load during swaps", Duration::from_secs(5), || {
                            if i.is_multiple_of(2) {
                                device.load_model(&path).and_then(|m| m.unload())
                            } else {
                                device.model_memory_size(&path).map(drop)
                            }
                        });
                        match result {
                            Ok(()) => ok += 1,
                            Err(Error::ModelFile { .. }) => model_file += 1,
                            Err(e) if e.code() == Some(AclError::ReadModelFailure) => runtime += 1,
                            Err(e) => other.push(format!("{e:?}")),
                        }
                    }
                    (ok, model_file, runtime, other)
                },
            );
            stop.store(true, Ordering::SeqCst);
            let ((ok, model_file, runtime, other), took, longest) = counts;
            println!(
                "swap: {ok} loaded, {model_file} refused by model_path, {runtime} refused by the runtime (100014), in {took:?}; longest other call {longest:?}"
            );
            assert!(
                longest < PROBE_LIMIT,
                "another thread's call waited {longest:?}"
            );
            (ok, model_file, runtime, other)
        });
        assert!(other.is_empty(), "unexpected errors: {other:?}");
        assert!(ok + model_file + runtime > 0);
    }
    ends_clean(session, baseline, &reports);
}

/// `InitOptions::config` takes a path that `aclInit` reads (a JSON file): a FIFO would block
/// the runtime's reader, a directory or a missing file is no configuration. They are refused
/// with a typed error before `aclInit`, as model paths are (`Error::ModelFile`).
#[test]
fn config_a_fifo_directory_or_missing_file_is_refused_before_aclinit() {
    if !is_child() {
        run_child(
            "config_a_fifo_directory_or_missing_file_is_refused_before_aclinit",
            &[],
            Duration::from_secs(60),
        );
        return;
    }
    let dir = support::scratch_dir("bad_input_config");
    let fifo = dir.join("acl.json");
    mkfifo(&fifo);
    let cases = [
        fifo,
        dir.clone(),
        dir.join("missing.json"),
        PathBuf::from("/dev/zero"),
    ];
    let sim = support::simulator_path();
    let mut accepted = Vec::new();
    for path in &cases {
        let options = InitOptions::default().library(&sim).config(path);
        let result = options.and_then(|o| Acl::init_with(&o));
        match result {
            Ok(acl) => {
                accepted.push(path.display().to_string());
                acl.finalize().unwrap();
            }
            Err(e) => println!("config {}: {e}", path.display()),
        }
    }
    assert!(
        accepted.is_empty(),
        "aclInit was called with these configuration paths: {accepted:?}"
    );
}
