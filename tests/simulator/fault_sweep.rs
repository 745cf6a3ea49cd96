//! Systematic fault injection: one realistic program against the typed API, run once clean
//! to count its runtime calls, then once per (function, occurrence, code) with exactly that
//! call failing (`aclsimInjectFaultAt(function, code, occurrence, 1)`).
//!
//! Every run must end with the injected error returned (the crate's `Error`), or, where
//! the crate recovers by issuing the failed call again (a reset, a join's destroy, a `Drop`
//! fallback's release), with the program's checked output correct and the injected error
//! reported to the drop-error handler: no call's failure may be swallowed. And: zero
//! checker findings, nothing alive and the runtime finalized (a following `Acl::init_with`
//! succeeds), within `support::sweep::CASE_BOUND`. Errors that reach the drop-error handler
//! are counted and printed per case. All failing cases are collected into one report.
//!
//! Codes: 507000 (`ACL_ERROR_RT_INTERNAL_ERROR`) at every call; 107019 (a stream wait that
//! timed out, P3) at every stream and device synchronisation, where it surfaces; and the
//! timeout codes of the synchronisations with a timeout: 507046 (stream, and device: the
//! simulator's device timeout is the stream one) and 507047 (event)
//! (`support::sweep::default_codes`).
//!
//! Isolation: the cases run in worker processes (this test binary, re-run with
//! `support::sweep::WORKER_ENV` set), each case on its own thread (`support/sweep.rs`).
//! (`fault_sweep_worker` is that worker: run without the variable, it does nothing.)
//!
//! `tests/simulator/fault_sweep_features.rs` sweeps what was added to the crate since (device states,
//! stream configurations, host functions, pipelines, models) with the same machinery.

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ascend_typestate::MallocPolicy;
use ascend_typestate::{Acl, InitOptions, Result, timeout};
use ascend_typestate::{CallbackMode, ReportThread};
use support::sweep::{self, Fault, Sweep, self_check};

/// The element count of the program's buffers.
const N: usize = 256;
/// The simulated kernel's function.
fn step(x: u32) -> u32 {
    x.wrapping_mul(3).wrapping_add(7)
}

/// The program: every family of typed calls, explicit teardown, every error propagated with
/// `?` (whatever is alive then is dropped: the `Drop` fallbacks release it). It checks its
/// own output. `fault` is armed right after `aclInit`.
fn program(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = Acl::init_with(&InitOptions::default().library(path))?;
    // Faults are armed here, after `Acl::init`: call counts start here.
    sweep::arm(&acl, fault);
    self_check(acl.device_count()? >= 1, "self-check: a device")?;
    self_check(
        !acl.runs_on_device()?,
        "self-check: the simulator runs on the host",
    )?;
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;

    // Buffers; synchronous copies and memset.
    let input: Vec<u32> = (0..N as u32).collect();
    let expected: Vec<u32> = input.iter().map(|&x| step(x)).collect();
    let mut host = ctx.alloc_host::<u32>(N)?;
    host.copy_from_slice(&input);
    let mut d_in = ctx.alloc::<u32>(N, MallocPolicy::HugeFirst)?;
    let mut d_out = ctx.alloc::<u32>(N, MallocPolicy::NormalOnly)?;
    let mut d_flag = ctx.alloc::<u8>(64, MallocPolicy::HugeOnly)?;
    ctx.memset(&mut d_out, 0xFF)?;
    ctx.copy(&mut d_in, &input[..])?;
    let mut back = vec![0u32; N];
    ctx.copy(&mut back[..], &d_in)?;
    self_check(back == input, "self-check: the synchronous round trip")?;

    let start = ctx.create_event()?.record(&s1)?;

    // An async scope on two streams: H2D, a kernel, D2H on the same stream, and a read of
    // the kernel's output on the other stream (joined after it), plus a memset there. The
    // synchronisations with a timeout run while that work is pending.
    let mut result = vec![0u32; N];
    let mut cross = vec![0u32; N];
    ctx.async_scope(|scope| {
        scope.memset(&s2, &mut d_flag, 0x5A)?;
        let staged = scope.copy(&s1, &mut d_in, &host)?;
        let mapped =
            scope.simulated_map(&s1, Duration::from_millis(2), staged, &mut d_out, step)?;
        scope.copy(&s1, &mut result, mapped)?;
        scope.copy(&s2, &mut cross, mapped)?;
        s2.synchronize_with(timeout!(1_000))?;
        ctx.synchronize_device_with(timeout!(1_000))?;
        Ok(())
    })?;
    self_check(
        result == expected,
        "self-check: the kernel's output, read on its stream",
    )?;
    self_check(
        cross == expected,
        "self-check: the kernel's output, read on the other stream",
    )?;

    // A report thread and a subscribed stream, which also waits on an event.
    let report = ReportThread::spawn(&ctx)?;
    let sub = report.subscribe(ctx.create_stream()?)?;
    let ran = Arc::new(AtomicUsize::new(0));
    let ev = ctx.create_event()?.record(&s1)?;
    ev.synchronize_with(timeout!(1_000))?;
    let ev = ev.wait(&s2, |mut waited| {
        waited.also_wait(&sub)?;
        waited.reset()
    })?;
    for mode in [CallbackMode::Blocking, CallbackMode::NonBlocking] {
        let ran = Arc::clone(&ran);
        sub.launch(mode, move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })?;
    }
    // Re-record, then wait and reset in one step.
    let ev = ev.record(&s1)?;
    let ev = ev.wait_and_reset(&s2)?;
    let end = ctx.create_event()?.record(&s2)?;
    end.synchronize()?;
    self_check(
        start.is_complete()?,
        "self-check: the start event is complete",
    )?;
    let ms = end.elapsed_since(&start)?;
    self_check(ms >= 0.0, "self-check: a non-negative elapsed time")?;
    s1.synchronize()?;
    ctx.synchronize_device()?;

    // Teardown, in reverse order, explicitly.
    end.destroy()?;
    ev.destroy()?;
    start.destroy()?;
    let s3 = sub.unsubscribe()?;
    self_check(
        ran.load(Ordering::SeqCst) == 2,
        "self-check: both callbacks ran",
    )?;
    s3.destroy()?;
    report.stop()?;
    let mut flags = [0u8; 64];
    ctx.copy(&mut flags[..], &d_flag)?;
    self_check(
        flags.iter().all(|&b| b == 0x5A),
        "self-check: the asynchronous memset",
    )?;
    d_flag.free()?;
    d_out.free()?;
    d_in.free()?;
    host.free()?;
    s2.destroy()?;
    s1.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

/// The sweep: the one program, every runtime function, the default codes.
const SWEEP: Sweep = Sweep {
    name: "fault sweep",
    worker_test: "fault_sweep_worker",
    programs: &[("program", program)],
    functions: sweep::runtime_functions,
    codes: sweep::default_codes,
    check: sweep::no_check,
    expected_reports: &[],
};

/// A worker process: runs the cases it is given (see `support/sweep.rs`).
#[test]
fn fault_sweep_worker() {
    sweep::worker(&SWEEP);
}

#[test]
fn fault_sweep() {
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return; // A worker runs only `fault_sweep_worker`.
    }
    // Its clean run initialises the runtime outside any `Session`: a process of its own.
    if support::child::own_process("fault_sweep") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 1);
    support::child::passed("fault_sweep");
}
