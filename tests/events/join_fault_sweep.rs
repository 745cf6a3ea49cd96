//! Faults injected into every call of the join machinery (E5, E9): programs that reach the
//! query reclaim of an idle stream (64 joins waiting), the pool after a stream
//! synchronisation, the join capacity (reached, then recovered), a forced destroy (S8) with
//! joins waiting followed by a device synchronisation, and the query reclaim in a context
//! that stops on failure (S6), swept with the engine of `support/sweep.rs`: each call of the
//! swept functions fails once (`join_fault_sweep_once`) or twice in a row
//! (`join_fault_sweep_twice`). A case must return the injected error, or recover and report
//! it; leave no checker finding and nothing alive; and finalize the runtime.

use crate::support;

use std::path::Path;

use ascend_typestate::{Acl, AclError, Error, Event, InitOptions, Reset, Result, StreamConfig};
use support::sweep::{self, Fault, Sweep, self_check};

/// The task failure that stops the `stopping` program's context (S6).
const TASK_CODE: i32 = 507_899;

fn init(path: &Path, fault: Option<&Fault>) -> Result<Acl> {
    let acl = Acl::init_with(&InitOptions::default().library(path))?;
    sweep::arm(&acl, fault);
    Ok(acl)
}

/// 66 joins into `to`, the host waiting for each event (so `to` is idle at the 64th join's
/// query, which reclaims them), then `to` synchronised and three joins from its pool.
fn reclaim(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = init(path, fault)?;
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let from = ctx.create_stream()?;
    let to = ctx.create_stream()?;
    let mut event: Event<'_, Reset> = ctx.create_event()?.record(&from)?.wait_and_reset(&from)?;
    for _ in 0..66 {
        let recorded = event.record(&to)?;
        recorded.synchronize()?;
        event = recorded.wait_and_reset(&from)?;
    }
    to.synchronize()?;
    for _ in 0..3 {
        event = event.record(&to)?.wait_and_reset(&from)?;
    }
    event.destroy()?;
    to.destroy()?;
    from.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

/// A join capacity of 2 with `to` busy behind a kernel: two joins wait, the third is
/// `JoinCapacity` (nothing issued), and after `to` is synchronised joins go on.
fn capacity(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = init(path, fault)?;
    let kernels = support::sim::Sim::open(path);
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    ctx.set_join_capacity(2)?;
    let from = ctx.create_stream()?;
    let to = ctx.create_stream()?;
    let mut event: Event<'_, Reset> = ctx.create_event()?.record(&from)?.wait_and_reset(&from)?;
    kernels.sleep_kernel(to.as_raw(), 20_000);
    for _ in 0..2 {
        event = event.record(&to)?.wait_and_reset(&from)?;
    }
    let (error, back) = match event.try_record(&to) {
        Ok(recorded) => {
            drop(recorded);
            return self_check(false, "self-check: a third join past a capacity of 2");
        }
        Err(failed) => failed.into_parts(),
    };
    event = back;
    if !matches!(error, Error::JoinCapacity { capacity: 2 }) {
        return Err(error);
    }
    to.synchronize()?;
    event = event.record(&to)?.wait_and_reset(&from)?;
    event.destroy()?;
    to.destroy()?;
    from.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

/// Joins waiting on a busy stream that is then destroyed without a synchronisation (S8):
/// they are parked in the context, which a device synchronisation releases; then a new
/// stream joins again.
fn forced(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = init(path, fault)?;
    let kernels = support::sim::Sim::open(path);
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let from = ctx.create_stream()?;
    {
        let to = ctx.create_stream()?;
        let mut event: Event<'_, Reset> =
            ctx.create_event()?.record(&from)?.wait_and_reset(&from)?;
        event = event.record(&to)?.wait_and_reset(&from)?;
        to.synchronize()?; // one pooled
        kernels.sleep_kernel(to.as_raw(), 5_000);
        for _ in 0..4 {
            event = event.record(&to)?.wait_and_reset(&from)?;
        }
        event.destroy()?;
        to.destroy_force()?;
    }
    ctx.synchronize_device()?;
    let again = ctx.create_stream()?;
    let event: Event<'_, Reset> = ctx.create_event()?.record(&from)?.wait_and_reset(&from)?;
    let event = event.record(&again)?.wait_and_reset(&from)?;
    event.destroy()?;
    again.destroy()?;
    from.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

fn is_stop(error: &Error) -> bool {
    error.code() == Some(AclError::Unknown(TASK_CODE))
}

/// The query reclaim in a context with a stop-on-failure stream (its joins destroyed, not
/// reused), then the context stopped by a failed task with joins waiting.
fn stopping(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = init(path, fault)?;
    let kernels = support::sim::Sim::open(path);
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stops = ctx.create_stream_with(StreamConfig::new().stop_on_failure())?;
    let from = ctx.create_stream()?;
    let to = ctx.create_stream()?;
    let mut event: Event<'_, Reset> = ctx.create_event()?.record(&from)?.wait_and_reset(&from)?;
    for _ in 0..66 {
        let recorded = event.record(&to)?;
        recorded.synchronize()?;
        event = recorded.wait_and_reset(&from)?;
    }
    kernels.sleep_kernel(to.as_raw(), 5_000);
    for _ in 0..3 {
        event = event.record(&to)?.wait_and_reset(&from)?;
    }
    kernels.inject_task_failure(stops.as_raw(), TASK_CODE);
    kernels.sleep_kernel(stops.as_raw(), 10);
    // Each stream reports the stop once, at its next synchronisation.
    for stream in [&stops, &from, &to] {
        match stream.synchronize() {
            Err(e) if is_stop(&e) => {}
            Err(e) => return Err(e),
            Ok(()) => {}
        }
    }
    drop(event);
    to.destroy()?;
    from.destroy()?;
    stops.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

fn functions() -> Vec<&'static str> {
    vec![
        "aclrtCreateEventWithFlag",
        "aclrtRecordEvent",
        "aclrtStreamWaitEvent",
        "aclrtResetEvent",
        "aclrtDestroyEvent",
        "aclrtStreamQuery",
        "aclrtSynchronizeStream",
        "aclrtSynchronizeDevice",
        "aclrtSynchronizeEvent",
        "aclrtDestroyStream",
        "aclrtDestroyStreamForce",
    ]
}

const SWEEP: Sweep = Sweep {
    name: "join fault sweep",
    worker_test: "join_fault_sweep_worker",
    programs: &[
        ("reclaim", reclaim),
        ("capacity", capacity),
        ("forced", forced),
        ("stopping", stopping),
    ],
    functions,
    codes: sweep::default_codes,
    check: sweep::no_check,
    expected_reports: &["(507899)"],
};

#[test]
fn join_fault_sweep_worker() {
    sweep::worker(&SWEEP);
}

#[test]
fn join_fault_sweep_once() {
    // Finding: fails on `aclrtStreamQuery` (an error swallowed by the join's query) and on an
    // E9 after a stop (`Event::release`); see `s6_e9_stopped_context_released_by_drop_...`.
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return;
    }
    if support::child::own_process("join_fault_sweep_once") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 1);
    support::child::passed("join_fault_sweep_once");
}

#[test]
fn join_fault_sweep_twice() {
    // Finding: fails on `aclrtStreamQuery` (an error swallowed by the join's query) and on an
    // E9 after a stop (`Event::release`); see `s6_e9_stopped_context_released_by_drop_...`.
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return;
    }
    if support::child::own_process("join_fault_sweep_twice") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 2);
    support::child::passed("join_fault_sweep_twice");
}

/// The sweep's case `stopping: aclrtSynchronizeStream#2 code 107019`, alone: the third
/// stream synchronisation after the stop (the waiting stream's) fails with the code of a
/// timed-out wait (without effect), the program returns that error, and its handles are
/// released by `Drop`.
#[test]
fn s6_e9_stopped_context_released_by_drop_after_a_failed_synchronisation() {
    // Finding: `Event::release` trusts the reset stream alone after a stop (E9).
    support::isolated::isolated(|| {
        let path = support::simulator_path();
        let sim = support::sim::Sim::open(&path);
        sim.clear_findings();
        let reports = support::isolated::Reports::capture();
        let fault = Fault {
            call: "aclrtSynchronizeStream".into(),
            skip: 2,
            code: 107_019,
            times: 1,
        };
        let outcome = stopping(&path, Some(&fault));
        let findings = sim.findings();
        let reported = reports.take();
        assert!(
            findings.is_empty(),
            "outcome {outcome:?}\nreports {reported:#?}\nfindings {findings:#?}"
        );
    });
}
