//! Attacks on the model's clean-up (deferred model release, counted model objects, pipeline
//! resets, plain/try forms, `retry_cleanup`), written with safe code only.
//!
//! Every test runs in a child process of its own (`support::child`): an attack that makes
//! the library leak must not leave the process-wide runtime initialised for the next test.
//! Each test asserts the *correct* behaviour: a failing test is a library bug (see the
//! comment above it).
//!
//! This module: model objects counted in their context; pipeline resets (E4, E9, E10) under
//! 1, 2, 4, 5 faults in a row.

use crate::support;

use std::time::Duration;

use ascend_typestate::MallocPolicy;
use support::DropErrors;
use support::sim::Session;

use super::deferred_common::{
    CODE, child_ok, config, in_child, infer, model_file, rule_findings, sim_model,
};

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
