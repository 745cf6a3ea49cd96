//! Systematic fault injection over what the crate gained since `tests/simulator/fault_sweep.rs` was
//! written (issue 23): device states, stream configurations (stop on failure included), host
//! functions, E10 event re-use, force destroys, async scopes with simulated kernels and
//! cross-stream pending results, callbacks in a device's default context, pipelines (with a
//! simulated kernel and with models, run by another thread) and models executed
//! synchronously (static and dynamic-batch, loaded with their memory and from bytes).
//!
//! Four programs (`devices`, `scopes`, `models`: explicit teardown; `drops`: teardown by
//! `Drop` alone), each run once clean to count its runtime calls, then once per (function,
//! occurrence, code) with that call failing: once (`fault_sweep_features_once`), and twice
//! in a row (`fault_sweep_features_twice`: a retry of the failed call fails too). The codes
//! and the rules are those of `tests/simulator/fault_sweep.rs` (`support/sweep.rs`): the injected
//! error is returned, or the crate recovers and reports it; zero checker findings; nothing
//! alive and the runtime finalized afterwards. Besides:
//!
//! * a `Context::destroy` or `Device::reset` that succeeds while a runtime object is still
//!   alive is a failure of its own (the simulator says so only at `aclFinalize`, P2);
//! * the `devices` program stops a stop-on-failure context on purpose (a task failure
//!   injected with `aclsimInjectTaskFailure`, S6): that failure must be returned or reported
//!   once per stream of the context and once by the event whose record it dropped, whatever
//!   call fails around it;
//! * the `models` pipeline goes on after a failed frame (as an inference loop would), so the
//!   recovery of a slot is swept too; its first error is returned after the whole teardown.
//!
//! The sweeps print every case and the counts per outcome; all failing cases are listed in
//! the assertion's message.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ascend_typestate::simulator::{SimDtype, SimModel, Simulator};
use ascend_typestate::{
    Acl, AclError, CallbackMode, DYNAMIC_BATCH_INPUT, DeviceCapability, Error, InitOptions,
    MallocPolicy, MemoryKind, ModelSource, PipelineConfig, ReportThread, Result, StreamConfig,
    timeout,
};
use support::sweep::{self, CaseResult, Fault, Sweep, self_check};

/// The element count of the plain buffers.
const N: usize = 256;

/// The simulated kernels' functions.
fn step(x: u32) -> u32 {
    x.wrapping_mul(3).wrapping_add(7)
}

fn twice(x: u32) -> u32 {
    x.wrapping_mul(2)
}

/// The code of the task failure the device program injects on its stop-on-failure stream.
const TASK_CODE: i32 = 507_899;

// ---- What the programs record for the check after each case --------------------------

/// Teardown steps that succeeded over live runtime objects.
static VIOLATIONS: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// The memset that fails on purpose was issued (so its failure must surface).
static TASK_ISSUED: AtomicBool = AtomicBool::new(false);
/// How many times the program saw that failure returned.
static TASK_SEEN: AtomicUsize = AtomicUsize::new(0);
/// How many times the stop must be returned or reported in all (S6): once by each stream of
/// the stopped context, and once by each event whose record the stop dropped.
static TASK_REPORTS: AtomicUsize = AtomicUsize::new(0);

fn begin_case() {
    VIOLATIONS.lock().unwrap_or_else(|p| p.into_inner()).clear();
    TASK_ISSUED.store(false, Ordering::SeqCst);
    TASK_SEEN.store(0, Ordering::SeqCst);
    TASK_REPORTS.store(0, Ordering::SeqCst);
}

/// After `step` succeeded, nothing of the runtime may be alive: else `step` succeeded over
/// a live object (D3, P2), which is recorded.
fn expect_nothing_alive(sim: &Simulator<'_>, step: &str) {
    let live = sim.live_objects();
    if live != 0 {
        VIOLATIONS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!(
                "{step} succeeded over {live} live runtime object(s)"
            ));
    }
}

/// The further checks of a case (see the module docs).
fn check(result: &CaseResult) -> Vec<String> {
    let mut out = std::mem::take(&mut *VIOLATIONS.lock().unwrap_or_else(|p| p.into_inner()));
    let code = format!("({TASK_CODE})");
    let seen = TASK_SEEN.load(Ordering::SeqCst)
        + usize::from(result.message.contains(&code))
        + result
            .drop_errors
            .iter()
            .filter(|e| e.contains(&code))
            .count();
    let expected = TASK_REPORTS.load(Ordering::SeqCst);
    if TASK_ISSUED.load(Ordering::SeqCst) && seen < expected {
        out.push(format!(
            "the stop's task failure {code} was returned or reported {seen} time(s), not \
             {expected} (once per stream of the stopped context, once per event whose record \
             it dropped): lost"
        ));
    }
    out
}

fn is_task_failure(error: &Error) -> bool {
    error.code() == Some(AclError::Unknown(TASK_CODE))
}

// ---- The models ------------------------------------------------------------------------

const ROWS: usize = 2;
const FEATURES: usize = 4;
const CLASSES: usize = 3;

fn weights() -> Vec<f32> {
    (0..FEATURES * CLASSES)
        .map(|i| ((i * 5 % 7) as f32 - 3.0) / 2.0)
        .collect()
}

const BIAS: [f32; CLASSES] = [0.5, -1.0, 0.25];

/// A linear classifier over `FEATURES` values, `ROWS` items (the largest gear's batch).
fn classifier(gears: &[u64]) -> SimModel {
    SimModel::new(
        SimDtype::F32,
        &[ROWS, FEATURES],
        SimDtype::F32,
        &[ROWS, CLASSES],
    )
    .batch_gears(gears)
    .time_per_item(Duration::from_micros(50))
    .matmul(FEATURES, CLASSES, &weights())
    .bias(&BIAS)
}

/// What the classifier computes for `input` (rows of `FEATURES`).
fn classify(input: &[f32]) -> Vec<f32> {
    let w = weights();
    input
        .chunks(FEATURES)
        .flat_map(|row| {
            (0..CLASSES).map(|c| {
                let mut sum = 0.0f32;
                for (r, x) in row.iter().enumerate() {
                    sum += x * w[r * CLASSES + c];
                }
                sum + BIAS[c]
            })
        })
        .collect()
}

fn close(found: &[f32], want: &[f32]) -> bool {
    found.len() == want.len() && found.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-3)
}

fn frame_input(n: u64) -> Vec<f32> {
    (0..ROWS * FEATURES)
        .map(|i| ((n as usize * 13 + i) % 11) as f32 / 4.0 - 1.0)
        .collect()
}

/// The static model's file, written once per process.
fn static_model_file() -> &'static PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = support::scratch_dir("fault-sweep-features-models").join("static.model");
        classifier(&[]).write(&path).expect("write the model file");
        path
    })
}

// ---- The programs ------------------------------------------------------------------------

/// Runs `body` on a thread of its own, and returns what it returns (a panic goes on here).
fn on_another_thread<T: Send>(body: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    std::thread::scope(|threads| {
        threads
            .spawn(body)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn init(path: &Path, fault: Option<&Fault>) -> Result<Acl> {
    begin_case();
    let acl = Acl::init_with(&InitOptions::default().library(path))?;
    sweep::arm(&acl, fault);
    Ok(acl)
}

/// Device states (`Device<Set>` → default context → `Reset` → set again → default context
/// → `Set`), the queries beyond the seeds (P4, P5, D8, S5), E10 timing events, stream
/// configurations, host functions, force destroys, and a stop-on-failure context stopped on
/// purpose (S6).
fn devices(path: &Path, fault: Option<&Fault>) -> Result<()> {
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
    // Force destroys: a host-function stream with host functions pending (each runs or is
    // dropped, and is freed either way: S8, C10), and an idle plain stream.
    let more_fns = ctx.create_stream()?.with_host_functions();
    for pause in [Duration::from_millis(3), Duration::ZERO] {
        let ran = Arc::clone(&ran);
        more_fns.launch(move || {
            std::thread::sleep(pause);
            ran.fetch_add(1, Ordering::SeqCst);
        })?;
    }
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
fn scopes(path: &Path, fault: Option<&Fault>) -> Result<()> {
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

/// Models in a created context: a static model loaded with its memory (MD2) and a
/// dynamic-batch model loaded from bytes (MD3), executed synchronously through `ModelIo`,
/// then both in one pipeline (`Launch::execute`, `Launch::execute_batch`), a slot switching
/// between them, then synchronously again.
fn models(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let file = static_model_file();
    let acl = init(path, fault)?;
    let sim = acl.simulator().expect("self-check: the simulator");
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;

    let (work, weight) = ctx.model_memory_size(file)?;
    let source = ModelSource::file_with_memory(
        file,
        ctx.alloc::<u8>(work, MallocPolicy::HugeFirst)?,
        ctx.alloc::<u8>(weight, MallocPolicy::HugeFirst)?,
    );
    let mut model = ctx.load_model(source)?;
    let mut io = model.create_io(MallocPolicy::HugeFirst)?;
    let mut output = [0.0f32; ROWS * CLASSES];
    for n in 0..2 {
        let input = frame_input(n);
        io.write_input(0, &input)?;
        model.execute(&mut io)?;
        io.read_output(0, &mut output)?;
        self_check(
            close(&output, &classify(&input)),
            "self-check: a synchronous execution",
        )?;
    }

    let text = classifier(&[1, 2]).to_text().into_bytes();
    let mut dynamic = ctx.load_dynamic_model(ModelSource::bytes(text))?;
    let data = dynamic
        .inputs()
        .iter()
        .position(|t| t.name() != DYNAMIC_BATCH_INPUT)
        .unwrap_or(0);
    let mut dyn_io = dynamic.create_io(MallocPolicy::NormalOnly)?;
    for batch in [1u64, 2] {
        let input = frame_input(batch + 10);
        dyn_io.write_input(data, &input)?;
        dynamic.execute_batch(&mut dyn_io, batch)?;
        let mut output = [f32::NAN; ROWS * CLASSES];
        dyn_io.read_output(0, &mut output)?;
        let rows = batch as usize;
        self_check(
            close(
                &output[..rows * CLASSES],
                &classify(&input[..rows * FEATURES]),
            ),
            "self-check: a dynamic-batch execution",
        )?;
        self_check(
            dynamic.current_output_dims(0)? == vec![batch as i64, CLASSES as i64],
            "self-check: the current output dims",
        )?;
    }

    // Both models in one pipeline, on another thread (the models move there: Send, MD8):
    // slot 0 runs frames 0, 2, 4 (static, dynamic, static). A frame that fails is not retried: the loop goes on with the next one (the slot is
    // settled first), as an inference loop would; the first error is returned at the end,
    // after the whole teardown.
    let first_error = on_another_thread(|| -> Result<Option<Error>> {
        let uses_dynamic = |n: u64| n % 3 == 2;
        let mut pipeline =
            ctx.create_pipeline::<f32, f32>(PipelineConfig::new(ROWS * FEATURES, ROWS * CLASSES))?;
        let mut first_error: Option<Error> = None;
        let mut failures = 0;
        let mut recover = |error: Error| -> Result<()> {
            if error.to_string().contains(sweep::SELF_CHECK) {
                return Err(error);
            }
            failures += 1;
            first_error.get_or_insert(error);
            self_check(
                failures <= 6,
                "self-check: the pipeline recovers (within 6 failures)",
            )
        };
        let mut frames = 0;
        while frames < 5 {
            let step = pipeline.next_slot().and_then(|mut slot| {
                if let Some((n, output)) = slot.output() {
                    self_check(
                        close(output, &classify(&frame_input(n))),
                        "self-check: a pipelined execution",
                    )?;
                }
                let n = slot.frame();
                slot.input_mut().copy_from_slice(&frame_input(n));
                if uses_dynamic(n) {
                    slot.submit(|launch| launch.execute_batch(&mut dynamic, 2))
                } else {
                    slot.submit(|launch| launch.execute(&mut model))
                }
            });
            match step {
                Ok(_) => frames += 1,
                Err(error) => recover(error)?,
            }
        }
        while let Err(error) = pipeline.wait_all() {
            recover(error)?;
        }
        let mut seen = 0;
        for (n, output) in pipeline.outputs() {
            self_check(
                close(output, &classify(&frame_input(n))),
                "self-check: a last pipelined execution",
            )?;
            seen += 1;
        }
        self_check(
            seen == 2 || first_error.is_some(),
            "self-check: the last two frames",
        )?;
        self_check(
            model.pending() == 0 && dynamic.pending() == 0,
            "self-check: nothing pending once the frames are done",
        )?;
        pipeline.destroy()?;
        Ok(first_error)
    })?;

    // Synchronously again, once nothing is pending (MD7, MD8).
    let input = frame_input(99);
    io.write_input(0, &input)?;
    model.execute(&mut io)?;
    io.read_output(0, &mut output)?;
    self_check(
        close(&output, &classify(&input)),
        "self-check: an execution after the pipeline",
    )?;

    drop(dyn_io);
    dynamic.unload()?;
    drop(io);
    model.unload()?;
    ctx.destroy()?;
    expect_nothing_alive(&sim, "Context::destroy");
    let device = device.reset()?;
    expect_nothing_alive(&sim, "Device::reset");
    drop(device);
    acl.finalize()?;
    first_error.map_or(Ok(()), Err)
}

/// A model executed asynchronously in async scopes on streams of the program's choice
/// (`AsyncScope::execute`): upload and a preprocessing kernel on one stream, the model and the
/// download on another (a join), the same buffers twice (datasets kept), other buffers once
/// (datasets rebuilt), a dynamic model's gears; a scope left by an error mid-way; every
/// model dropped or unloaded with its datasets. Nothing may be lost on any path.
fn scoped_models(path: &Path, fault: Option<&Fault>) -> Result<()> {
    fn halve(x: f32) -> f32 {
        x * 0.5
    }
    let file = static_model_file();
    let acl = init(path, fault)?;
    let sim = acl.simulator().expect("self-check: the simulator");
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let (upload, run) = (ctx.create_stream()?, ctx.create_stream()?);
    let mut model = ctx.load_model(file)?;
    let mut staged = ctx.alloc::<f32>(ROWS * FEATURES, MallocPolicy::HugeFirst)?;
    let mut input = ctx.alloc::<f32>(ROWS * FEATURES, MallocPolicy::HugeFirst)?;
    let mut output = ctx.alloc::<f32>(ROWS * CLASSES, MallocPolicy::HugeFirst)?;
    let mut other_output = ctx.alloc::<f32>(ROWS * CLASSES, MallocPolicy::NormalOnly)?;
    for n in 0..3u64 {
        let host: Vec<f32> = frame_input(n).iter().map(|x| x * 2.0).collect();
        let mut scores = [f32::NAN; ROWS * CLASSES];
        let out = if n == 2 {
            &mut other_output
        } else {
            &mut output
        };
        ctx.async_scope(|scope| {
            let up = scope.copy(&upload, &mut staged, &host[..])?;
            let pre =
                scope.simulated_map(&upload, Duration::from_micros(200), up, &mut input, halve)?;
            let done = scope.execute(&run, &mut model, [pre.into()], [out.into()])?;
            scope.copy(&run, &mut scores[..], done.output::<f32>(0)?)?;
            Ok(())
        })?;
        self_check(
            close(&scores, &classify(&frame_input(n))),
            "self-check: a scoped execution after a kernel on another stream",
        )?;
    }

    let text = classifier(&[1, 2]).to_text().into_bytes();
    let mut dynamic = ctx.load_dynamic_model(ModelSource::bytes(text))?;
    for batch in [2u64, 1] {
        let host = frame_input(batch + 20);
        let mut scores = [f32::NAN; ROWS * CLASSES];
        ctx.async_scope(|scope| {
            let up = scope.copy(&run, &mut input, &host[..])?;
            let done = scope.execute_batch(
                &run,
                &mut dynamic,
                batch,
                [up.into()],
                [(&mut output).into()],
            )?;
            scope.copy(&run, &mut scores[..], done.output::<f32>(0)?)?;
            Ok(())
        })?;
        let rows = batch as usize;
        self_check(
            close(
                &scores[..rows * CLASSES],
                &classify(&host[..rows * FEATURES]),
            ),
            "self-check: a scoped dynamic-batch execution",
        )?;
    }
    // A scope whose body fails after the execution: synchronised all the same (M1).
    let refused = ctx.async_scope(|scope| {
        scope.execute(&run, &mut model, [(&input).into()], [(&mut output).into()])?;
        Err::<(), _>(Error::InvalidArgument("the body's own error"))
    });
    match refused {
        Err(Error::InvalidArgument("the body's own error")) => {}
        // The injected failure of the execution itself.
        Err(error) => return Err(error),
        Ok(()) => self_check(false, "self-check: the body's error comes first")?,
    }

    drop(dynamic);
    model.unload()?;
    for buffer in [staged, input, output, other_output] {
        buffer.free()?;
    }
    upload.destroy()?;
    run.destroy()?;
    ctx.destroy()?;
    expect_nothing_alive(&sim, "Context::destroy");
    device.reset()?;
    acl.finalize()
}

/// Teardown by `Drop` alone: the new handles are built, some with work in flight (pipeline
/// frames executing a model, a host function, callbacks) or with a failure to report (a
/// stopped context, S6), and dropped at the end of a block in reverse order; only the `Acl`
/// is finalized explicitly. A failure in a `Drop` fallback must be retried and reported (the
/// program then returns `Ok`), never leak.
fn drops(path: &Path, fault: Option<&Fault>) -> Result<()> {
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

/// The runtime functions, the simulated kernel and the model functions.
fn functions() -> Vec<&'static str> {
    let mut all = sweep::runtime_functions();
    for &name in ascend_typestate::sys::model::MODEL_SYMBOLS {
        if !all.contains(&name) {
            all.push(name);
        }
    }
    all
}

const SWEEP: Sweep = Sweep {
    name: "fault sweep (features)",
    worker_test: "fault_sweep_features_worker",
    programs: &[
        ("devices", devices),
        ("scopes", scopes),
        ("models", models),
        ("scoped_models", scoped_models),
        ("drops", drops),
    ],
    functions,
    codes: sweep::default_codes,
    check,
    // The stop the `devices` and `drops` programs provoke, reported by `Drop`s.
    expected_reports: &["(507899)"],
};

/// The two sweeps share the machine's two cores: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A worker process: runs the cases it is given (see `support/sweep.rs`).
#[test]
fn fault_sweep_features_worker() {
    sweep::worker(&SWEEP);
}

#[test]
fn fault_sweep_features_once() {
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return; // A worker runs only `fault_sweep_features_worker`.
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // Its clean run initialises the runtime outside any `Session`: a process of its own.
    if support::child::own_process("fault_sweep_features_once") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 1);
    support::child::passed("fault_sweep_features_once");
}

#[test]
fn fault_sweep_features_twice() {
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // Its clean run initialises the runtime outside any `Session`: a process of its own.
    if support::child::own_process("fault_sweep_features_twice") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 2);
    support::child::passed("fault_sweep_features_twice");
}
