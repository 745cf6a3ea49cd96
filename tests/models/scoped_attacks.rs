//! Attacks on the asynchronous model execution in async scopes (`AsyncScope::execute` /
//! `execute_batch`, `ModelInput` / `ModelOutput` / `Executed`), the model's kept scoped
//! datasets (`Model::scoped_datasets`, `release`, `defer_release`) and the pipeline's split
//! of a slot's buffers (`consecutive`, `SlotDatasets::create`).
//!
//! Attacks that held are kept as regression tests. Compile-time escapes were tried in a
//! scratch file (all refused by the borrow checker, so none is a test here; the existing
//! ui-tests `md7_*`, `md8_*`, `m1_model_output_read_*` cover the same ground):
//! returning `Executed` / a `PendingDevice` from the body; pushing one into a `Vec` declared
//! outside; `mem::forget(executed)` then dropping the output buffer; a `DeviceSlice` by value
//! as input, then dropping its buffer in the scope; `slice(0..8)` + `slice_mut(8..16)` of one
//! buffer as input and output; `&DeviceSliceMut` as input and the same slice as output;
//! destroying the stream or dropping the model after the execution in the scope; moving a
//! `ModelInput` or `Executed` into a scoped thread (`!Send`); an `&mut` access to an output
//! `DeviceSliceMut`'s buffer from a scoped thread; an inner scope's output smuggled to the
//! outer scope through an `Option` declared between them; `Box::leak(executed)` to get a
//! `PendingDevice<'static, _>`; a synchronous `ctx.copy` into a pending input.

use crate::support;

use std::time::Duration;

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{Error, F16, MallocPolicy, PipelineConfig};
use support::sim::Session;

use super::common::{
    CLASSES, FEATURES, assert_close, classifier, ends_clean, expected, frame_input, model_file,
};

/// One scoped execution of `model` over `input` -> `output`, uploading `host` first.
fn run_once(
    ctx: &ascend_typestate::Context<'_>,
    stream: &ascend_typestate::Stream<'_>,
    model: &mut ascend_typestate::Model<'_>,
    input: &mut ascend_typestate::DeviceBuffer<'_, f32>,
    output: &mut ascend_typestate::DeviceBuffer<'_, f32>,
    host: &[f32],
) -> ascend_typestate::Result<Vec<f32>> {
    let mut scores = vec![f32::NAN; output.len()];
    ctx.async_scope(|scope| {
        let up = scope.copy(stream, input, host)?;
        let run = scope.execute(stream, model, [up.into()], [output.into()])?;
        scope.copy(stream, &mut scores[..], run.output::<f32>(0)?)?;
        Ok(())
    })?;
    Ok(scores)
}

// ---------------------------------------------------------------------------------------
// 4. Bad input: pipeline slot sizes, element types.

#[test]
fn held_pipeline_slot_sizes_and_types_must_match_the_model() {
    let path = model_file("scoped_slot_sizes", &classifier(2, &[]));
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let mut model = ctx.load_model(&path).unwrap();
        for (ins, outs) in [
            (2 * FEATURES + 1, 2 * CLASSES),
            (2 * FEATURES, 2 * CLASSES - 1),
            (2 * FEATURES - 1, 2 * CLASSES + 1),
            (1, 1),
        ] {
            let mut pipeline = ctx
                .create_pipeline::<f32, f32>(PipelineConfig::new(ins, outs))
                .unwrap();
            let slot = pipeline.next_slot().unwrap();
            let refused = slot.submit(|launch| launch.execute(&mut model));
            assert!(
                matches!(refused, Err(Error::ModelSizeMismatch { .. })),
                "{ins}/{outs}: {refused:?}"
            );
            assert_eq!(model.pending(), 0);
            pipeline.destroy().unwrap();
        }
        // Same byte sizes, other element types (u32 for f32): refused (MD13).
        let mut pipeline = ctx
            .create_pipeline::<u32, f32>(PipelineConfig::new(2 * FEATURES, 2 * CLASSES))
            .unwrap();
        let slot = pipeline.next_slot().unwrap();
        let refused = slot.submit(|launch| launch.execute(&mut model));
        assert!(
            matches!(refused, Err(Error::ModelTypeMismatch { .. })),
            "{refused:?}"
        );
        pipeline.destroy().unwrap();
        // A byte-sized element type whose byte count matches: refused too.
        let mut pipeline = ctx
            .create_pipeline::<u8, u8>(PipelineConfig::new(8 * FEATURES, 8 * CLASSES))
            .unwrap();
        let slot = pipeline.next_slot().unwrap();
        let refused = slot.submit(|launch| launch.execute(&mut model));
        assert!(
            matches!(refused, Err(Error::ModelTypeMismatch { .. })),
            "{refused:?}"
        );
        pipeline.destroy().unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}

#[test]
fn held_f16_model_in_a_scope_and_type_checks_of_outputs() {
    let model =
        SimModel::new(SimDtype::F16, &[2, FEATURES], SimDtype::F16, &[2, FEATURES]).scale(2.0);
    let path = model_file("scoped_f16", &model);
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let host: Vec<F16> = (0..2 * FEATURES)
            .map(|i| F16::from_f32(i as f32 / 4.0))
            .collect();
        let mut input = ctx
            .alloc::<F16>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<F16>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        // u16 buffers of the same byte size: refused (MD13), as input and as output.
        let mut as_u16 = ctx
            .alloc::<u16>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let refused = ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&input).into()],
                [(&mut as_u16).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelTypeMismatch { .. })),
            "{refused:?}"
        );
        let refused = ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&as_u16).into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelTypeMismatch { .. })),
            "{refused:?}"
        );
        // A slice of the right byte size but half the elements of a wider type: refused.
        let wide = ctx.alloc::<f32>(FEATURES, MallocPolicy::HugeFirst).unwrap();
        let refused = ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [wide.slice(..).unwrap().into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelTypeMismatch { .. })),
            "{refused:?}"
        );
        // Zero-length views: refused by size.
        let refused = ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [input.slice(0..0).unwrap().into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelSizeMismatch { .. })),
            "{refused:?}"
        );
        let mut back = [F16::from_f32(0.0); 2 * FEATURES];
        ctx.async_scope(|scope| {
            let up = scope.copy(&stream, &mut input, &host[..])?;
            let run = scope.execute(&stream, &mut model, [up.into()], [(&mut output).into()])?;
            assert!(matches!(
                run.output::<u16>(0),
                Err(Error::ModelTypeMismatch { .. })
            ));
            assert!(matches!(
                run.output::<BF16>(0),
                Err(Error::ModelTypeMismatch { .. })
            ));
            assert!(matches!(
                run.output::<F16>(usize::MAX),
                Err(Error::InvalidArgument(_))
            ));
            let out = run.output::<F16>(0)?;
            assert_eq!(ascend_typestate::Source::len(&out), 2 * FEATURES);
            scope.copy(&stream, &mut back[..], out)?;
            Ok(())
        })
        .unwrap();
        for (i, (b, h)) in back.iter().zip(&host).enumerate() {
            assert_eq!(b.to_f32(), h.to_f32() * 2.0, "element {i}");
        }
        drop(model);
    }
    ends_clean(session);
}

use ascend_typestate::BF16;

// ---------------------------------------------------------------------------------------
// 2. Ordering: results of a slow model read on other streams, by copies and kernels.

fn halved(x: f32) -> f32 {
    x / 2.0
}

#[test]
fn held_outputs_consumed_on_other_streams_by_a_kernel_and_a_second_model() {
    let slow = classifier(2, &[]).time_per_item(Duration::from_millis(20));
    let path = model_file("scoped_chain", &slow);
    let second = SimModel::new(SimDtype::F32, &[2, CLASSES], SimDtype::F32, &[2, CLASSES])
        .scale(3.0)
        .time_per_item(Duration::from_millis(10));
    let path2 = model_file("scoped_chain2", &second);
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let mut first = ctx.load_model(&path).unwrap();
        let mut then = ctx.load_model(&path2).unwrap();
        let mut input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut mid = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut k = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut last = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        for n in 0..3 {
            let host = frame_input(n, 2);
            let (mut a, mut b, mut c) = ([0f32; 8], [0f32; 8], [0f32; 8]);
            ctx.async_scope(|scope| {
                let up = scope.copy(&s1, &mut input, &host[..])?;
                let run = scope.execute(&s1, &mut first, [up.into()], [(&mut mid).into()])?;
                let out = run.output::<f32>(0)?;
                // Read three ways on three other streams, each must be joined after the model.
                let kernel =
                    scope.simulated_map(&s2, Duration::from_millis(1), out, &mut k, halved)?;
                let run2 = scope.execute(&s3, &mut then, [out.into()], [(&mut last).into()])?;
                scope.copy(&s2, &mut a[..], kernel)?;
                scope.copy(&s1, &mut b[..], run2.output::<f32>(0)?)?;
                scope.copy(&s3, &mut c[..], out)?;
                Ok(())
            })
            .unwrap();
            let want = expected(&host);
            assert_close(
                &a,
                &want.iter().map(|x| x / 2.0).collect::<Vec<_>>(),
                "kernel",
            );
            assert_close(
                &b,
                &want.iter().map(|x| x * 3.0).collect::<Vec<_>>(),
                "model 2",
            );
            assert_close(&c, &want, "copy");
        }
        drop(first);
        drop(then);
    }
    ends_clean(session);
}

/// I/O memory of another context of the same device in a scope of the model's context.
#[test]
fn held_buffers_of_another_context_on_the_same_device() {
    let path = model_file("scoped_other_ctx_buffers", &classifier(2, &[]));
    let session = Session::start();
    {
        let device = session.default_device(0);
        let other = device.create_context().unwrap();
        let stream = device.create_stream().unwrap();
        let mut model = device.load_model(&path).unwrap();
        let mut input = other
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = other
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let host = frame_input(9, 2);
        let scores = run_once(&device, &stream, &mut model, &mut input, &mut output, &host);
        if let Ok(scores) = scores {
            assert_close(&scores, &expected(&host), "other context's buffers");
        }
        drop(model);
        drop(input);
        drop(output);
        drop(other);
    }
    ends_clean(session);
}

#[test]
fn held_dynamic_gears_out_of_range_are_refused_before_any_call() {
    let path = model_file("scoped_gears", &classifier(4, &[1, 2, 4]));
    let session = Session::start();
    session.sim.reset_call_counts();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_dynamic_model(&path).unwrap();
        let input = ctx
            .alloc::<f32>(4 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let small = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(4 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        for batch in [0u64, 3, 5, u64::MAX] {
            let refused = ctx.async_scope(|scope| {
                scope.execute_batch(
                    &stream,
                    &mut model,
                    batch,
                    [(&input).into()],
                    [(&mut output).into()],
                )?;
                Ok(())
            });
            assert!(
                matches!(refused, Err(Error::NotAGear { .. })),
                "{batch}: {refused:?}"
            );
        }
        // Inputs sized for a smaller gear: refused (MD10: the largest gear's size).
        let refused = ctx.async_scope(|scope| {
            scope.execute_batch(
                &stream,
                &mut model,
                2,
                [(&small).into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelSizeMismatch { .. })),
            "{refused:?}"
        );
        // The batch input is the model's own: passing it too is a count error.
        let refused = ctx.async_scope(|scope| {
            scope.execute_batch(
                &stream,
                &mut model,
                2,
                [(&input).into(), (&input).into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelTensorCount { .. })),
            "{refused:?}"
        );
        assert_eq!(session.sim.call_count("aclmdlExecuteAsync"), 0);
        assert_eq!(session.sim.call_count("aclmdlCreateDataset"), 0);
        drop(model);
    }
    ends_clean(session);
}
