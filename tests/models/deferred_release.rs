//! Red-team attacks on issue 23 (deferred model release, counted model objects, pipeline
//! resets, plain/try forms, `retry_cleanup`), written with safe code only.
//!
//! Every test runs in a child process of its own (`support::child`): an attack that makes
//! the library leak must not leave the process-wide runtime initialised for the next test.
//! Each test asserts the *correct* behaviour: a failing test is a library bug (see the
//! comment above it).

use crate::support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{
    Acl, Error, InitOptions, MallocPolicy, Model, ModelSource, PipelineConfig, Static,
};
use support::DropErrors;
use support::sim::{Finding, Session};

const ROWS: usize = 2;
const FEATURES: usize = 8;
const CLASSES: usize = 4;
const CODE: i32 = 507_000;

/// Runs `test` in a child process (the child's body runs when `RT23_CHILD` is set) and
/// asserts that it printed `RT23-OK`. Returns `true` in the child.
fn in_child(test: &str) -> bool {
    const VAR: &str = "RT23_CHILD";
    if std::env::var_os(VAR).is_some() {
        return true;
    }
    let (status, out, err) = support::child::in_child(test, VAR, Duration::from_secs(300));
    assert!(
        status.is_some_and(|s| s.success()) && out.contains("RT23-OK"),
        "child {test} failed ({status:?}):\n--- stdout\n{out}\n--- stderr\n{err}"
    );
    false
}

/// The child's end: prints the marker and leaves without finalizing (a test may have
/// left the runtime with objects it kept on purpose).
fn child_ok() -> ! {
    println!("RT23-OK");
    std::process::exit(0);
}

fn sim_model(gears: &[u64], item: Duration) -> SimModel {
    let rows = gears.iter().copied().max().map_or(ROWS, |g| g as usize);
    SimModel::new(
        SimDtype::F32,
        &[rows, FEATURES],
        SimDtype::F32,
        &[rows, CLASSES],
    )
    .batch_gears(gears)
    .time_per_item(item)
    .matmul(FEATURES, CLASSES, &[0.25; FEATURES * CLASSES])
}

fn model_file(name: &str, model: &SimModel) -> PathBuf {
    let path = support::scratch_dir(&format!("rt23_{name}")).join("m.model");
    model.write(&path).expect("write the model file");
    path
}

fn config() -> PipelineConfig {
    PipelineConfig::new(ROWS * FEATURES, ROWS * CLASSES)
}

fn infer(x: f32) -> f32 {
    x + 1.0
}

/// Findings about the rules under attack (leak reports, P2, are judged separately).
fn rule_findings(findings: &[Finding]) -> Vec<&Finding> {
    findings.iter().filter(|f| f.rule != "P2").collect()
}

/// A deterministic busy wait of `micros` µs, to move one thread's step across the other's.
fn spin(micros: u64) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_micros(micros) {
        std::hint::spin_loop();
    }
}

// ---- 1. The deferred release: races, closures, faults, memory, two pipelines -----------

/// Attack 1a: the model is dropped on one thread while another proves its frames done
/// (`wait_all`), destroys or drops the pipeline, with the two steps moved across each other
/// by a varying spin. Correct: every iteration unloads the model exactly once, with no
/// report, no finding and nothing left alive.
#[test]
fn t01_race_model_drop_vs_pipeline_completion_on_two_threads() {
    if !in_child("t01_race_model_drop_vs_pipeline_completion_on_two_threads") {
        return;
    }
    let iterations: u64 = std::env::var("RT23_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(90);
    let path = model_file("race", &sim_model(&[], Duration::from_micros(300)));
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        let baseline = session.sim.live_objects();
        for i in 0..iterations {
            let mut pipeline = device.create_pipeline::<f32, f32>(config()).unwrap();
            let mut model = device.load_model(&path).unwrap();
            for _ in 0..2 {
                let slot = pipeline.next_slot().unwrap();
                slot.submit(|l| l.execute(&mut model)).unwrap();
            }
            let barrier = Barrier::new(2);
            let barrier = &barrier;
            let (a, b) = ((i * 37) % 900, (i * 53) % 900);
            std::thread::scope(|s| {
                s.spawn(move || {
                    barrier.wait();
                    spin(a);
                    drop(model);
                });
                s.spawn(move || {
                    barrier.wait();
                    spin(b);
                    match i % 3 {
                        0 => {
                            pipeline.wait_all().unwrap();
                            pipeline.destroy().unwrap();
                        }
                        1 => pipeline.destroy().unwrap(),
                        _ => drop(pipeline),
                    }
                });
            });
            assert_eq!(
                session.sim.live_objects(),
                baseline,
                "iteration {i}: the model (or the pipeline) was left alive"
            );
            let reported = errors.take();
            assert!(reported.is_empty(), "iteration {i}: {reported:?}");
        }
        let findings = session.sim.findings();
        assert!(findings.is_empty(), "{findings:#?}");
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
    child_ok();
}

/// Attack 1b: the kernel closure owns the model: it executes it, drops it (pending: its
/// own frame), then returns an error, panics, or launches a simulated kernel; or it drops
/// a model whose only pending execution is an earlier frame's. Correct: the unload waits
/// for the frame and runs once the pipeline proves it done; nothing left, nothing
/// reported (but the planned panic), no finding.
#[test]
fn t02_model_dropped_inside_the_kernel_closure() {
    if !in_child("t02_model_dropped_inside_the_kernel_closure") {
        return;
    }
    support::quiet_panics(&["rt23 planned panic"]);
    let path = model_file("closure", &sim_model(&[], Duration::from_millis(5)));
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        let baseline = session.sim.live_objects();
        for variant in 0..5 {
            for pipeline_end in 0..2 {
                let run = || -> Result<(), Error> {
                    let mut pipeline = device.create_pipeline::<f32, f32>(config())?;
                    let mut model = device.load_model(&path)?;
                    if variant >= 3 {
                        let slot = pipeline.next_slot()?;
                        slot.submit(|l| l.execute(&mut model))?;
                    }
                    let slot = pipeline.next_slot()?;
                    let submitted = slot.submit(move |l| {
                        let mut model = model;
                        match variant {
                            0 => {
                                l.execute(&mut model)?;
                                drop(model);
                                Err(Error::InvalidArgument("rt23 planned error"))
                            }
                            1 => {
                                l.execute(&mut model)?;
                                drop(model);
                                panic!("rt23 planned panic");
                            }
                            2 => {
                                l.execute(&mut model)?;
                                drop(model);
                                l.simulated_map(Duration::ZERO, infer)
                            }
                            3 => {
                                // Pending from the earlier frame only.
                                drop(model);
                                l.simulated_map(Duration::ZERO, infer)
                            }
                            _ => {
                                // The plain unload refuses (pending): the model goes to
                                // its Drop fallback, which defers.
                                let refused = model.unload();
                                assert!(
                                    matches!(refused, Err(Error::ModelInUse { .. })),
                                    "{refused:?}"
                                );
                                l.simulated_map(Duration::ZERO, infer)
                            }
                        }
                    });
                    let _ = submitted;
                    if pipeline_end == 0 {
                        pipeline.wait_all()?;
                        pipeline.destroy()
                    } else {
                        drop(pipeline);
                        Ok(())
                    }
                };
                let outcome = catch_unwind(AssertUnwindSafe(run));
                if variant != 1 {
                    assert!(
                        matches!(outcome, Ok(Ok(()))),
                        "variant {variant}/{pipeline_end}: {outcome:?}"
                    );
                }
                assert_eq!(
                    session.sim.live_objects(),
                    baseline,
                    "variant {variant}/{pipeline_end}: something was left alive"
                );
                let reported = errors.take();
                assert!(
                    reported.is_empty(),
                    "variant {variant}/{pipeline_end}: {reported:?}"
                );
            }
        }
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
    child_ok();
}

/// Attack 1c: the deferred unload fails (1, 2, 4 and 5 times in a row) when the pipeline
/// proves the last frame done (`wait_all`, `destroy`, `Drop`). Correct: each failure is
/// reported exactly once; up to three the model is unloaded in the end; from four it is
/// kept loaded, counted in its context (which refuses to be destroyed), and no rule is
/// broken (no MD7: never unloaded under its execution).
#[test]
fn t03_deferred_unload_that_fails() {
    if !in_child("t03_deferred_unload_that_fails") {
        return;
    }
    let path = model_file("deferred_fail", &sim_model(&[], Duration::from_millis(3)));
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let mut problems = Vec::new();
    for times in [1u32, 2, 4, 5] {
        for end in 0..3 {
            let ctx = device.create_context().unwrap();
            let base = session.sim.live_objects();
            {
                let mut pipeline = ctx.create_pipeline::<f32, f32>(config()).unwrap();
                let (work, weight) = ctx.model_memory_size(&path).unwrap();
                let source = ModelSource::file_with_memory(
                    &path,
                    ctx.alloc::<u8>(work, MallocPolicy::HugeFirst).unwrap(),
                    ctx.alloc::<u8>(weight, MallocPolicy::HugeFirst).unwrap(),
                );
                let mut model = ctx.load_model(source).unwrap();
                for _ in 0..2 {
                    let slot = pipeline.next_slot().unwrap();
                    slot.submit(|l| l.execute(&mut model)).unwrap();
                }
                drop(model);
                session.sim.reset_call_counts();
                session.sim.inject_fault("aclmdlUnload", CODE, times);
                match end {
                    0 => {
                        pipeline.wait_all().unwrap();
                        pipeline.destroy().unwrap();
                    }
                    1 => pipeline.destroy().unwrap(),
                    _ => drop(pipeline),
                }
                session.sim.clear_faults();
            }
            let calls = session.sim.call_count("aclmdlUnload") as u32;
            let failures = calls.min(times);
            let reported = errors.take();
            let unload_reports = reported
                .iter()
                .filter(|r| r.contains("aclmdlUnload"))
                .count() as u32;
            if unload_reports != failures {
                problems.push(format!(
                    "{times} faults, end {end}: {failures} failures, {unload_reports} reported: {reported:?}"
                ));
            }
            let live = session.sim.live_objects();
            match ctx.try_destroy() {
                Ok(()) => {
                    if times >= 4 {
                        problems.push(format!(
                            "{times} faults, end {end}: the context was destroyed over a model kept loaded"
                        ));
                    }
                    if live > base {
                        problems.push(format!("{times}/{end}: live {live} > base {base}"));
                    }
                }
                Err(failed) => {
                    if times < 4 {
                        problems.push(format!(
                            "{times} faults, end {end}: kept although an unload succeeded: {}",
                            failed.error
                        ));
                    }
                    std::mem::forget(failed.value);
                }
            }
            let findings = session.sim.findings();
            session.sim.clear_findings();
            if !rule_findings(&findings).is_empty() {
                problems.push(format!("{times}/{end}: {findings:?}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

/// Attack 1d: two pipelines run the same model alternately (one proves its frames done,
/// then the other runs it), then the model is dropped while the second one's frames are
/// pending, and the pipelines go in either order. Also a dynamic-batch model whose batch
/// setting fails after the execution was counted. Correct: the model is unloaded once,
/// when its last execution is proven done; nothing left; no report; no finding.
#[test]
fn t04_two_pipelines_alternate_then_model_dropped_pending() {
    if !in_child("t04_two_pipelines_alternate_then_model_dropped_pending") {
        return;
    }
    let path = model_file("alternate", &sim_model(&[], Duration::from_millis(2)));
    let dynamic = model_file(
        "alternate_dyn",
        &sim_model(&[1, 2], Duration::from_millis(2)),
    );
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        let baseline = session.sim.live_objects();
        for order in 0..2 {
            let mut p1 = device.create_pipeline::<f32, f32>(config()).unwrap();
            let mut p2 = device.create_pipeline::<f32, f32>(config()).unwrap();
            let mut model = device.load_model(&path).unwrap();
            for round in 0..3 {
                let p = if round % 2 == 0 { &mut p1 } else { &mut p2 };
                for _ in 0..2 {
                    let slot = p.next_slot().unwrap();
                    slot.submit(|l| l.execute(&mut model)).unwrap();
                }
                if round < 2 {
                    p.wait_all().unwrap();
                }
            }
            assert_eq!(model.pending(), 2);
            drop(model);
            if order == 0 {
                drop(p2);
                drop(p1);
            } else {
                p2.destroy().unwrap();
                drop(p1);
            }
            assert_eq!(session.sim.live_objects(), baseline, "order {order}");
        }
        // Dynamic: the batch setting fails once the execution is counted.
        let mut pipeline = device.create_pipeline::<f32, f32>(config()).unwrap();
        let mut model = device.load_dynamic_model(&dynamic).unwrap();
        let slot = pipeline.next_slot().unwrap();
        slot.submit(|l| l.execute_batch(&mut model, 1)).unwrap();
        session
            .sim
            .inject_fault("aclmdlSetDynamicBatchSize", CODE, 1);
        let slot = pipeline.next_slot().unwrap();
        let failed = slot.submit(|l| l.execute_batch(&mut model, 2));
        session.sim.clear_faults();
        assert!(matches!(failed, Err(Error::Runtime { .. })), "{failed:?}");
        assert_eq!(model.pending(), 2);
        drop(model);
        drop(pipeline);
        assert_eq!(session.sim.live_objects(), baseline, "dynamic");
    }
    let reported = errors.take();
    assert!(reported.is_empty(), "{reported:?}");
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
    child_ok();
}

/// Attack 1e: a model dropped inside a host function (a runtime thread, C8) while a
/// pipeline's frames are pending, with `'static` handles (`Acl::shared`). Correct: the
/// drop defers without calling the runtime; the unload runs when the pipeline proves the
/// frames done, on the host thread; no report, no finding, nothing left.
#[test]
fn t05_model_dropped_inside_a_host_function_while_pending() {
    if !in_child("t05_model_dropped_inside_a_host_function_while_pending") {
        return;
    }
    let path = model_file("host_fn", &sim_model(&[], Duration::from_millis(20)));
    let errors = DropErrors::capture();
    let acl: &'static Acl =
        Acl::shared_with(&InitOptions::default().library(support::simulator_path())).unwrap();
    let sim = acl.simulator().expect("the simulator");
    sim.clear_findings();
    let device = Box::leak(Box::new(
        acl.set_device(0).unwrap().into_default_context().unwrap(),
    ));
    let ctx: &'static ascend_typestate::Context<'static> = device;
    let baseline = sim.live_objects();
    {
        let mut pipeline = ctx.create_pipeline::<f32, f32>(config()).unwrap();
        let mut model: Model<'static, Static> = ctx.load_model(&path).unwrap();
        for _ in 0..2 {
            let slot = pipeline.next_slot().unwrap();
            slot.submit(|l| l.execute(&mut model)).unwrap();
        }
        let host = ctx.create_stream().unwrap().with_host_functions();
        let (tx, rx) = std::sync::mpsc::channel();
        host.launch(move || {
            drop(model);
            let _ = tx.send(());
        })
        .unwrap();
        host.synchronize().unwrap();
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the host function ran");
        assert!(host.take_panics().is_empty());
        host.destroy().unwrap();
        pipeline.wait_all().unwrap();
        pipeline.destroy().unwrap();
    }
    assert_eq!(sim.live_objects(), baseline, "the model was unloaded");
    let reported = errors.take();
    assert!(reported.is_empty(), "{reported:?}");
    let findings = sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    child_ok();
}

// ---- 2. Model objects counted in their context ---------------------------------------

/// Attack 2a (BUG): a `ModelIo` dropped on another thread (it is `Send`) while one
/// `aclrtSetCurrentContext` fails. Every other handle's `Drop` tries its clean-up again
/// while the runtime fails (`release_on_drop`, four tries); `ModelIo::drop` binds once and,
/// on failure, leaks its two datasets and data buffers for good (counted, so the context
/// can never be destroyed). Correct: one transient failure is reported once and the
/// datasets are destroyed on the next try.
#[test]
fn t06_modelio_dropped_on_another_thread_with_one_bind_failure() {
    if !in_child("t06_modelio_dropped_on_another_thread_with_one_bind_failure") {
        return;
    }
    let path = model_file("io_bind", &sim_model(&[], Duration::ZERO));
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let model = ctx.load_model(&path).unwrap();
    let before_io = session.sim.live_objects();
    let io = model.create_io(MallocPolicy::HugeFirst).unwrap();
    session.sim.inject_fault("aclrtSetCurrentContext", CODE, 1);
    std::thread::scope(|s| {
        s.spawn(move || drop(io));
    });
    session.sim.clear_faults();
    let reported = errors.take();
    let left = session.sim.live_objects() - before_io;
    model.unload().unwrap();
    let destroyed = ctx.try_destroy();
    let kept = match destroyed {
        Ok(()) => None,
        Err(failed) => {
            let e = failed.error.to_string();
            std::mem::forget(failed.value);
            Some(e)
        }
    };
    assert!(
        left == 0 && kept.is_none() && reported.len() == 1,
        "one transient aclrtSetCurrentContext failure: {left} model objects left alive, \
         context destroy: {kept:?}, reports: {reported:?}"
    );
    child_ok();
}

// ---- 3. Pipeline resets (E4, E9, E10) under 1, 2, 4, 5 faults in a row ------------------

/// The calls a pipeline makes on its error paths.
const PIPELINE_CALLS: &[&str] = &[
    "aclrtRecordEvent",
    "aclrtStreamWaitEvent",
    "aclrtResetEvent",
    "aclrtMemcpyAsync",
    "aclrtSynchronizeEvent",
    "aclrtSynchronizeStream",
    "aclrtDestroyEvent",
    "aclrtDestroyStream",
    "aclmdlExecuteAsync",
    "aclmdlDestroyDataset",
    "aclDestroyDataBuffer",
    "aclmdlUnload",
    "aclrtSetCurrentContext",
];

/// Attack 3: every error path of `Slot::submit`, `next_slot`, `wait_all`, `destroy` and
/// `Drop`, with 1, 2, 4 and 5 failures in a row of each call the pipeline makes, starting
/// at several points of a loop that alternates a model execution and a simulated kernel
/// (the model dropped while pending in half the cases). Correct: no E*/M*/MD* finding
/// ever; every failure returned or reported exactly once; anything left alive is
/// reported and keeps its context.
#[test]
fn t07_pipeline_error_paths_under_fault_runs() {
    if !in_child("t07_pipeline_error_paths_under_fault_runs") {
        return;
    }
    let path = model_file(
        "pipeline_faults",
        &sim_model(&[], Duration::from_micros(200)),
    );
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let mut problems = Vec::new();
    let mut hit = 0;
    let mut kept = 0;
    for call in PIPELINE_CALLS {
        for times in [1u32, 2, 4, 5] {
            for skip in [0u32, 1, 3, 6] {
                for end in 0..2 {
                    let ctx = device.create_context().unwrap();
                    session.sim.clear_findings();
                    let mut returned: Vec<String> = Vec::new();
                    {
                        let mut pipeline = ctx.create_pipeline::<f32, f32>(config()).unwrap();
                        let mut model = ctx.load_model(&path).unwrap();
                        session.sim.reset_call_counts();
                        session.sim.inject_fault_at(call, CODE, skip, times);
                        let mut frames = 0;
                        for attempt in 0..12 {
                            if frames == 5 {
                                break;
                            }
                            let step = pipeline.next_slot().and_then(|slot| {
                                if attempt % 2 == 0 {
                                    slot.submit(|l| l.execute(&mut model))
                                } else {
                                    slot.submit(|l| l.simulated_map(Duration::ZERO, infer))
                                }
                            });
                            match step {
                                Ok(_) => frames += 1,
                                Err(e) => returned.push(e.to_string()),
                            }
                        }
                        for _ in 0..3 {
                            match pipeline.wait_all() {
                                Ok(()) => break,
                                Err(e) => returned.push(e.to_string()),
                            }
                        }
                        if end == 0 {
                            // Drop order: model first (deferred if pending).
                            drop(model);
                            if let Err(e) = pipeline.destroy() {
                                returned.push(e.to_string());
                            }
                        } else {
                            drop(pipeline);
                            if let Err(e) = model.unload() {
                                returned.push(e.to_string());
                            }
                        }
                    }
                    let calls = session.sim.call_count(call) as u32;
                    session.sim.clear_faults();
                    let failures = calls.saturating_sub(skip).min(times);
                    hit += failures;
                    let reported = errors.take();
                    let named = |v: &[String]| v.iter().filter(|r| r.contains(call)).count();
                    let seen = (named(&returned) + named(&reported)) as u32;
                    let case = format!("{call} x{times} from #{skip}, end {end}");
                    if seen != failures {
                        problems.push(format!(
                            "{case}: {failures} failures, {seen} returned or reported: \
                             returned {returned:?}, reported {reported:?}"
                        ));
                    }
                    let findings = session.sim.findings();
                    let bad = rule_findings(&findings);
                    if !bad.is_empty() {
                        problems.push(format!("{case}: findings {bad:?}"));
                    }
                    match ctx.try_destroy() {
                        Ok(()) => {}
                        Err(failed) => {
                            kept += 1;
                            if reported.is_empty() && returned.is_empty() {
                                problems.push(format!(
                                    "{case}: kept ({}) with nothing returned or reported",
                                    failed.error
                                ));
                            }
                            if times < 4 {
                                problems.push(format!(
                                    "{case}: {} although fewer than four failures in a row",
                                    failed.error
                                ));
                            }
                            std::mem::forget(failed.value);
                        }
                    }
                }
            }
        }
    }
    println!("t07: {hit} failures injected and hit, {kept} contexts kept");
    assert!(hit > 200, "the faults were hit ({hit})");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

// ---- 4, 5. Plain forms and retry_cleanup: every failure exactly once ------------------

/// Attack 4/5: the plain form of each give-back method, with 1 to 5 failures in a row of
/// each runtime call it makes. Correct: every failed call is returned or reported exactly
/// once (no loss, no double report), and no rule is broken.
#[test]
fn t08_plain_forms_report_every_failure_exactly_once() {
    if !in_child("t08_plain_forms_report_every_failure_exactly_once") {
        return;
    }
    let path = model_file("plain", &sim_model(&[], Duration::ZERO));
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let mut problems = Vec::new();
    type Op = fn(&ascend_typestate::Context<'_>, &std::path::Path) -> Result<(), Error>;
    let ops: &[(&str, &[&str], Op)] = &[
        (
            "Stream::destroy",
            &["aclrtSynchronizeStream", "aclrtDestroyStream"],
            |ctx, _| ctx.create_stream()?.destroy(),
        ),
        (
            "Event<Recorded>::destroy",
            &["aclrtSynchronizeEvent", "aclrtDestroyEvent"],
            |ctx, _| {
                let s = ctx.create_stream()?;
                ctx.create_event()?.record(&s)?.destroy()
            },
        ),
        (
            "Event::wait_and_reset then destroy",
            &["aclrtStreamWaitEvent", "aclrtDestroyEvent"],
            |ctx, _| {
                let (a, b) = (ctx.create_stream()?, ctx.create_stream()?);
                ctx.create_event()?
                    .record(&a)?
                    .wait_and_reset(&b)?
                    .destroy()
            },
        ),
        (
            "Event::reset_completed",
            &["aclrtQueryEventStatus", "aclrtResetEvent"],
            |ctx, _| {
                let s = ctx.create_stream()?;
                let e = ctx.create_event()?.record(&s)?;
                e.synchronize()?;
                e.reset_completed(&s)?.destroy()
            },
        ),
        (
            "DeviceBuffer::free / HostBuffer::free",
            &["aclrtFree", "aclrtFreeHost"],
            |ctx, _| {
                ctx.alloc::<u8>(64, MallocPolicy::HugeFirst)?.free()?;
                ctx.alloc_host::<u8>(64)?.free()
            },
        ),
        (
            "Model::unload / ModelIo drop",
            &[
                "aclmdlUnload",
                "aclmdlDestroyDesc",
                "aclmdlDestroyDataset",
                "aclDestroyDataBuffer",
            ],
            |ctx, path| {
                let model = ctx.load_model(path)?;
                drop(model.create_io(MallocPolicy::HugeFirst)?);
                model.unload()
            },
        ),
        (
            "HostFnStream::destroy",
            &["aclrtSynchronizeStream", "aclrtDestroyStream"],
            |ctx, _| {
                let s = ctx.create_stream()?.with_host_functions();
                s.launch(|| {})?;
                s.destroy()
            },
        ),
    ];
    let mut hit = 0;
    for (name, calls, op) in ops {
        for call in *calls {
            for times in 1u32..=5 {
                let ctx = device.create_context().unwrap();
                session.sim.clear_findings();
                session.sim.reset_call_counts();
                session.sim.inject_fault(call, CODE, times);
                let returned = op(&ctx, &path).err().map(|e| e.to_string());
                let made = session.sim.call_count(call) as u32;
                session.sim.clear_faults();
                let failures = made.min(times);
                hit += failures;
                let reported = errors.take();
                let seen = reported.iter().filter(|r| r.contains(call)).count()
                    + usize::from(returned.as_deref().is_some_and(|r| r.contains(call)));
                let case = format!("{name}, {call} x{times}");
                if seen as u32 != failures {
                    problems.push(format!(
                        "{case}: {failures} failures, {seen} returned or reported: \
                         returned {returned:?}, reported {reported:?}"
                    ));
                }
                let findings = session.sim.findings();
                if !rule_findings(&findings).is_empty() {
                    problems.push(format!("{case}: findings {findings:?}"));
                }
                match ctx.try_destroy() {
                    Ok(()) => {}
                    Err(failed) => {
                        if times < 4 {
                            problems.push(format!("{case}: context kept: {}", failed.error));
                        }
                        std::mem::forget(failed.value);
                    }
                }
            }
        }
    }
    assert!(hit > 60, "the faults were hit ({hit})");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

/// Attack 5b (BUG, reporting): a refusal is final (LiveChildren here: a child was leaked).
/// The plain `Context::destroy` / `Device::reset` return it, then the handle's `Drop`
/// fallback runs the same refused release again and reports the same refusal: one failure,
/// returned and reported. (`Model::unload`, refused with ModelInUse, gets this right: its
/// fallback defers silently.) Correct: a final refusal reaches the caller once.
#[test]
fn t09_plain_destroy_of_a_refused_release_reports_it_twice() {
    if !in_child("t09_plain_destroy_of_a_refused_release_reports_it_twice") {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let mut problems = Vec::new();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    std::mem::forget(ctx.create_stream().unwrap());
    let returned = ctx.destroy();
    assert!(
        matches!(returned, Err(Error::LiveChildren { count: 1 })),
        "{returned:?}"
    );
    let reported = errors.take();
    if !reported.is_empty() {
        problems.push(format!(
            "Context::destroy returned {returned:?} and reported {reported:?}"
        ));
    }
    let other = session.acl().set_device(1).unwrap();
    std::mem::forget(other.create_context().unwrap());
    let returned = other.reset().map(drop);
    assert!(
        matches!(returned, Err(Error::LiveChildren { count: 1 })),
        "{returned:?}"
    );
    let reported = errors.take();
    if !reported.is_empty() {
        problems.push(format!(
            "Device::reset returned {returned:?} and reported {reported:?}"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

/// Attack 1f (BUG, leak): the pipeline's release saw both streams done (so every model
/// execution is proven done), then its events' resets are issued and the synchronisation
/// that waits for them fails four times. `release` returns early and leaks *everything*,
/// the slots' datasets included, so the model dropped while pending is never unloaded
/// (it and its memory stay, and keep the context) although its executions were proven
/// done before the failure. Correct: the executions proven done end the model's pending
/// count (its deferred unload runs); only what the unconfirmed resets touch (the events)
/// must be kept.
#[test]
fn t12_deferred_model_leaked_when_only_the_reset_settle_fails() {
    if !in_child("t12_deferred_model_leaked_when_only_the_reset_settle_fails") {
        return;
    }
    let path = model_file("reset_settle", &sim_model(&[], Duration::from_millis(2)));
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let model_calls;
    let returned;
    {
        let mut pipeline = ctx.create_pipeline::<f32, f32>(config()).unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let slot = pipeline.next_slot().unwrap();
        slot.submit(|l| l.execute(&mut model)).unwrap();
        // Frame 1: its wait cannot be issued, so `ready` stays recorded (set) and the slot
        // unsettled: the release will have to reset it.
        session.sim.inject_fault("aclrtStreamWaitEvent", CODE, 1);
        let slot = pipeline.next_slot().unwrap();
        let failed = slot.submit(|l| l.simulated_map(Duration::ZERO, infer));
        assert!(matches!(failed, Err(Error::Runtime { .. })), "{failed:?}");
        session.sim.clear_faults();
        drop(model);
        session.sim.reset_call_counts();
        // The two settles of the streams pass; the four tries of the reset's settle fail.
        session
            .sim
            .inject_fault_at("aclrtSynchronizeStream", CODE, 2, 4);
        returned = pipeline.destroy();
        session.sim.clear_faults();
        model_calls = session.sim.call_count("aclmdlUnload");
    }
    let _ = errors.take();
    assert!(returned.is_err(), "the fault was hit: {returned:?}");
    assert_eq!(
        model_calls, 1,
        "the model's executions were proven done (both streams synchronised) before the \
         failure, yet it was never unloaded: returned {returned:?}"
    );
    child_ok();
}

/// Attack 3b/4b (BUG, E4): the wait scope's reset fails three times in a row (fewer than
/// `CLEANUP_TRIES`), through `wait_and_reset` / `try_wait_and_reset` and `wait` whose body
/// returns an error. After its own three tries the scope *destroys* the event, which was
/// waited on and never reset: the checker reports E4, the rule the crate exists to make
/// impossible. The pipeline, for the same situation, keeps trying (four tries) and then
/// leaks the event rather than destroy it unreset. Correct: no E4 finding, whatever the
/// number of failures (kept and counted after the last try, like a pipeline's event), and
/// every failure returned or reported exactly once.
#[test]
fn t10_wait_scope_destroys_a_waited_event_unreset_after_three_failed_resets() {
    if !in_child("t10_wait_scope_destroys_a_waited_event_unreset_after_three_failed_resets") {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let mut problems = Vec::new();
    type Op = fn(&ascend_typestate::Context<'_>) -> Result<(), Error>;
    let ops: &[(&str, Op)] = &[
        ("plain wait_and_reset", |ctx| {
            let (a, b) = (ctx.create_stream()?, ctx.create_stream()?);
            ctx.create_event()?
                .record(&a)?
                .wait_and_reset(&b)?
                .destroy()
        }),
        ("try_wait_and_reset", |ctx| {
            let (a, b) = (ctx.create_stream()?, ctx.create_stream()?);
            let e = ctx.create_event()?.record(&a)?;
            match e.try_wait_and_reset(&b) {
                Ok(e) => e.destroy(),
                Err(ascend_typestate::WaitError::Reset(f)) => {
                    let (error, e) = f.into_parts();
                    e.destroy()?;
                    Err(error)
                }
                Err(other) => Err(other.into()),
            }
        }),
        ("plain wait, body error", |ctx| {
            let (a, b) = (ctx.create_stream()?, ctx.create_stream()?);
            let e = ctx.create_event()?.record(&a)?;
            e.wait(&b, |_w| Err(Error::InvalidArgument("rt23 body error")))
                .map(drop)
        }),
    ];
    for (name, op) in ops {
        for times in 1u32..=5 {
            let ctx = device.create_context().unwrap();
            session.sim.clear_findings();
            session.sim.reset_call_counts();
            session.sim.inject_fault("aclrtResetEvent", CODE, times);
            let returned = op(&ctx).err().map(|e| e.to_string());
            let made = session.sim.call_count("aclrtResetEvent") as u32;
            session.sim.clear_faults();
            ctx.synchronize_device().unwrap();
            let failures = made.min(times);
            let reported = errors.take();
            let seen = reported
                .iter()
                .filter(|r| r.contains("aclrtResetEvent"))
                .count()
                + usize::from(
                    returned
                        .as_deref()
                        .is_some_and(|r| r.contains("aclrtResetEvent")),
                );
            let case = format!("{name}, aclrtResetEvent x{times}");
            if seen as u32 != failures {
                problems.push(format!(
                    "{case}: {failures} failures, {seen} returned or reported: \
                     returned {returned:?}, reported {reported:?}"
                ));
            }
            let findings = session.sim.findings();
            if !findings.is_empty() {
                problems.push(format!("{case}: {findings:?}"));
            }
            match ctx.try_destroy() {
                Ok(()) => {}
                Err(failed) => std::mem::forget(failed.value),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

/// Attack 3c (BUG, E4): the crate's own join events (an event recorded again on another
/// stream than the one that reset it, E5). The join's reset fails three times (twice, then
/// once more after its stream is synchronised): the join is put on the context's list and
/// destroyed by the next synchronisation, waited on and never reset: E4. Correct: no E4
/// finding (a join that could not be reset is kept, as a pipeline keeps its event), every
/// failure reported or returned once.
#[test]
fn t11_join_event_destroyed_unreset_after_three_failed_resets() {
    if !in_child("t11_join_event_destroyed_unreset_after_three_failed_resets") {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let mut problems = Vec::new();
    for times in 1u32..=5 {
        let ctx = device.create_context().unwrap();
        session.sim.clear_findings();
        let returned;
        let made;
        {
            let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            let event = ctx.create_event().unwrap().record(&s1).unwrap();
            // Waited and reset by s2: the next record on s1 is joined after that reset.
            let event = event.wait_and_reset(&s2).unwrap();
            session.sim.reset_call_counts();
            session.sim.inject_fault("aclrtResetEvent", CODE, times);
            returned = event.record(&s1).err().map(|e| e.to_string());
            made = session.sim.call_count("aclrtResetEvent") as u32;
            session.sim.clear_faults();
            s1.synchronize().unwrap();
            s2.synchronize().unwrap();
            s1.destroy().unwrap();
            s2.destroy().unwrap();
        }
        ctx.synchronize_device().unwrap();
        let failures = made.min(times);
        let reported = errors.take();
        let seen = reported
            .iter()
            .filter(|r| r.contains("aclrtResetEvent"))
            .count()
            + usize::from(
                returned
                    .as_deref()
                    .is_some_and(|r| r.contains("aclrtResetEvent")),
            );
        if seen as u32 != failures {
            problems.push(format!(
                "x{times}: {failures} failures, {seen} returned or reported: \
                 returned {returned:?}, reported {reported:?}"
            ));
        }
        let destroyed = ctx.try_destroy();
        let findings = session.sim.findings();
        if !findings.is_empty() {
            problems.push(format!("x{times}: {findings:?}"));
        }
        if let Err(failed) = destroyed {
            std::mem::forget(failed.value);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

/// Attack 4c (liveness): `destroy_force` exists for streams that must not be waited for
/// (S8: "error paths that must not hang on a stuck stream"). Its try form gives the stream
/// back on failure; its plain form must not hand it to `Drop`, whose fallback is the
/// *waiting* release (synchronise, then destroy): after one failed
/// `aclrtDestroyStreamForce` it forces again. Checked by the calls made, not by time: the
/// simulator's forced destroy itself waits for a kernel already running (it cannot stop a
/// CPU thread mid-task), so how long the call takes depends on whether the kernel (200 ms
/// here) had started, which is scheduling, not the crate's choice.
#[test]
fn t13_plain_destroy_force_falls_back_to_a_waiting_destroy() {
    if !in_child("t13_plain_destroy_force_falls_back_to_a_waiting_destroy") {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let mut problems = Vec::new();
    for host_functions in [false, true] {
        let stream = ctx.create_stream().unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 200_000);
        session.sim.reset_call_counts();
        session.sim.inject_fault("aclrtDestroyStreamForce", CODE, 1);
        let returned = if host_functions {
            stream.with_host_functions().destroy_force()
        } else {
            stream.destroy_force()
        };
        session.sim.clear_faults();
        let calls: Vec<u64> = [
            "aclrtDestroyStreamForce",
            "aclrtSynchronizeStream",
            "aclrtDestroyStream",
        ]
        .iter()
        .map(|call| session.sim.call_count(call))
        .collect();
        if calls != [2, 0, 0] {
            problems.push(format!(
                "host functions {host_functions}: calls (force, synchronize, destroy) {calls:?}, \
                 want [2, 0, 0]: the fallback must force again, never wait (returned {returned:?})"
            ));
        }
        if !matches!(returned, Err(ascend_typestate::Error::Runtime { .. })) {
            problems.push(format!(
                "host functions {host_functions}: the first failure is returned, not {returned:?}"
            ));
        }
    }
    let _ = errors.take();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

/// The model a simulated kernel's function drops (t14).
static KERNEL_MODEL: std::sync::Mutex<Option<Model<'static, Static>>> = std::sync::Mutex::new(None);

/// A simulated kernel's function that drops the model kept in `KERNEL_MODEL`, on the
/// simulator's thread (C8), the first time it runs.
fn dropping_kernel(x: f32) -> f32 {
    if let Ok(mut kept) = KERNEL_MODEL.try_lock() {
        drop(kept.take());
    }
    x
}

/// Attack 1g: a model dropped inside a simulated kernel (a runtime thread, C8) of the very
/// pipeline whose earlier frame executed it, before that frame is proven done. Correct: the
/// drop defers without calling the runtime; `wait_all` then unloads it; nothing left, no
/// report, no finding.
#[test]
fn t14_model_dropped_inside_a_simulated_kernel_while_pending() {
    if !in_child("t14_model_dropped_inside_a_simulated_kernel_while_pending") {
        return;
    }
    let path = model_file("kernel_drop", &sim_model(&[], Duration::from_millis(5)));
    let errors = DropErrors::capture();
    let acl: &'static Acl =
        Acl::shared_with(&InitOptions::default().library(support::simulator_path())).unwrap();
    let sim = acl.simulator().expect("the simulator");
    sim.clear_findings();
    let device = Box::leak(Box::new(
        acl.set_device(0).unwrap().into_default_context().unwrap(),
    ));
    let ctx: &'static ascend_typestate::Context<'static> = device;
    let baseline = sim.live_objects();
    {
        let mut pipeline = ctx.create_pipeline::<f32, f32>(config()).unwrap();
        let mut model: Model<'static, Static> = ctx.load_model(&path).unwrap();
        let slot = pipeline.next_slot().unwrap();
        slot.submit(|l| l.execute(&mut model)).unwrap();
        *KERNEL_MODEL.lock().unwrap() = Some(model);
        let slot = pipeline.next_slot().unwrap();
        slot.submit(|l| l.simulated_map(Duration::ZERO, dropping_kernel))
            .unwrap();
        let start = Instant::now();
        while KERNEL_MODEL.lock().unwrap().is_some() {
            assert!(start.elapsed() < Duration::from_secs(5), "the kernel ran");
            std::thread::sleep(Duration::from_millis(1));
        }
        pipeline.wait_all().unwrap();
        pipeline.destroy().unwrap();
    }
    assert_eq!(sim.live_objects(), baseline, "the model was unloaded");
    let reported = errors.take();
    assert!(reported.is_empty(), "{reported:?}");
    let findings = sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    child_ok();
}
