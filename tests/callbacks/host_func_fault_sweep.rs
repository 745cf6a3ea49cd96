//! Faults injected into every runtime call of programs that use host-function threads
//! (C12), swept with the engine of `support/sweep.rs`: each call fails once
//! (`host_func_fault_sweep_once`) or twice in a row (`host_func_fault_sweep_twice`), the
//! thread's own `aclrtSetCurrentContext` and `aclrtProcessHostFunc` calls included. A case
//! must return the injected error, or recover and report it; leave no checker finding and
//! nothing alive; and finalize the runtime.
//!
//! Programs: `flow` (one thread, streams of two contexts, work on both, explicit
//! teardown), `drops` (the same ended by `Drop` with work pending), `stopping` (a
//! subscribed stream in a context that a failed task stops, S6). `aclrtProcessHostFunc`
//! answers "no work" (507012) and "not subscribed" (107012) in the course of things: only a
//! failure (507000) is injected there, as everywhere.

use crate::support;

use std::path::Path;
use std::time::Duration;

use ascend_typestate::{
    Acl, AclError, Error, HostFuncThread, InitOptions, MallocPolicy, Result, StreamConfig,
};
use support::sweep::{self, Fault, Sweep, self_check};

/// The task failure that stops the `stopping` program's context (S6).
const TASK_CODE: i32 = 507_899;

fn init(path: &Path, fault: Option<&Fault>) -> Result<Acl> {
    let acl = Acl::init_with(&InitOptions::default().library(path))?;
    sweep::arm(&acl, fault);
    Ok(acl)
}

/// A thread serving a stream of its context and one of a second context; a copy there and
/// back (checked), a kernel on the other; each unsubscribed once done, then destroyed; the
/// thread stopped; everything released in order.
fn flow(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = init(path, fault)?;
    let kernels = support::sim::Sim::open(path);
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let other = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let a = host.subscribe(ctx.create_stream()?)?;
    let b = host.subscribe(other.create_stream()?)?;
    let input: Vec<u32> = (0..256).collect();
    let mut on_device = ctx.alloc::<u32>(256, MallocPolicy::HugeFirst)?;
    let mut back = vec![0u32; 256];
    ctx.async_scope(|scope| scope.copy(&a, &mut on_device, &input[..]).map(drop))?;
    ctx.async_scope(|scope| scope.copy(&a, &mut back[..], &on_device).map(drop))?;
    self_check(
        back == input,
        "self-check: the copies through a subscribed stream",
    )?;
    b.is_complete()?; // binds the second context for the raw kernel
    kernels.sleep_kernel(b.as_raw(), 5_000);
    // A few polls of the thread while both are subscribed.
    std::thread::sleep(Duration::from_millis(25));
    let b = b.unsubscribe()?;
    b.destroy()?;
    let a = a.unsubscribe()?;
    a.destroy()?;
    host.stop()?;
    drop(on_device);
    other.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

/// The handles of `flow`, ended by `Drop` while a kernel is pending on each subscribed
/// stream; then the runtime finalized.
fn drops(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = init(path, fault)?;
    let kernels = support::sim::Sim::open(path);
    {
        let device = acl.set_device(0)?;
        let ctx = device.create_context()?;
        let other = device.create_context()?;
        let host = HostFuncThread::spawn(&ctx)?;
        let a = host.subscribe(ctx.create_stream()?)?;
        let b = host.subscribe(other.create_stream()?)?;
        for stream in [&a, &b] {
            stream.is_complete()?;
            kernels.sleep_kernel(stream.as_raw(), 5_000);
        }
        std::thread::sleep(Duration::from_millis(15));
    }
    acl.finalize()?;
    Ok(())
}

fn is_stop(error: &Error) -> bool {
    error.code() == Some(AclError::Unknown(TASK_CODE))
}

/// A subscribed stream in a context with a stop-on-failure stream, stopped by a failed task
/// (S6): the stop is reported once by each stream's next synchronisation, the subscribed
/// one's inside `unsubscribe`, which is then tried again.
fn stopping(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = init(path, fault)?;
    let kernels = support::sim::Sim::open(path);
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let stops = ctx.create_stream_with(StreamConfig::new().stop_on_failure())?;
    let subscribed = host.subscribe(ctx.create_stream()?)?;
    subscribed.is_complete()?;
    kernels.sleep_kernel(subscribed.as_raw(), 3_000);
    kernels.inject_task_failure(stops.as_raw(), TASK_CODE);
    kernels.sleep_kernel(stops.as_raw(), 10);
    match stops.synchronize() {
        Err(e) if is_stop(&e) => {}
        Err(e) => return Err(e),
        Ok(()) => return self_check(false, "self-check: the stop is reported"),
    }
    let stream = match subscribed.try_unsubscribe() {
        Ok(stream) => stream,
        Err(failed) => {
            let (error, subscribed) = failed.into_parts();
            if !is_stop(&error) {
                drop(subscribed);
                return Err(error);
            }
            subscribed.unsubscribe()?
        }
    };
    stream.destroy()?;
    stops.destroy()?;
    host.stop()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

/// Every runtime function; not the simulator's kernel launch, which the programs use to keep
/// work pending (their own tool, not a call of the crate's).
fn functions() -> Vec<&'static str> {
    let mut all = sweep::runtime_functions();
    all.retain(|&f| f != "aclsimLaunchKernel");
    all
}

const SWEEP: Sweep = Sweep {
    name: "host-function fault sweep",
    worker_test: "host_func_fault_sweep_worker",
    programs: &[("flow", flow), ("drops", drops), ("stopping", stopping)],
    functions,
    codes: sweep::default_codes,
    check: sweep::no_check,
    expected_reports: &["(507899)"],
};

#[test]
fn host_func_fault_sweep_worker() {
    sweep::worker(&SWEEP);
}

#[test]
fn host_func_fault_sweep_once() {
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return;
    }
    // Its clean runs initialise the runtime outside any `Session`: a process of its own.
    if support::child::own_process("host_func_fault_sweep_once") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 1);
    support::child::passed("host_func_fault_sweep_once");
}

#[test]
fn host_func_fault_sweep_twice() {
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return;
    }
    if support::child::own_process("host_func_fault_sweep_twice") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 2);
    support::child::passed("host_func_fault_sweep_twice");
}
