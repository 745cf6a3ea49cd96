//! Finding and opening the runtime library (`src/sys/loader.rs`).
//!
//! Bare names: the files found on `LD_LIBRARY_PATH`, checked in glibc's order
//! (`$ORIGIN` included): a FIFO or a truncated model library is refused naming it; the
//! library line names the simulator when the simulator loaded.

use crate::support;

use std::path::{Path, PathBuf};

use super::library_common::{
    CHILD_BOUND, elf64_header, machines, mkfifo, simulator_bytes, split_install, sweep_in_child,
    sweep_in_child_with,
};

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

/// `Acl::library` says when the simulator is what loaded: under `cargo` the
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
