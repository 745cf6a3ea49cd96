//! The programs of the feature fault sweep (`fault_sweep_features`) that need no model:
//! `devices` (device states, stream configurations, a stop-on-failure context, host
//! functions, E10 event re-use, force destroys, callbacks in a device's default context),
//! `scopes` (async scopes with simulated kernels and cross-stream pending results), and
//! `drops` (teardown by `Drop` alone).

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ascend_typestate::{
    AclError, CallbackMode, DeviceCapability, Error, MallocPolicy, MemoryKind, PipelineConfig,
    ReportThread, Result, StreamConfig, timeout,
};
use support::sweep::{Fault, self_check};

use super::fault_sweep_features::{
    CLASSES, FEATURES, ROWS, TASK_CODE, TASK_ISSUED, TASK_REPORTS, TASK_SEEN, expect_nothing_alive,
    frame_input, init, on_another_thread, static_model_file, step, twice,
};

/// The element count of the plain buffers.
const N: usize = 256;

fn is_task_failure(error: &Error) -> bool {
    error.code() == Some(AclError::Unknown(TASK_CODE))
}

/// Device states (`Device<Set>` → default context → `Reset` → set again → default context
/// → `Set`), the queries beyond the seeds (P4, P5, D8, S5), E10 timing events, stream
/// configurations, host functions, force destroys, and a stop-on-failure context stopped on
/// purpose (S6).
pub(crate) fn devices(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = init(path, fault)?;
    let sim = acl.simulator().expect("self-check: the simulator");
    let raw_sim = support::sim::Sim::open(path);
    self_check(
        acl.soc_name()?.starts_with("Ascend"),
        "self-check: the SoC name",
    )?;
    self_check(
        !acl.runtime_version()?.is_empty(),
        "self-check: a runtime version",
    )?;
    self_check(
        acl.interface_version()?.0 >= 1,
        "self-check: an interface version",
    )?;
    let limit = acl.set_op_execute_timeout(Duration::from_secs(5))?;
    self_check(
        limit >= Duration::from_secs(5) && acl.op_execute_timeout()? >= Duration::from_secs(5),
        "self-check: the operator timeout",
    )?;

    let input: Vec<u32> = (0..N as u32).collect();

    // Device<Set> → its default context, used as a context.
    let device = acl.set_device(0)?;
    self_check(
        device.capability(DeviceCapability::AiCoreCount)? > 0,
        "self-check: AI cores",
    )?;
    let device = device.into_default_context()?;
    {
        let info = device.memory_info(MemoryKind::Ddr)?;
        self_check(info.free <= info.total, "self-check: the memory info")?;
        let s = device.create_stream()?;
        let mut on_device = device.alloc::<u32>(N, MallocPolicy::HugeFirst)?;
        let mut back = vec![0u32; N];
        // Two timing events, created once and re-recorded (E10).
        let start = device.create_event()?.record(&s)?;
        device.async_scope(|scope| {
            scope.copy(&s, &mut on_device, &input[..])?;
            Ok(())
        })?;
        let end = device.create_event()?.record(&s)?;
        end.synchronize()?;
        s.synchronize()?;
        self_check(s.is_complete()?, "self-check: an idle stream is complete")?;
        self_check(
            end.elapsed_since(&start)? >= 0.0,
            "self-check: a non-negative time",
        )?;
        let start = start.reset_completed(&s)?.record(&s)?;
        device.async_scope(|scope| {
            scope.copy(&s, &mut back[..], &on_device)?;
            Ok(())
        })?;
        let end = end.reset_completed(&s)?.record(&s)?;
        end.synchronize_with(timeout!(1_000))?;
        self_check(
            back == input,
            "self-check: the default context's round trip",
        )?;
        self_check(
            end.elapsed_since(&start)? >= 0.0,
            "self-check: a non-negative time",
        )?;
        device.synchronize_device()?;
        // A timing event reset on another stream than the one it is recorded on again
        // (E10): the record is joined after that reset (E5).
        let s_b = device.create_stream()?;
        let marker = device.create_event()?.record(&s)?;
        marker.synchronize()?;
        let marker = marker.reset_completed(&s_b)?.record(&s)?;
        marker.synchronize()?;
        marker.destroy()?;
        s_b.destroy()?;
        end.destroy()?;
        start.destroy()?;
        on_device.free()?;
        s.destroy()?;
    }
    // Default context → Reset → Set again → default context → Set.
    let device = device.reset()?;
    expect_nothing_alive(&sim, "the first Device::reset");
    let device = device.set()?.into_default_context()?;
    let idle = device.create_stream()?;
    idle.synchronize()?;
    idle.destroy()?;
    let device = device.release_default_context()?;

    // A context with configured streams and host functions.
    let ctx = device.create_context()?;
    let fast = ctx.create_stream_with(StreamConfig::new().priority(5).fast_launch().fast_sync())?;
    let host_fns = ctx.create_stream()?.with_host_functions();
    let ran = Arc::new(AtomicUsize::new(0));
    let mut d = ctx.alloc::<u32>(N, MallocPolicy::NormalOnly)?;
    let mut out = vec![0u32; N];
    ctx.async_scope(|scope| {
        let staged = scope.copy(&fast, &mut d, &input[..])?;
        // Read on the other stream: joined after the copy.
        scope.copy(&host_fns, &mut out[..], staged)?;
        Ok(())
    })?;
    self_check(out == input, "self-check: the cross-stream copy")?;
    for _ in 0..3 {
        let ran = Arc::clone(&ran);
        host_fns.launch(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })?;
    }
    // `fast` waits for the host functions.
    let ev = ctx.create_event()?.record(&host_fns)?;
    let ev = ev.wait_and_reset(&fast)?;
    fast.synchronize_with(timeout!(1_000))?;
    host_fns.synchronize()?;
    self_check(
        ran.load(Ordering::SeqCst) == 3 && host_fns.pending() == 0,
        "self-check: the host functions ran",
    )?;
    self_check(
        host_fns.take_panics().is_empty(),
        "self-check: no host function panicked",
    )?;
    ev.destroy()?;
    host_fns.destroy()?;
    // Force destroys: a host-function stream whose host functions have run (a pending one
    // would be dropped and reported, an S8 finding: tests/streams covers that), and an idle
    // plain stream.
    let more_fns = ctx.create_stream()?.with_host_functions();
    for pause in [Duration::from_millis(3), Duration::ZERO] {
        let ran = Arc::clone(&ran);
        more_fns.launch(move || {
            std::thread::sleep(pause);
            ran.fetch_add(1, Ordering::SeqCst);
        })?;
    }
    more_fns.synchronize()?;
    more_fns.destroy_force()?;
    let freed_by = std::time::Instant::now() + Duration::from_secs(1);
    while Arc::strong_count(&ran) > 1 && std::time::Instant::now() < freed_by {
        std::thread::sleep(Duration::from_millis(1));
    }
    self_check(
        Arc::strong_count(&ran) == 1,
        "self-check: the force-destroyed stream's host functions were freed",
    )?;
    let scratch = ctx.create_stream()?;
    ctx.async_scope(|scope| scope.memset(&scratch, &mut d, 0))?;
    scratch.destroy_force()?;
    d.free()?;
    fast.destroy()?;

    // A stop-on-failure stream, in a context of its own (S6), stopped on purpose while the
    // other stream of the context runs a host function with an event recorded behind it.
    let ctx2 = device.create_context()?;
    let stop = ctx2.create_stream_with(StreamConfig::new().stop_on_failure())?;
    let side = ctx2.create_stream()?.with_host_functions();
    let mut flags = ctx2.alloc::<u8>(64, MallocPolicy::HugeFirst)?;
    ctx2.async_scope(|scope| scope.memset(&stop, &mut flags, 1))?;
    // The host function runs until `release` is dropped (declared after `side` and after
    // the event, so that an early return drops it first: nothing waits on it forever).
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    side.launch(move || {
        let _ = release_rx.recv();
    })?;
    let behind = ctx2.create_event()?.record(&side)?;
    let release = release_tx;
    // The stop-on-failure stream, the other stream, the event behind the host function.
    TASK_REPORTS.store(3, Ordering::SeqCst);
    raw_sim.inject_task_failure(stop.as_raw(), TASK_CODE);
    let stopped = ctx2.async_scope(|scope| {
        scope.memset(&stop, &mut flags, 2)?;
        TASK_ISSUED.store(true, Ordering::SeqCst);
        Ok(())
    });
    match stopped {
        Err(e) if is_task_failure(&e) => _ = TASK_SEEN.fetch_add(1, Ordering::SeqCst),
        Err(e) => return Err(e),
        Ok(()) => self_check(false, "self-check: the failed task was reported")?,
    }
    // The host function returns; the record behind it is dropped by the stop.
    drop(release);
    // The other stream of the context reports the stop once, and so does the event whose
    // record was dropped; later tasks are refused.
    match side.synchronize() {
        Err(e) if is_task_failure(&e) => _ = TASK_SEEN.fetch_add(1, Ordering::SeqCst),
        Err(e) => return Err(e),
        Ok(()) => self_check(
            false,
            "self-check: the stop was reported on the other stream",
        )?,
    }
    match behind.synchronize() {
        Err(e) if is_task_failure(&e) => _ = TASK_SEEN.fetch_add(1, Ordering::SeqCst),
        Err(e) => return Err(e),
        Ok(()) => self_check(false, "self-check: the dropped record was reported")?,
    }
    match side.launch(|| {}) {
        Err(e) if e.code() == Some(AclError::RtStreamAbort) => {}
        Err(e) => return Err(e),
        Ok(()) => self_check(false, "self-check: a launch after the stop was refused")?,
    }
    behind.destroy()?;
    side.destroy()?;
    stop.destroy()?;
    flags.free()?;
    ctx2.destroy()?;

    ctx.destroy()?;
    expect_nothing_alive(&sim, "the last Context::destroy");
    acl.set_op_execute_timeout(Duration::ZERO)?;
    let device = device.reset()?;
    expect_nothing_alive(&sim, "the second Device::reset");
    drop(device);
    acl.finalize()?;
    Ok(())
}

/// In a device's default context: async scopes with simulated kernels on three streams,
/// reading each other's pending results (joins, pooled for the second round); a pipeline
/// with a simulated kernel; a report thread with a subscribed stream that waits on events
/// and runs callbacks.
pub(crate) fn scopes(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let acl = init(path, fault)?;
    let sim = acl.simulator().expect("self-check: the simulator");
    let device = acl.set_device(0)?.into_default_context()?;
    let (s1, s2, s3) = (
        device.create_stream()?,
        device.create_stream()?,
        device.create_stream()?,
    );
    let mut host = device.alloc_host::<u32>(N)?;
    let mut d_in = device.alloc::<u32>(N, MallocPolicy::HugeFirst)?;
    let mut d_mid = device.alloc::<u32>(N, MallocPolicy::HugeFirst)?;
    let mut d_out = device.alloc::<u32>(N, MallocPolicy::NormalOnly)?;
    for round in 0..2u32 {
        for (i, x) in host.iter_mut().enumerate() {
            *x = i as u32 + round;
        }
        let mut r1 = vec![0u32; N];
        let mut r2 = vec![0u32; N];
        device.async_scope(|scope| {
            let staged = scope.copy(&s1, &mut d_in, &host)?;
            let mid =
                scope.simulated_map(&s2, Duration::from_micros(300), staged, &mut d_mid, step)?;
            let out = scope.simulated_map(&s3, Duration::ZERO, mid, &mut d_out, twice)?;
            scope.copy(&s1, &mut r1[..], out)?;
            scope.copy(&s2, &mut r2[..], mid)?;
            Ok(())
        })?;
        let want_mid: Vec<u32> = host.iter().map(|&x| step(x)).collect();
        let want_out: Vec<u32> = want_mid.iter().map(|&x| twice(x)).collect();
        self_check(r2 == want_mid, "self-check: the first kernel's output")?;
        self_check(r1 == want_out, "self-check: the second kernel's output")?;
    }

    // A pipeline of the default context, with a simulated kernel, run by another thread
    // (D6: each of its calls binds the context there).
    let frame_value = |n: u64| -> Vec<u32> { (0..N as u32).map(|i| i ^ (n as u32)).collect() };
    on_another_thread(|| -> Result<()> {
        let mut pipeline = device.create_pipeline::<u32, u32>(PipelineConfig::new(N, N))?;
        for _ in 0..5 {
            let mut slot = pipeline.next_slot()?;
            if let Some((n, output)) = slot.output() {
                let want: Vec<u32> = frame_value(n).into_iter().map(step).collect();
                self_check(output == want, "self-check: a pipeline frame's output")?;
            }
            let n = slot.frame();
            slot.input_mut().copy_from_slice(&frame_value(n));
            slot.submit(|launch| launch.simulated_map(Duration::from_micros(200), step))?;
        }
        pipeline.wait_all()?;
        let mut seen = 0;
        for (n, output) in pipeline.outputs() {
            let want: Vec<u32> = frame_value(n).into_iter().map(step).collect();
            self_check(output == want, "self-check: a last frame's output")?;
            seen += 1;
        }
        self_check(seen == 2, "self-check: the last two frames")?;
        pipeline.destroy()?;
        Ok(())
    })?;

    // Callbacks in the default context.
    let report = ReportThread::spawn(&device)?;
    let sub = report.subscribe(device.create_stream()?)?;
    let ran = Arc::new(AtomicUsize::new(0));
    let ev = device.create_event()?.record(&s1)?;
    let ev = ev.wait(&sub, |mut waited| {
        waited.also_wait(&s2)?;
        waited.reset()
    })?;
    for mode in [CallbackMode::Blocking, CallbackMode::NonBlocking] {
        let ran = Arc::clone(&ran);
        sub.launch(mode, move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })?;
    }
    let ev = ev.record(&sub)?;
    ev.synchronize()?;
    let ev = ev.wait_and_reset(&s3)?;
    s3.synchronize()?;
    ev.destroy()?;
    let s4 = sub.unsubscribe()?;
    self_check(
        ran.load(Ordering::SeqCst) == 2,
        "self-check: both callbacks ran",
    )?;
    s4.destroy()?;
    report.stop()?;

    d_out.free()?;
    d_mid.free()?;
    d_in.free()?;
    host.free()?;
    s3.destroy()?;
    s2.destroy()?;
    s1.destroy()?;
    let device = device.reset()?;
    expect_nothing_alive(&sim, "Device::reset");
    drop(device);
    acl.finalize()?;
    Ok(())
}

/// Teardown by `Drop` alone: the new handles are built, some with work in flight (pipeline
/// frames executing a model, a host function, callbacks) or with a failure to report (a
/// stopped context, S6), and dropped at the end of a block in reverse order; only the `Acl`
/// is finalized explicitly. A failure in a `Drop` fallback must be retried and reported (the
/// program then returns `Ok`), never leak.
pub(crate) fn drops(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let file = static_model_file();
    let acl = init(path, fault)?;
    let sim = acl.simulator().expect("self-check: the simulator");
    let raw_sim = support::sim::Sim::open(path);
    {
        let device = acl.set_device(0)?.into_default_context()?;
        let ctx = device.create_context()?;
        let mut model = ctx.load_model(file)?;
        let mut io = model.create_io(MallocPolicy::HugeFirst)?;
        io.write_input(0, &frame_input(1))?;
        model.execute(&mut io)?;
        // Two frames left in flight, executing the model, when the pipeline is dropped.
        let mut pipeline =
            ctx.create_pipeline::<f32, f32>(PipelineConfig::new(ROWS * FEATURES, ROWS * CLASSES))?;
        for n in 0..3 {
            let mut slot = pipeline.next_slot()?;
            slot.input_mut().copy_from_slice(&frame_input(n));
            slot.submit(|launch| launch.execute(&mut model))?;
        }
        // Callbacks, one of them launched and maybe not yet run.
        let report = ReportThread::spawn(&ctx)?;
        let sub = report.subscribe(ctx.create_stream()?)?;
        sub.launch(CallbackMode::Blocking, || {
            std::thread::sleep(Duration::from_millis(1));
        })?;
        // In the default context: a configured stream, a host-function stream with a host
        // function pending, a recorded event and a reset one, a pipeline with a simulated
        // kernel and frames in flight.
        let s1 = device.create_stream_with(StreamConfig::new().priority(1).fast_sync())?;
        let host_fns = device.create_stream()?.with_host_functions();
        host_fns.launch(|| std::thread::sleep(Duration::from_millis(2)))?;
        let _recorded = device.create_event()?.record(&s1)?;
        let _reset = device
            .create_event()?
            .record(&host_fns)?
            .wait_and_reset(&s1)?;
        let mut kernels = device.create_pipeline::<u32, u32>(PipelineConfig::new(N, N))?;
        for _ in 0..3 {
            let slot = kernels.next_slot()?;
            slot.submit(|launch| launch.simulated_map(Duration::from_micros(300), step))?;
        }
        // A stop-on-failure context stopped on purpose (S6): the stop is reported by the
        // scope that issued the failing task, and once more by each other stream of the
        // context and by the event whose record it dropped, in their `Drop`.
        let ctx_stop = device.create_context()?;
        let stop = ctx_stop.create_stream_with(StreamConfig::new().stop_on_failure())?;
        let _bystander = ctx_stop.create_stream()?;
        let blocked = ctx_stop.create_stream()?.with_host_functions();
        let mut flags = ctx_stop.alloc::<u8>(64, MallocPolicy::HugeFirst)?;
        // The host function runs until `release` is dropped (see `devices`).
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        blocked.launch(move || {
            let _ = release_rx.recv();
        })?;
        let _behind = ctx_stop.create_event()?.record(&blocked)?;
        let release = release_tx;
        TASK_REPORTS.store(4, Ordering::SeqCst);
        raw_sim.inject_task_failure(stop.as_raw(), TASK_CODE);
        let stopped = ctx_stop.async_scope(|scope| {
            scope.memset(&stop, &mut flags, 2)?;
            TASK_ISSUED.store(true, Ordering::SeqCst);
            Ok(())
        });
        match stopped {
            Err(e) if is_task_failure(&e) => _ = TASK_SEEN.fetch_add(1, Ordering::SeqCst),
            Err(e) => return Err(e),
            Ok(()) => self_check(false, "self-check: the failed task was reported")?,
        }
        drop(release);
        // Everything is dropped here, in reverse order.
    }
    expect_nothing_alive(&sim, "dropping every handle");
    acl.finalize()?;
    Ok(())
}
