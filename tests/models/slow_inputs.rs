//! Bad input: every function that takes a path, a size or bytes
//! from the user answers bad input with a typed error (never a signal, a hang or an unbounded
//! allocation), and the simulator never blocks other threads on a slow file.
//!
//! One test per attack. Each asserts the correct behaviour, so it fails while the library or
//! the simulator is wrong. Attacks that could crash, hang or exhaust memory run in a child
//! process with a deadline (`tests/support/child.rs`): a signal or a hang fails that test only.
//! This module: `slow_*` slow or huge files, `exec_*` slow model executions.

use crate::support;

use std::ffi::OsStr;
use std::time::{Duration, Instant};

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{AclError, ModelSource};
use support::DropErrors;
use support::sim::Session;

use super::bad_inputs_common::{
    POLICY, PROBE_LIMIT, ends_clean, is_child, is_code, longest_probe_during, peak_rss, quickly,
    run_child, show,
};

/// A regular file that reads slowly (`/proc/self/pagemap`: a "regular file" of size 0 whose
/// content is endless, about 300 MB/s): while one thread's model call reads it, the other
/// threads' runtime calls go on (the simulator reads files without its lock).
#[test]
fn slow_a_slowly_read_file_does_not_block_other_threads() {
    if !is_child() {
        let out = run_child(
            "slow_a_slowly_read_file_does_not_block_other_threads",
            &[("ACLSIM_DEVICE_MEMORY", OsStr::new("1073741824"))],
            Duration::from_secs(120),
        );
        eprintln!(
            "{}",
            out.lines()
                .filter(|l| l.contains("slow:"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        return;
    }
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.default_device(0);
        let (result, took, longest) = longest_probe_during(
            || {
                session.acl().device_count().unwrap();
            },
            || device.model_memory_size("/proc/self/pagemap"),
        );
        println!(
            "slow: model_memory_size(pagemap) = {} in {took:?}; longest other call {longest:?}",
            show(&result)
        );
        assert!(result.is_err());
        assert!(
            longest < PROBE_LIMIT,
            "another thread's call waited {longest:?} while a file was read"
        );
    }
    ends_clean(session, baseline, &reports);
}

/// `/proc/self/pagemap` (size 0, endless content) as a model path: a regular file, so
/// `model_path` passes it, and the simulator reads it up to the device's memory (here 1 GiB,
/// 8 GiB by default) before refusing it. A file whose size says it is empty is refused at
/// once, without a device-sized read or allocation.
#[test]
fn slow_an_endless_proc_file_is_refused_without_reading_it_to_the_device_limit() {
    if !is_child() {
        run_child(
            "slow_an_endless_proc_file_is_refused_without_reading_it_to_the_device_limit",
            &[("ACLSIM_DEVICE_MEMORY", OsStr::new("1073741824"))],
            Duration::from_secs(120),
        );
        return;
    }
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    let (result, took, grew);
    {
        let device = session.default_device(0);
        let before = peak_rss();
        let started = Instant::now();
        result = device.load_model("/proc/self/pagemap").map(drop);
        took = started.elapsed();
        grew = peak_rss().saturating_sub(before);
    }
    ends_clean(session, baseline, &reports);
    println!(
        "pagemap: {} in {took:?}, peak RSS +{} MiB",
        show(&result),
        grew >> 20
    );
    assert!(result.is_err(), "{}", show(&result));
    assert!(
        took < Duration::from_secs(1) && grew < 128 << 20,
        "load_model(/proc/self/pagemap) = {} after {took:?}, peak RSS +{} MiB: the file was read up to the device limit",
        show(&result),
        grew >> 20
    );
}

/// A 1 GiB sparse file of zeros (not a model: no `aclsim-model` magic), under the default
/// 8 GiB device: refused as not a model without reading and holding 1 GiB first (reading
/// a sparse file runs at about 90 MB/s here: a slow file the caller cannot bound).
#[test]
fn slow_a_huge_sparse_file_is_refused_without_reading_it_whole() {
    if !is_child() {
        run_child(
            "slow_a_huge_sparse_file_is_refused_without_reading_it_whole",
            &[],
            Duration::from_secs(120),
        );
        return;
    }
    let dir = support::scratch_dir("bad_input_sparse_model");
    let path = dir.join("sparse.om");
    std::fs::File::create(&path)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    let (result, took, grew);
    {
        let device = session.default_device(0);
        let before = peak_rss();
        let started = Instant::now();
        result = device.model_memory_size(&path).map(drop);
        took = started.elapsed();
        grew = peak_rss().saturating_sub(before);
    }
    ends_clean(session, baseline, &reports);
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "sparse: {} in {took:?}, peak RSS +{} MiB",
        show(&result),
        grew >> 20
    );
    assert!(is_code(&result, AclError::ParseModel), "{}", show(&result));
    assert!(
        took < Duration::from_secs(1) && grew < 128 << 20,
        "a 1 GiB sparse non-model: refused after {took:?}, peak RSS +{} MiB (read whole before its first bytes were checked)",
        grew >> 20
    );
}

/// A model of 150,000 `op relu` over 65,536 values (a 1.2 MB file, `time` 0): its execution
/// takes seconds of CPU whatever its declared time. A synchronous `execute` must not stop
/// every other thread's runtime calls meanwhile.
#[test]
fn exec_a_model_of_many_cheap_ops_does_not_block_other_threads() {
    if !is_child() {
        let out = run_child(
            "exec_a_model_of_many_cheap_ops_does_not_block_other_threads",
            &[],
            Duration::from_secs(300),
        );
        eprintln!(
            "{}",
            out.lines()
                .filter(|l| l.contains("exec:"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        return;
    }
    let mut text = String::from("aclsim-model 1\ninput x f32 65536\noutput y f32 65536\n");
    text.push_str(&"op relu\n".repeat(150_000));
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    let (took, longest);
    {
        let device = session.default_device(0);
        let mut model = quickly("load", Duration::from_secs(10), || {
            device
                .load_model(ModelSource::bytes(text.into_bytes()))
                .unwrap()
        });
        let mut io = model.create_io(POLICY).unwrap();
        let (result, t, l) = longest_probe_during(
            || {
                session.acl().device_count().unwrap();
            },
            || model.execute(&mut io),
        );
        result.unwrap();
        (took, longest) = (t, l);
        drop(io);
        model.unload().unwrap();
    }
    ends_clean(session, baseline, &reports);
    println!("exec: execute took {took:?}; longest other call {longest:?}");
    assert!(
        longest < PROBE_LIMIT,
        "a synchronous execute of {took:?} stopped another thread's aclrtGetDeviceCount for {longest:?}"
    );
}

/// A model at the 2176 s limit (P5) loads; its synchronous execution blocks the calling
/// thread (by design) but no other thread: allocations, streams and queries go on.
#[test]
fn exec_a_model_at_the_2176_s_limit_does_not_block_other_threads() {
    if !is_child() {
        run_child(
            "exec_a_model_at_the_2176_s_limit_does_not_block_other_threads",
            &[],
            Duration::from_secs(60),
        );
        return;
    }
    let text = SimModel::new(SimDtype::F32, &[4], SimDtype::F32, &[4])
        .time_per_item(Duration::from_secs(2176))
        .to_text();
    let session = Session::start();
    let device = session.default_device(0);
    let mut model = device
        .load_model(ModelSource::bytes(text.into_bytes()))
        .unwrap();
    let mut io = model.create_io(POLICY).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| model.execute(&mut io));
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(1) {
            quickly("another thread's calls", PROBE_LIMIT, || {
                session.acl().device_count().unwrap();
                let buffer = device.alloc::<u8>(4096, POLICY).unwrap();
                drop(buffer);
                let stream = device.create_stream().unwrap();
                stream.synchronize().unwrap();
                drop(stream);
            });
        }
        println!("exec: the other thread's calls went on beside a 2176 s execution");
        // The execution cannot be cut short: end the child here.
        std::process::exit(0);
    });
}
