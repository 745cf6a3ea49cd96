//! Attacks on the model's clean-up (deferred model release, counted model objects, pipeline
//! resets, plain/try forms, `retry_cleanup`), written with safe code only.
//!
//! Every test runs in a child process of its own (`support::child`): an attack that makes
//! the library leak must not leave the process-wide runtime initialised for the next test.
//! Each test asserts the *correct* behaviour: a failing test is a library bug (see the
//! comment above it).
//!
//! This module: the deferred release: races, closures, faults, memory, two pipelines; a model
//! dropped inside a host function or a simulated kernel while pending.

use crate::support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use ascend_typestate::{Acl, Error, InitOptions, MallocPolicy, Model, ModelSource, Static};
use support::DropErrors;
use support::sim::Session;

use super::deferred_common::{
    CODE, child_ok, config, in_child, infer, model_file, rule_findings, sim_model,
};

/// A deterministic busy wait of `micros` µs, to move one thread's step across the other's.
fn spin(micros: u64) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_micros(micros) {
        std::hint::spin_loop();
    }
}

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
