//! Models executed asynchronously on a stream of the caller's choice (`AsyncScope::execute`,
//! MD6, MD8, M1): composed with copies and kernels on other streams (joined, E2/E3), types,
//! sizes and counts checked before any call (MD10, MD13), datasets kept for the same buffers
//! and rebuilt for others (MD5), refused beside a pipeline's pending executions (MD8), and
//! every test ends with zero checker findings and no live runtime object.

use crate::support;

use std::time::Duration;

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{DataType, Error, MallocPolicy, ModelTensor, PipelineConfig};
use support::sim::Session;

use super::common::{
    CLASSES, FEATURES, assert_close, classifier, ends_clean, expected, frame_input, model_file,
    weights,
};

fn doubled(x: f32) -> f32 {
    x * 2.0
}

#[test]
fn md6_a_model_runs_in_an_async_scope_between_copies() {
    let path = model_file("scoped_copies", &classifier(2, &[]));
    let session = Session::start();
    session.sim.reset_call_counts();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let mut input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut created = Vec::new();
        for n in 0..4 {
            let host = frame_input(n, 2);
            let mut scores = [f32::NAN; 2 * CLASSES];
            ctx.async_scope(|scope| {
                let input = scope.copy(&stream, &mut input, &host[..])?;
                let run =
                    scope.execute(&stream, &mut model, [input.into()], [(&mut output).into()])?;
                scope.copy(&stream, &mut scores[..], run.output::<f32>(0)?)?;
                Ok(())
            })
            .unwrap();
            assert_close(&scores, &expected(&host), "a scoped execution");
            created.push(session.sim.call_count("aclmdlCreateDataset"));
        }
        // Datasets built at the first execution and kept: the steady state creates nothing.
        assert_eq!(created, [2, 2, 2, 2], "datasets per execution");
        assert_eq!(session.sim.call_count("aclmdlExecuteAsync"), 4);
        model.unload().unwrap();
        assert_eq!(
            session.sim.call_count("aclmdlDestroyDataset"),
            2,
            "destroyed with the model"
        );
    }
    ends_clean(session);
}

#[test]
fn e2_a_model_fed_by_a_kernel_on_another_stream_reads_the_kernel_s_result() {
    let path = model_file("scoped_kernel", &classifier(2, &[]));
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (pre, infer) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut model = ctx.load_model(&path).unwrap();
        let mut raw = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut prepared = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        for n in 0..3 {
            let host = frame_input(n, 2);
            let mut scores = [f32::NAN; 2 * CLASSES];
            ctx.async_scope(|scope| {
                let up = scope.copy(&pre, &mut raw, &host[..])?;
                // A slow kernel: without the join, the model on the other stream would read
                // the previous frame's (or zeroed) input.
                let ready = scope.simulated_map(
                    &pre,
                    Duration::from_millis(30),
                    up,
                    &mut prepared,
                    doubled,
                )?;
                let run =
                    scope.execute(&infer, &mut model, [ready.into()], [(&mut output).into()])?;
                scope.copy(&infer, &mut scores[..], run.output::<f32>(0)?)?;
                Ok(())
            })
            .unwrap();
            let twice: Vec<f32> = host.iter().map(|x| x * 2.0).collect();
            assert_close(&scores, &expected(&twice), "after the kernel");
        }
        drop(model);
    }
    ends_clean(session);
}

#[test]
fn e2_a_model_s_output_read_on_another_stream_is_complete() {
    let slow = classifier(2, &[]).time_per_item(Duration::from_millis(15));
    let path = model_file("scoped_slow", &slow);
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (infer, down) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut model = ctx.load_model(&path).unwrap();
        let mut input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let host = frame_input(7, 2);
        let mut scores = [f32::NAN; 2 * CLASSES];
        ctx.async_scope(|scope| {
            let up = scope.copy(&infer, &mut input, &host[..])?;
            let run = scope.execute(&infer, &mut model, [up.into()], [(&mut output).into()])?;
            scope.copy(&down, &mut scores[..], run.output::<f32>(0)?)?;
            Ok(())
        })
        .unwrap();
        assert_close(&scores, &expected(&host), "downloaded on another stream");
        drop(model);
    }
    ends_clean(session);
}

#[test]
fn md11_a_dynamic_model_runs_each_gear_in_a_scope() {
    let path = model_file("scoped_dynamic", &classifier(4, &[1, 2, 4]));
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_dynamic_model(&path).unwrap();
        let mut input = ctx
            .alloc::<f32>(4 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(4 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        for batch in [4u64, 1, 2] {
            let host = frame_input(batch, 4);
            let mut scores = [f32::NAN; 4 * CLASSES];
            ctx.async_scope(|scope| {
                let up = scope.copy(&stream, &mut input, &host[..])?;
                let run = scope.execute_batch(
                    &stream,
                    &mut model,
                    batch,
                    [up.into()],
                    [(&mut output).into()],
                )?;
                scope.copy(&stream, &mut scores[..], run.output::<f32>(0)?)?;
                Ok(())
            })
            .unwrap();
            let rows = batch as usize;
            assert_close(
                &scores[..rows * CLASSES],
                &expected(&host[..rows * FEATURES]),
                "a gear",
            );
            assert_eq!(
                model.current_output_dims(0).unwrap(),
                [batch as i64, CLASSES as i64]
            );
        }
        let refused = ctx.async_scope(|scope| {
            scope.execute_batch(
                &stream,
                &mut model,
                3,
                [(&input).into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::NotAGear { batch: 3 })),
            "{refused:?}"
        );
        model.unload().unwrap();
    }
    ends_clean(session);
}

#[test]
fn md10_md13_types_sizes_and_counts_are_checked_before_any_call() {
    let argmax = SimModel::new(SimDtype::F32, &[2, FEATURES], SimDtype::I32, &[2])
        .matmul(FEATURES, CLASSES, &weights())
        .argmax(CLASSES);
    let path = model_file("scoped_checks", &argmax);
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let long_input = ctx
            .alloc::<f32>(2 * FEATURES + 1, MallocPolicy::HugeFirst)
            .unwrap();
        let int_input = ctx
            .alloc::<i32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut classes = ctx.alloc::<i32>(2, MallocPolicy::HugeFirst).unwrap();
        let mut floats = ctx.alloc::<f32>(2, MallocPolicy::HugeFirst).unwrap();
        session.sim.reset_call_counts();
        let outcome = |result: ascend_typestate::Result<()>| result.err();
        // An f32 buffer for the i32 output (MD13).
        let found = outcome(ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&input).into()],
                [(&mut floats).into()],
            )?;
            Ok(())
        }));
        assert!(
            matches!(
                found,
                Some(Error::ModelTypeMismatch {
                    tensor: ModelTensor::Output(0),
                    expected: DataType::Int32,
                    found: DataType::Float,
                })
            ),
            "{found:?}"
        );
        // An i32 buffer for the f32 input (MD13).
        let found = outcome(ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&int_input).into()],
                [(&mut classes).into()],
            )?;
            Ok(())
        }));
        assert!(
            matches!(
                found,
                Some(Error::ModelTypeMismatch {
                    tensor: ModelTensor::Input(0),
                    ..
                })
            ),
            "{found:?}"
        );
        // One element too many (MD10).
        let found = outcome(ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&long_input).into()],
                [(&mut classes).into()],
            )?;
            Ok(())
        }));
        assert!(
            matches!(
                found,
                Some(Error::ModelSizeMismatch {
                    expected: 64,
                    found: 68
                })
            ),
            "{found:?}"
        );
        // Two inputs for a one-input model, and no output.
        let found = outcome(ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&input).into(), (&input).into()],
                [(&mut classes).into()],
            )?;
            Ok(())
        }));
        assert!(
            matches!(
                found,
                Some(Error::ModelTensorCount {
                    what: "inputs",
                    expected: 1,
                    found: 2
                })
            ),
            "{found:?}"
        );
        let found = outcome(ctx.async_scope(|scope| {
            scope.execute::<1, 0>(&stream, &mut model, [(&input).into()], [])?;
            Ok(())
        }));
        assert!(
            matches!(
                found,
                Some(Error::ModelTensorCount {
                    what: "outputs",
                    expected: 1,
                    found: 0
                })
            ),
            "{found:?}"
        );
        for call in [
            "aclmdlExecuteAsync",
            "aclmdlCreateDataset",
            "aclCreateDataBuffer",
        ] {
            assert_eq!(
                session.sim.call_count(call),
                0,
                "{call} before the checks passed"
            );
        }
        // And the right types run.
        let host = frame_input(3, 2);
        let mut answer = [-1i32; 2];
        let mut staged = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        ctx.async_scope(|scope| {
            let up = scope.copy(&stream, &mut staged, &host[..])?;
            let run = scope.execute(&stream, &mut model, [up.into()], [(&mut classes).into()])?;
            // The output read as another type is refused too (MD13).
            assert!(matches!(
                run.output::<f32>(0),
                Err(Error::ModelTypeMismatch {
                    tensor: ModelTensor::Output(0),
                    ..
                })
            ));
            assert!(matches!(
                run.output::<i32>(1),
                Err(Error::InvalidArgument(_))
            ));
            scope.copy(&stream, &mut answer[..], run.output::<i32>(0)?)?;
            Ok(())
        })
        .unwrap();
        let want: Vec<i32> = expected_argmax(&host);
        assert_eq!(answer.to_vec(), want);
        drop(model);
    }
    ends_clean(session);
}

/// What the argmax model (no bias) answers.
fn expected_argmax(input: &[f32]) -> Vec<i32> {
    let w = weights();
    input
        .chunks(FEATURES)
        .map(|row| {
            let scores: Vec<f32> = (0..CLASSES)
                .map(|c| {
                    row.iter()
                        .enumerate()
                        .map(|(r, x)| x * w[r * CLASSES + c])
                        .sum()
                })
                .collect();
            let mut best = 0;
            for (i, s) in scores.iter().enumerate() {
                if *s > scores[best] {
                    best = i;
                }
            }
            best as i32
        })
        .collect()
}

#[test]
fn md5_other_buffers_rebuild_the_datasets_and_nothing_is_lost() {
    let path = model_file("scoped_rebuild", &classifier(2, &[]));
    let session = Session::start();
    session.sim.reset_call_counts();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let mut inputs = [
            ctx.alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
                .unwrap(),
            ctx.alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
                .unwrap(),
        ];
        let mut outputs = [
            ctx.alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
                .unwrap(),
            ctx.alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
                .unwrap(),
        ];
        let mut live = Vec::new();
        for n in 0..6u64 {
            let k = (n % 2) as usize;
            let host = frame_input(n, 2);
            let mut scores = [f32::NAN; 2 * CLASSES];
            let (input, output) = (&mut inputs[k], &mut outputs[k]);
            ctx.async_scope(|scope| {
                let up = scope.copy(&stream, input, &host[..])?;
                let run = scope.execute(&stream, &mut model, [up.into()], [output.into()])?;
                scope.copy(&stream, &mut scores[..], run.output::<f32>(0)?)?;
                Ok(())
            })
            .unwrap();
            assert_close(&scores, &expected(&host), "alternating buffers");
            live.push(session.sim.live_objects());
        }
        // One set of datasets at a time: the old one destroyed when the buffers change.
        assert!(live.windows(2).all(|w| w[0] == w[1]), "{live:?}");
        assert_eq!(session.sim.call_count("aclmdlCreateDataset"), 12);
        assert_eq!(session.sim.call_count("aclmdlDestroyDataset"), 10);
        drop(model);
        assert_eq!(session.sim.call_count("aclmdlDestroyDataset"), 12);
    }
    ends_clean(session);
}

#[test]
fn md8_a_model_pending_in_a_pipeline_is_refused_on_another_stream() {
    let path = model_file("scoped_pipeline", &classifier(2, &[]));
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let mut pipeline = ctx
            .create_pipeline::<f32, f32>(PipelineConfig::new(2 * FEATURES, 2 * CLASSES))
            .unwrap();
        let mut slot = pipeline.next_slot().unwrap();
        slot.input_mut().copy_from_slice(&frame_input(1, 2));
        slot.submit(|launch| launch.execute(&mut model)).unwrap();
        assert_eq!(model.pending(), 1);
        let input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let refused = ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&input).into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelInUse { pending: 1 })),
            "{refused:?}"
        );
        pipeline.wait_all().unwrap();
        ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&input).into()],
                [(&mut output).into()],
            )?;
            Ok(())
        })
        .unwrap();
        pipeline.destroy().unwrap();
        drop(model);
    }
    ends_clean(session);
}

#[test]
fn md1_a_model_of_another_context_is_refused() {
    let path = model_file("scoped_contexts", &classifier(2, &[]));
    let session = Session::start();
    {
        let device = session.default_device(0);
        let other = device.create_context().unwrap();
        let mut model = other.load_model(&path).unwrap();
        let stream = device.create_stream().unwrap();
        let input = device
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = device
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let refused = device.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&input).into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ContextMismatch { .. })),
            "{refused:?}"
        );
        drop(model);
        drop(other);
    }
    ends_clean(session);
}

#[test]
fn m1_a_panic_after_an_execution_synchronises_before_the_buffers_are_released() {
    let slow = classifier(2, &[]).time_per_item(Duration::from_millis(20));
    let path = model_file("scoped_panic", &slow);
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = ctx.async_scope(|scope| {
                scope.execute(
                    &stream,
                    &mut model,
                    [(&input).into()],
                    [(&mut output).into()],
                )?;
                panic!("the body panics with the execution pending");
                #[allow(unreachable_code)]
                Ok(())
            });
        }));
        assert!(caught.is_err());
        // The execution is done: freeing its buffers and unloading are plain successes.
        assert!(stream.is_complete().unwrap());
        output.free().unwrap();
        input.free().unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}

#[test]
fn md5_buffers_freed_before_the_model_leave_nothing_behind() {
    let path = model_file("scoped_freed", &classifier(2, &[]));
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        for n in 0..3u64 {
            // Fresh buffers each time, freed before the next execution and before the model:
            // the kept datasets only name addresses, never touched once the buffers are gone.
            let mut input = ctx
                .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
                .unwrap();
            let mut output = ctx
                .alloc::<f32>(2 * CLASSES, MallocPolicy::NormalOnly)
                .unwrap();
            let host = frame_input(n, 2);
            let mut scores = [f32::NAN; 2 * CLASSES];
            ctx.async_scope(|scope| {
                let up = scope.copy(&stream, &mut input, &host[..])?;
                let run =
                    scope.execute(&stream, &mut model, [up.into()], [(&mut output).into()])?;
                scope.copy(&stream, &mut scores[..], run.output::<f32>(0)?)?;
                Ok(())
            })
            .unwrap();
            assert_close(&scores, &expected(&host), "fresh buffers");
            output.free().unwrap();
            drop(input);
        }
        stream.destroy().unwrap();
        drop(model);
    }
    ends_clean(session);
}
