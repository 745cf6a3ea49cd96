//! Scoped executions and pipelines of models with several inputs and outputs (MD6, MD10,
//! MD11, MD13): mixed element types in an async scope on three streams, a dynamic model with
//! two inputs, a pipeline slot carrying two inputs and two outputs one after the other.

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{DataType, Error, MallocPolicy, ModelTensor, PipelineConfig};

use super::common::{assert_close, ends_clean, model_file};
use crate::support::sim::Session;

/// A detector-like model: an `f32` image (8 values) and an `i32` scale (1 value) in; `f32`
/// scores (6 values) and an `i32` count (3 values) out. The simulator concatenates the
/// inputs, scales by 2, and fills the outputs in order.
fn detector() -> SimModel {
    SimModel::new(SimDtype::F32, &[8], SimDtype::F32, &[6])
        .and_input(SimDtype::I32, &[1])
        .and_output(SimDtype::I32, &[3])
        .scale(2.0)
}

#[test]
fn md6_a_model_with_inputs_and_outputs_of_mixed_types_runs_in_a_scope() {
    let path = model_file("scoped_detector", &detector());
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (pre, infer) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut model = ctx.load_model(&path).unwrap();
        let types: Vec<DataType> = model.inputs().iter().map(|t| t.data_type()).collect();
        assert_eq!(types, [DataType::Float, DataType::Int32]);
        let types: Vec<DataType> = model.outputs().iter().map(|t| t.data_type()).collect();
        assert_eq!(types, [DataType::Float, DataType::Int32]);
        let mut d_image = ctx.alloc::<f32>(8, MallocPolicy::HugeFirst).unwrap();
        let mut d_scale = ctx.alloc::<i32>(1, MallocPolicy::HugeFirst).unwrap();
        let mut d_scores = ctx.alloc::<f32>(6, MallocPolicy::HugeFirst).unwrap();
        let mut d_count = ctx.alloc::<i32>(3, MallocPolicy::HugeFirst).unwrap();
        for n in 0..3 {
            let image: Vec<f32> = (0..8).map(|i| (i + n) as f32 * 0.5).collect();
            let scale = [n + 10];
            let (mut scores, mut count) = ([f32::NAN; 6], [-1i32; 3]);
            ctx.async_scope(|scope| {
                let image = scope.copy(&pre, &mut d_image, &image[..])?;
                let scale = scope.copy(&pre, &mut d_scale, &scale[..])?;
                let run = scope.execute(
                    &infer,
                    &mut model,
                    [image.into(), scale.into()],
                    [(&mut d_scores).into(), (&mut d_count).into()],
                )?;
                scope.copy(&infer, &mut scores[..], run.output::<f32>(0)?)?;
                scope.copy(&pre, &mut count[..], run.output::<i32>(1)?)?;
                Ok(())
            })
            .unwrap();
            let all: Vec<f32> = image
                .iter()
                .copied()
                .chain([scale[0] as f32])
                .map(|v| v * 2.0)
                .collect();
            assert_close(&scores, &all[..6], "scores");
            let want: Vec<i32> = all[6..].iter().map(|v| v.round() as i32).collect();
            assert_eq!(count.to_vec(), want, "count");
        }
        // The order of the buffers is the model's: swapped types are refused (MD13).
        let refused = ctx.async_scope(|scope| {
            scope.execute(
                &infer,
                &mut model,
                [(&d_scale).into(), (&d_image).into()],
                [(&mut d_scores).into(), (&mut d_count).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(
                refused,
                Err(Error::ModelTypeMismatch {
                    tensor: ModelTensor::Input(0),
                    ..
                })
            ),
            "{refused:?}"
        );
        drop(model);
    }
    ends_clean(session);
}

#[test]
fn md11_a_dynamic_model_with_two_inputs_runs_in_a_scope() {
    // Two f32 inputs of 4 items x 2 values, one output of 4 items x 4 values: per item, the
    // model sees [a0 a1 ... | b0 b1 ...] concatenated, scaled by 3.
    let model = SimModel::new(SimDtype::F32, &[4, 2], SimDtype::F32, &[4, 4])
        .and_input(SimDtype::F32, &[4, 2])
        .batch_gears(&[1, 4])
        .scale(3.0);
    let path = model_file("scoped_dynamic_two", &model);
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_dynamic_model(&path).unwrap();
        assert_eq!(
            model.inputs().len(),
            3,
            "two data inputs and the batch input"
        );
        let mut a = ctx.alloc::<f32>(8, MallocPolicy::HugeFirst).unwrap();
        let mut b = ctx.alloc::<f32>(8, MallocPolicy::HugeFirst).unwrap();
        let mut out = ctx.alloc::<f32>(16, MallocPolicy::HugeFirst).unwrap();
        for batch in [1u64, 4] {
            let (ha, hb): (Vec<f32>, Vec<f32>) = (
                (0..8).map(|i| i as f32).collect(),
                (0..8).map(|i| 100.0 + i as f32).collect(),
            );
            let mut result = [f32::NAN; 16];
            ctx.async_scope(|scope| {
                let a = scope.copy(&stream, &mut a, &ha[..])?;
                let b = scope.copy(&stream, &mut b, &hb[..])?;
                let run = scope.execute_batch(
                    &stream,
                    &mut model,
                    batch,
                    [a.into(), b.into()],
                    [(&mut out).into()],
                )?;
                scope.copy(&stream, &mut result[..], run.output::<f32>(0)?)?;
                Ok(())
            })
            .unwrap();
            let items = batch as usize * 2;
            let want: Vec<f32> = ha[..items]
                .iter()
                .chain(&hb[..items])
                .map(|v| v * 3.0)
                .collect();
            assert_close(&result[..want.len()], &want, "a gear over two inputs");
            assert!(
                result[want.len()..].iter().all(|v| *v == 0.0),
                "the rest is zeroed"
            );
        }
        model.unload().unwrap();
    }
    ends_clean(session);
}

#[test]
fn md10_a_pipeline_carries_a_model_with_two_inputs_and_two_outputs() {
    // Inputs: 3 and 5 f32; outputs: 2 and 6 f32. The slot's input holds both inputs one
    // after the other (8 values), its output both outputs (8 values).
    let model = SimModel::new(SimDtype::F32, &[3], SimDtype::F32, &[2])
        .and_input(SimDtype::F32, &[5])
        .and_output(SimDtype::F32, &[6])
        .offset(1.0);
    let path = model_file("scoped_pipeline_two", &model);
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let mut model = ctx.load_model(&path).unwrap();
        let sizes: Vec<usize> = model.inputs().iter().map(|t| t.byte_len() / 4).collect();
        assert_eq!(sizes, [3, 5]);
        let mut pipeline = ctx
            .create_pipeline::<f32, f32>(PipelineConfig::new(8, 8))
            .unwrap();
        let frame = |n: u64| -> Vec<f32> { (0..8).map(|i| (n * 10 + i) as f32).collect() };
        let mut seen = 0;
        for n in 0..6u64 {
            let mut slot = pipeline.next_slot().unwrap();
            if let Some((k, output)) = slot.output() {
                let want: Vec<f32> = frame(k).iter().map(|v| v + 1.0).collect();
                let (first, second) = output.split_at(2);
                assert_close(first, &want[..2], "output 0");
                assert_close(second, &want[2..], "output 1");
                seen += 1;
            }
            let (image, extra) = slot.input_mut().split_at_mut(3);
            image.copy_from_slice(&frame(n)[..3]);
            extra.copy_from_slice(&frame(n)[3..]);
            slot.submit(|launch| launch.execute(&mut model)).unwrap();
        }
        pipeline.wait_all().unwrap();
        assert_eq!(seen, 4);
        for (k, output) in pipeline.outputs() {
            let want: Vec<f32> = frame(k).iter().map(|v| v + 1.0).collect();
            assert_close(output, &want, "a last frame");
        }
        pipeline.destroy().unwrap();
        // Slots whose sizes are not the sum of the tensors' are refused (MD10).
        let mut wrong = ctx
            .create_pipeline::<f32, f32>(PipelineConfig::new(3, 8))
            .unwrap();
        let slot = wrong.next_slot().unwrap();
        let refused = slot.submit(|launch| launch.execute(&mut model));
        assert!(
            matches!(
                refused,
                Err(Error::ModelSizeMismatch {
                    expected: 32,
                    found: 12
                })
            ),
            "{refused:?}"
        );
        wrong.destroy().unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}
