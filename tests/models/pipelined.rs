//! Models executed in a pipeline: executions handed back are complete (MD6), pending ones keep
//! the model loaded (MD7) and on its stream (MD8), a model dropped while pending is unloaded
//! once its frames are done or stays loaded behind a forgotten pipeline, a pipeline refuses a
//! model of another context or shape (MD1, MD10), a dynamic model runs each frame's gear
//! (MD11), and a frame creates nothing. Every test ends with zero checker findings and no live
//! runtime object.

use crate::support;

use std::time::Duration;

use ascend_typestate::{Error, MallocPolicy, Model, PipelineConfig, Static};
use support::DropErrors;
use support::sim::Session;

use super::common::{
    CLASSES, FEATURES, assert_close, classifier, ends_clean, expected, frame_input, model_file,
};

/// Runs `frames` frames of `model` in `pipeline`, checking each output when its slot comes
/// round and after `wait_all`.
fn run_model_frames(
    pipeline: &mut ascend_typestate::Pipeline<'_, f32, f32>,
    model: &mut Model<'_, Static>,
    rows: usize,
    frames: u64,
) -> u64 {
    let mut checked = 0;
    for _ in 0..frames {
        let mut slot = pipeline.next_slot().unwrap();
        if let Some((n, output)) = slot.output() {
            assert_close(output, &expected(&frame_input(n, rows)), "frame");
            checked += 1;
        }
        let n = slot.frame();
        slot.input_mut().copy_from_slice(&frame_input(n, rows));
        slot.submit(|launch| launch.execute(model)).unwrap();
    }
    pipeline.wait_all().unwrap();
    for (n, output) in pipeline.outputs() {
        assert_close(output, &expected(&frame_input(n, rows)), "last frames");
        checked += 1;
    }
    checked
}

#[test]
fn md6_pipelined_executions_are_complete_when_handed_back() {
    let rows = 3;
    let path = model_file(
        "pipelined",
        &classifier(rows, &[]).time_per_item(Duration::from_micros(200)),
    );
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut model = device.load_model(&path).unwrap();
        for slots in [1, 2, 3] {
            let config = PipelineConfig::new(rows * FEATURES, rows * CLASSES).slots(slots);
            let mut pipeline = device.create_pipeline::<f32, f32>(config).unwrap();
            assert_eq!(run_model_frames(&mut pipeline, &mut model, rows, 30), 30);
            assert_eq!(model.pending(), 0);
            pipeline.destroy().unwrap();
        }
        model.unload().unwrap();
    }
    ends_clean(session);
}

#[test]
fn md7_md8_a_pending_execution_keeps_the_model_loaded_and_on_its_stream() {
    let rows = 2;
    let path = model_file(
        "pending",
        &classifier(rows, &[]).time_per_item(Duration::from_millis(20)),
    );
    let session = Session::start();
    {
        let device = session.default_device(0);
        let config = PipelineConfig::new(rows * FEATURES, rows * CLASSES);
        let mut model = device.load_model(&path).unwrap();
        let mut pipeline = device.create_pipeline::<f32, f32>(config).unwrap();
        let mut other = device.create_pipeline::<f32, f32>(config).unwrap();
        let slot = pipeline.next_slot().unwrap();
        slot.submit(|launch| launch.execute(&mut model)).unwrap();
        assert_eq!(model.pending(), 1);
        // MD7: no unload while pending; the model comes back, loaded.
        let failed = model.try_unload().unwrap_err();
        assert!(
            matches!(failed.error, Error::ModelInUse { pending: 1 }),
            "{:?}",
            failed.error
        );
        let mut model = failed.value;
        // MD8: not on another stream, not synchronously beside it.
        let err = other
            .next_slot()
            .unwrap()
            .submit(|launch| launch.execute(&mut model))
            .unwrap_err();
        assert!(matches!(err, Error::ModelInUse { pending: 1 }), "{err:?}");
        let mut io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        assert!(matches!(
            model.execute(&mut io),
            Err(Error::ModelInUse { pending: 1 })
        ));
        // One execution per frame.
        let err = pipeline
            .next_slot()
            .unwrap()
            .submit(|launch| {
                launch.execute(&mut model)?;
                launch.execute(&mut model)
            })
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        // Proven done: everything is allowed again.
        pipeline.wait_all().unwrap();
        other.wait_all().unwrap();
        assert_eq!(model.pending(), 0);
        model.execute(&mut io).unwrap();
        drop(io);
        pipeline.destroy().unwrap();
        other.destroy().unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// The natural drop order: a model declared after the pipeline that runs it drops
/// first, with its frame pending. Its unload waits for the pipeline to prove the frame done
/// (MD7), then runs: nothing leaks, nothing is reported, whichever order the two are declared
/// in, dropped at scope end, by `?`, or by a panic unwinding.
#[test]
fn md7_a_model_dropped_while_pending_is_unloaded_once_its_frames_are_done() {
    let rows = 2;
    let path = model_file(
        "dropped_pending",
        &classifier(rows, &[]).time_per_item(Duration::from_millis(5)),
    );
    let config = PipelineConfig::new(rows * FEATURES, rows * CLASSES);
    for order in ["pipeline first", "model first"] {
        for end in ["scope", "question mark", "panic"] {
            let session = Session::start();
            let errors = DropErrors::capture();
            {
                let device = session.default_device(0);
                let run = || -> Result<(), Error> {
                    let (mut pipeline, mut model);
                    if order == "pipeline first" {
                        pipeline = device.create_pipeline::<f32, f32>(config)?;
                        model = device.load_model(&path)?;
                    } else {
                        model = device.load_model(&path)?;
                        pipeline = device.create_pipeline::<f32, f32>(config)?;
                    }
                    for _ in 0..3 {
                        let slot = pipeline.next_slot()?;
                        slot.submit(|l| l.execute(&mut model))?;
                    }
                    assert!(model.pending() > 0);
                    match end {
                        "scope" => Ok(()),
                        "question mark" => Err(Error::InvalidArgument("stop here")),
                        _ => panic!("stop here"),
                    }
                };
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
                match (end, outcome) {
                    ("scope", Ok(Ok(()))) | ("question mark", Ok(Err(_))) | ("panic", Err(_)) => {}
                    (_, other) => panic!("{order}, {end}: {other:?}"),
                }
            }
            let reported = errors.take();
            assert!(reported.is_empty(), "{order}, {end}: {reported:?}");
            ends_clean(session);
        }
    }
}

/// The deferred unload when the pipeline settles on another thread than the one that
/// dropped the model.
#[test]
fn md7_a_deferred_unload_runs_on_the_thread_that_proves_the_frames_done() {
    let rows = 2;
    let path = model_file(
        "deferred_thread",
        &classifier(rows, &[]).time_per_item(Duration::from_millis(5)),
    );
    let config = PipelineConfig::new(rows * FEATURES, rows * CLASSES);
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        let mut pipeline = device.create_pipeline::<f32, f32>(config).unwrap();
        let mut model = device.load_model(&path).unwrap();
        for _ in 0..2 {
            let slot = pipeline.next_slot().unwrap();
            slot.submit(|l| l.execute(&mut model)).unwrap();
        }
        std::thread::scope(|s| {
            s.spawn(move || drop(model));
        });
        let live = session.sim.live_objects();
        std::thread::scope(|s| {
            s.spawn(|| pipeline.wait_all().unwrap());
        });
        assert!(session.sim.live_objects() < live, "the model was unloaded");
        pipeline.destroy().unwrap();
    }
    assert!(errors.take().is_empty());
    ends_clean(session);
}

/// A model dropped pending behind a forgotten pipeline stays loaded with it, never unloaded
/// under its execution (MD7); the leak keeps its context (D3). In a child process: the
/// runtime stays initialised.
#[test]
fn md7_d3_a_model_dropped_behind_a_forgotten_pipeline_stays_loaded() {
    if support::child::ran_in_child(
        "md7_d3_a_model_dropped_behind_a_forgotten_pipeline_stays_loaded",
        "ASCEND_TYPESTATE_MODEL_CHILD",
        "kept as expected",
    ) {
        return;
    }
    let rows = 2;
    let path = model_file(
        "dropped_forgotten",
        &classifier(rows, &[]).time_per_item(Duration::from_millis(10)),
    );
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let config = PipelineConfig::new(rows * FEATURES, rows * CLASSES);
    let mut pipeline = ctx.create_pipeline::<f32, f32>(config).unwrap();
    let mut model = ctx.load_model(&path).unwrap();
    pipeline
        .next_slot()
        .unwrap()
        .submit(|launch| launch.execute(&mut model))
        .unwrap();
    drop(model);
    std::mem::forget(pipeline);
    assert!(errors.take().is_empty());
    let failed = ctx.try_destroy().unwrap_err();
    assert!(
        matches!(failed.error, Error::LiveChildren { .. }),
        "{}",
        failed.error
    );
    // The execution completes on a loaded model: the simulator finds nothing.
    failed.value.synchronize_device().unwrap();
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    println!("kept as expected");
    std::process::exit(0);
}

#[test]
fn md1_md10_a_pipeline_refuses_a_model_of_another_context_or_shape() {
    let rows = 2;
    let path = model_file("checks", &classifier(rows, &[]));
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let other_ctx = device.create_context().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let config = PipelineConfig::new(rows * FEATURES, rows * CLASSES);
        let mut foreign = other_ctx.create_pipeline::<f32, f32>(config).unwrap();
        let err = foreign
            .next_slot()
            .unwrap()
            .submit(|launch| launch.execute(&mut model))
            .unwrap_err();
        assert!(matches!(err, Error::ContextMismatch { .. }), "{err:?}");
        let wrong = PipelineConfig::new(rows * FEATURES + 1, rows * CLASSES);
        let mut wrong = ctx.create_pipeline::<f32, f32>(wrong).unwrap();
        let err = wrong
            .next_slot()
            .unwrap()
            .submit(|launch| launch.execute(&mut model))
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::ModelSizeMismatch {
                    expected: 64,
                    found: 68
                }
            ),
            "{err:?}"
        );
        assert_eq!(model.pending(), 0);
        foreign.destroy().unwrap();
        wrong.destroy().unwrap();
        model.unload().unwrap();
        other_ctx.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

#[test]
fn md11_a_dynamic_model_in_a_pipeline_runs_the_gear_of_each_frame() {
    let path = model_file("dynamic_pipeline", &classifier(4, &[1, 2, 4]));
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut model = device.load_dynamic_model(&path).unwrap();
        let config = PipelineConfig::new(4 * FEATURES, 4 * CLASSES);
        let mut pipeline = device.create_pipeline::<f32, f32>(config).unwrap();
        let gear = |n: u64| [1u64, 2, 4][n as usize % 3];
        let check = |n: u64, output: &[f32]| {
            let rows = gear(n) as usize;
            let input = frame_input(n, 4);
            assert_close(
                &output[..rows * CLASSES],
                &expected(&input[..rows * FEATURES]),
                "gear",
            );
        };
        for _ in 0..12 {
            let mut slot = pipeline.next_slot().unwrap();
            if let Some((n, output)) = slot.output() {
                check(n, output);
            }
            let n = slot.frame();
            slot.input_mut().copy_from_slice(&frame_input(n, 4));
            slot.submit(|launch| launch.execute_batch(&mut model, gear(n)))
                .unwrap();
        }
        pipeline.wait_all().unwrap();
        for (n, output) in pipeline.outputs() {
            check(n, output);
        }
        let err = pipeline
            .next_slot()
            .unwrap()
            .submit(|launch| launch.execute_batch(&mut model, 3))
            .unwrap_err();
        assert!(matches!(err, Error::NotAGear { batch: 3 }), "{err:?}");
        pipeline.destroy().unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// The steady state of a pipelined model loop calls, per frame, exactly the raw loop's
/// functions: no dataset or buffer is created after the first frames (MD5 once).
#[test]
fn md_a_pipelined_model_frame_creates_nothing() {
    let rows = 2;
    let path = model_file("steady", &classifier(rows, &[]));
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut model = device.load_model(&path).unwrap();
        let config = PipelineConfig::new(rows * FEATURES, rows * CLASSES);
        let mut pipeline = device.create_pipeline::<f32, f32>(config).unwrap();
        run_model_frames(&mut pipeline, &mut model, rows, 4);
        session.sim.reset_call_counts();
        run_model_frames(&mut pipeline, &mut model, rows, 10);
        let sim = &session.sim;
        assert_eq!(sim.call_count("aclmdlExecuteAsync"), 10);
        for call in [
            "aclmdlCreateDataset",
            "aclCreateDataBuffer",
            "aclmdlDestroyDataset",
            "aclDestroyDataBuffer",
            "aclrtMalloc",
            "aclrtCreateEvent",
            "aclrtCreateEventWithFlag",
        ] {
            assert_eq!(sim.call_count(call), 0, "{call}");
        }
        pipeline.destroy().unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}
