//! Bad input: every function that takes a path, a size or bytes
//! from the user answers bad input with a typed error (never a signal, a hang or an unbounded
//! allocation), and the simulator never blocks other threads on a slow file.
//!
//! One test per attack. Each asserts the correct behaviour, so it fails while the library or
//! the simulator is wrong. Attacks that could crash, hang or exhaust memory run in a child
//! process with a deadline (`tests/support/child.rs`): a signal or a hang fails that test only.
//! This module: `sizes_*` buffer and pipeline sizes, `batch_*` dynamic batches, `timeouts_*`
//! operator timeouts and kernel durations.

use crate::support;

use std::ffi::OsStr;
use std::time::Duration;

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{AclError, Error, MemoryKind, ModelSource, PipelineConfig, Timeout};
use support::DropErrors;
use support::sim::Session;

use super::bad_inputs_common::{POLICY, ends_clean, is_child, is_code, quickly, run_child, show};

/// What a case expects of its outcome.
type Expected = fn(&ascend_typestate::Result<()>) -> bool;

fn is_invalid<T>(result: &ascend_typestate::Result<T>) -> bool {
    matches!(result, Err(Error::InvalidArgument(_)))
}

/// `alloc` / `alloc_host` of 0, 1, `usize::MAX`, `isize::MAX` bytes and more, element counts
/// whose byte length overflows for a large `T`, and the device's total + 1: each a typed error
/// at once (no allocation is attempted for an overflowing size), and nothing left behind.
#[test]
fn sizes_alloc_and_alloc_host_extremes_are_typed_errors() {
    type Big = [u64; 4096]; // 32 KiB per element
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.default_device(0);
        let before = device.memory_info(MemoryKind::Hbm).unwrap();
        let half = isize::MAX as usize;
        let cases: Vec<(&str, ascend_typestate::Result<()>, Expected)> = vec![
            (
                "alloc u8 0",
                device.alloc::<u8>(0, POLICY).map(drop),
                is_invalid,
            ),
            (
                "alloc u8 usize::MAX",
                device.alloc::<u8>(usize::MAX, POLICY).map(drop),
                is_invalid,
            ),
            (
                "alloc u8 isize::MAX + 1",
                device.alloc::<u8>(half + 1, POLICY).map(drop),
                is_invalid,
            ),
            (
                "alloc u8 isize::MAX",
                device.alloc::<u8>(half, POLICY).map(drop),
                |r| is_code(r, AclError::RtMemoryAllocation),
            ),
            (
                "alloc u64 usize::MAX / 8 + 1",
                device.alloc::<u64>(usize::MAX / 8 + 1, POLICY).map(drop),
                is_invalid,
            ),
            (
                "alloc [u64; 4096] overflowing",
                device
                    .alloc::<Big>(usize::MAX / 32768 + 1, POLICY)
                    .map(drop),
                is_invalid,
            ),
            (
                "alloc [u64; 4096] 2^20 (32 GiB)",
                device.alloc::<Big>(1 << 20, POLICY).map(drop),
                |r| is_code(r, AclError::RtMemoryAllocation),
            ),
            (
                "alloc total + 1",
                device.alloc::<u8>(before.total + 1, POLICY).map(drop),
                |r| is_code(r, AclError::RtMemoryAllocation),
            ),
            (
                "alloc_host u8 0",
                device.alloc_host::<u8>(0).map(drop),
                is_invalid,
            ),
            (
                "alloc_host u8 usize::MAX",
                device.alloc_host::<u8>(usize::MAX).map(drop),
                is_invalid,
            ),
            (
                "alloc_host u8 isize::MAX",
                device.alloc_host::<u8>(half).map(drop),
                |r| is_code(r, AclError::RtMemoryAllocation),
            ),
            (
                "alloc_host [u64; 4096] overflowing",
                device.alloc_host::<Big>(usize::MAX / 32768 + 1).map(drop),
                is_invalid,
            ),
            ("alloc u8 1", device.alloc::<u8>(1, POLICY).map(drop), |r| {
                r.is_ok()
            }),
            (
                "alloc_host u8 1",
                device.alloc_host::<u8>(1).map(drop),
                |r| r.is_ok(),
            ),
        ];
        for (what, result, expected) in &cases {
            assert!(expected(result), "{what}: {}", show(result));
        }
        assert_eq!(device.memory_info(MemoryKind::Hbm).unwrap(), before);
    }
    ends_clean(session, baseline, &reports);
}

/// Pipelines with 0, 65 or `usize::MAX` slots, empty, overflowing or unallocatable frames:
/// typed errors, and whatever was created before the failing allocation is released.
#[test]
fn sizes_pipeline_extremes_are_typed_errors() {
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.default_device(0);
        let live = session.sim.live_objects();
        let half = isize::MAX as usize;
        let configs: [(&str, PipelineConfig, Expected); 9] = [
            ("0 slots", PipelineConfig::new(4, 4).slots(0), is_invalid),
            ("65 slots", PipelineConfig::new(4, 4).slots(65), is_invalid),
            (
                "usize::MAX slots",
                PipelineConfig::new(4, 4).slots(usize::MAX),
                is_invalid,
            ),
            ("empty input", PipelineConfig::new(0, 4), is_invalid),
            ("empty output", PipelineConfig::new(4, 0), is_invalid),
            (
                "input usize::MAX",
                PipelineConfig::new(usize::MAX, 4),
                is_invalid,
            ),
            (
                "output usize::MAX",
                PipelineConfig::new(4, usize::MAX),
                is_invalid,
            ),
            (
                "input isize::MAX / 4",
                PipelineConfig::new(half / 4, 4),
                |r| is_code(r, AclError::RtMemoryAllocation),
            ),
            (
                "output 2^40, 64 slots",
                PipelineConfig::new(4, 1 << 40).slots(64),
                |r| is_code(r, AclError::RtMemoryAllocation),
            ),
        ];
        for (what, config, expected) in configs {
            let result = quickly(what, Duration::from_secs(2), || {
                device.create_pipeline::<f32, f32>(config).map(drop)
            });
            assert!(expected(&result), "{what}: {}", show(&result));
            assert_eq!(
                session.sim.live_objects(),
                live,
                "{what}: left objects behind"
            );
        }
    }
    ends_clean(session, baseline, &reports);
}

/// A pipeline whose third slot no longer fits in the device (a 64 MiB device): the error is
/// the runtime's 207001, the first two slots' buffers, events and the streams are released.
#[test]
fn sizes_a_pipeline_that_fills_the_device_midway_releases_everything() {
    if !is_child() {
        run_child(
            "sizes_a_pipeline_that_fills_the_device_midway_releases_everything",
            &[("ACLSIM_DEVICE_MEMORY", OsStr::new("67108864"))],
            Duration::from_secs(60),
        );
        return;
    }
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.default_device(0);
        let before = device.memory_info(MemoryKind::Hbm).unwrap();
        assert_eq!(before.total, 64 << 20);
        let live = session.sim.live_objects();
        let result = device
            .create_pipeline::<u8, u8>(PipelineConfig::new(24 << 20, 1).slots(3))
            .map(drop);
        assert!(
            is_code(&result, AclError::RtMemoryAllocation),
            "{}",
            show(&result)
        );
        assert_eq!(session.sim.live_objects(), live);
        assert_eq!(device.memory_info(MemoryKind::Hbm).unwrap(), before);
    }
    ends_clean(session, baseline, &reports);
}

/// `execute_batch` with 0, `u64::MAX` and batches between or beyond the gears, synchronous
/// and in a pipeline: `Error::NotAGear` before the runtime is called; a gear then works.
#[test]
fn batch_execute_batch_refuses_zero_huge_and_non_gears() {
    let text = SimModel::new(SimDtype::F32, &[4, 8], SimDtype::F32, &[4, 4])
        .batch_gears(&[1, 2, 4])
        .matmul(8, 4, &[0.5; 32])
        .to_text();
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.default_device(0);
        let mut model = device
            .load_dynamic_model(ModelSource::bytes(text.into_bytes()))
            .unwrap();
        let mut io = model.create_io(POLICY).unwrap();
        session.sim.reset_call_counts();
        for batch in [0, 3, 5, 8, u64::MAX, u64::MAX - 1, 1 << 32] {
            let result = model.execute_batch(&mut io, batch);
            assert!(
                matches!(result, Err(Error::NotAGear { batch: b }) if b == batch),
                "execute_batch({batch}): {}",
                show(&result)
            );
        }
        assert_eq!(session.sim.call_count("aclmdlSetDynamicBatchSize"), 0);
        assert_eq!(session.sim.call_count("aclmdlExecute"), 0);
        model.execute_batch(&mut io, 2).unwrap();
        drop(io);
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(32, 16))
            .unwrap();
        for batch in [0, 3, u64::MAX] {
            let slot = pipeline.next_slot().unwrap();
            let result = slot.submit(|launch| launch.execute_batch(&mut model, batch));
            assert!(
                matches!(result, Err(Error::NotAGear { .. })),
                "Launch::execute_batch({batch}): {}",
                show(&result)
            );
        }
        let slot = pipeline.next_slot().unwrap();
        slot.submit(|launch| launch.execute_batch(&mut model, 4))
            .unwrap();
        pipeline.wait_all().unwrap();
        drop(pipeline);
        model.unload().unwrap();
    }
    ends_clean(session, baseline, &reports);
}

/// `Timeout` from 0, `u32::MAX` ms and `Duration::MAX`; `set_op_execute_timeout` with
/// `Duration::MAX` and `u64::MAX` µs: refused (None, or a typed error), nothing changed.
#[test]
fn timeouts_extreme_values_are_refused() {
    assert!(Timeout::from_millis(0).is_none());
    assert!(Timeout::from_millis(u32::MAX).is_none());
    assert!(Timeout::from_millis(i32::MAX as u32 + 1).is_none());
    assert!(Timeout::from_duration(Duration::MAX).is_none());
    assert!(Timeout::from_duration(Duration::ZERO).is_none());
    assert_eq!(
        Timeout::from_duration(Duration::from_nanos(1)).map(Timeout::as_raw),
        Some(1)
    );
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let acl = session.acl();
        let result = acl.set_op_execute_timeout(Duration::MAX);
        assert!(is_invalid(&result), "Duration::MAX: {}", show(&result));
        let result = acl.set_op_execute_timeout(Duration::from_micros(u64::MAX));
        assert!(result.is_err(), "u64::MAX µs: {}", show(&result));
        assert_eq!(acl.op_execute_timeout().unwrap(), Duration::ZERO);
    }
    ends_clean(session, baseline, &reports);
}

/// `set_op_execute_timeout` far beyond the longest limit CANN documents (P5: 2176 s, the bound
/// the simulator itself applies to models): refused or capped, and what it returns is what
/// `op_execute_timeout` then reads.
#[test]
fn timeouts_an_op_execute_timeout_beyond_2176_s_round_trips() {
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    let outcome;
    {
        let acl = session.acl();
        let asked = Duration::from_secs(10_000_000);
        let set = acl.set_op_execute_timeout(asked);
        let read = acl.op_execute_timeout();
        acl.set_op_execute_timeout(Duration::ZERO).unwrap();
        outcome = (show(&set), set.ok(), read.ok());
    }
    ends_clean(session, baseline, &reports);
    if let (_, Some(actual), read) = outcome {
        assert!(
            actual <= Duration::from_secs(2176),
            "set_op_execute_timeout(10^7 s) = Ok({actual:?}): beyond the longest documented limit (2176 s); read back {read:?}"
        );
        assert_eq!(
            read.map(|d| d.as_millis()),
            Some(actual.as_millis()),
            "set_op_execute_timeout said {actual:?} is in effect, op_execute_timeout reads {read:?}"
        );
    }
}

/// A simulated kernel of `Duration::MAX` (the frame's duration is the user's): refused like a
/// model that could never complete, or failed by a bound; never a pipeline that cannot end.
#[test]
fn timeouts_a_kernel_duration_that_never_ends_is_refused() {
    if !is_child() {
        run_child(
            "timeouts_a_kernel_duration_that_never_ends_is_refused",
            &[],
            Duration::from_secs(20),
        );
        return;
    }
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.default_device(0);
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(4, 4))
            .unwrap();
        let slot = pipeline.next_slot().unwrap();
        let submitted = slot.submit(|launch| launch.simulated_map(Duration::MAX, |x| x));
        println!("submit: {}", show(&submitted));
        if submitted.is_ok() {
            // The frame must end with an error (a bound) rather than never.
            let waited = pipeline.wait_all();
            assert!(waited.is_err(), "wait_all: {}", show(&waited));
        }
        drop(pipeline);
    }
    ends_clean(session, baseline, &reports);
}
