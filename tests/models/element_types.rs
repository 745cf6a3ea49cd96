//! Element types (MD13): checked against the model's description before anything
//! runs; a buffer read or written as another type is refused before any call, a pipeline of
//! other element types at its first execution; float16 models run through `F16`.

use crate::support;

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{
    BF16, DYNAMIC_BATCH_INPUT, DataType, Element, Error, F16, Format, MallocPolicy, ModelTensor,
    PipelineConfig,
};
use support::DropErrors;
use support::sim::Session;

use super::common::{
    BIAS, CLASSES, FEATURES, assert_close, ends_clean, expected, frame_input, model_file, weights,
};

/// The classifier with an `i32` output: the index of each row's best class.
fn argmax_classifier(rows: usize) -> SimModel {
    SimModel::new(SimDtype::F32, &[rows, FEATURES], SimDtype::I32, &[rows])
        .matmul(FEATURES, CLASSES, &weights())
        .bias(&BIAS)
        .argmax(CLASSES)
}

/// What the argmax classifier answers for `input`.
fn expected_classes(input: &[f32]) -> Vec<i32> {
    expected(input)
        .chunks(CLASSES)
        .map(|scores| {
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

/// Counts of the runtime calls that would move model data or build datasets.
fn data_calls(session: &Session) -> Vec<u64> {
    [
        "aclrtMemcpy",
        "aclrtMemcpyAsync",
        "aclmdlCreateDataset",
        "aclCreateDataBuffer",
        "aclmdlExecute",
        "aclmdlExecuteAsync",
    ]
    .iter()
    .map(|call| session.sim.call_count(call))
    .collect()
}

#[test]
fn md13_the_description_gives_element_types_and_formats() {
    let dir = support::scratch_dir("typed_models_md13_types");
    let (image, dynamic) = (dir.join("image.model"), dir.join("dynamic.model"));
    SimModel::new(SimDtype::U8, &[1, 3, 4, 4], SimDtype::F16, &[1, 48])
        .write(&image)
        .unwrap();
    argmax_classifier(4)
        .batch_gears(&[1, 2, 4])
        .write(&dynamic)
        .unwrap();
    let session = Session::start();
    {
        let device = session.default_device(0);
        let model = device.load_model(&image).unwrap();
        let (input, output) = (&model.inputs()[0], &model.outputs()[0]);
        assert_eq!(
            (input.data_type(), input.format()),
            (DataType::Uint8, Format::Nchw)
        );
        assert_eq!(
            (output.data_type(), output.format()),
            (DataType::Float16, Format::Nd)
        );
        assert_eq!(u8::DATA_TYPE, input.data_type());
        assert_eq!(F16::DATA_TYPE, output.data_type());
        model.unload().unwrap();
        let model = device.load_dynamic_model(&dynamic).unwrap();
        let batch = &model.inputs()[1];
        assert_eq!(batch.name(), DYNAMIC_BATCH_INPUT);
        // As ATC compiles it: int32, ND.
        assert_eq!(
            (batch.data_type(), batch.format()),
            (DataType::Int32, Format::Nd)
        );
        assert_eq!(model.inputs()[0].data_type(), DataType::Float);
        assert_eq!(model.outputs()[0].data_type(), DataType::Int32);
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// An `i32` output read as `f32` would be plausible garbage: refused with a typed error,
/// before any runtime call; read as `i32` it is the model's answer.
#[test]
fn md13_an_i32_output_read_as_f32_is_refused_before_any_call() {
    let rows = 2;
    let path = model_file("md13_read", &argmax_classifier(rows));
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut model = device.load_model(&path).unwrap();
        let mut io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        let input = frame_input(3, rows);
        io.write_input(0, &input).unwrap();
        model.execute(&mut io).unwrap();
        let before = data_calls(&session);
        let mut as_f32 = [0.0f32; 2];
        let err = io.read_output(0, &mut as_f32).unwrap_err();
        assert!(
            matches!(
                err,
                Error::ModelTypeMismatch {
                    tensor: ModelTensor::Output(0),
                    expected: DataType::Int32,
                    found: DataType::Float,
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("output 0") && err.to_string().contains("ACL_INT32"),
            "{err}"
        );
        assert_eq!(as_f32, [0.0; 2], "nothing was copied");
        // In place too (the type is checked before the run mode).
        assert!(matches!(
            io.output_view::<f32>(0),
            Err(Error::ModelTypeMismatch { .. })
        ));
        // Any other 4-byte type is refused the same way.
        let mut as_u32 = [0u32; 2];
        assert!(matches!(
            io.read_output(0, &mut as_u32),
            Err(Error::ModelTypeMismatch {
                found: DataType::Uint32,
                ..
            })
        ));
        assert_eq!(data_calls(&session), before, "no runtime call was issued");
        let mut classes = [0i32; 2];
        io.read_output(0, &mut classes).unwrap();
        assert_eq!(classes.to_vec(), expected_classes(&input));
        drop(io);
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// A `u8` input written with `f32` values is refused before the copy; written as `u8` the
/// model computes on it.
#[test]
fn md13_a_u8_input_written_as_f32_is_refused() {
    let path = model_file(
        "md13_write",
        &SimModel::new(SimDtype::U8, &[1, FEATURES], SimDtype::F32, &[1, CLASSES])
            .matmul(FEATURES, CLASSES, &weights())
            .bias(&BIAS),
    );
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut model = device.load_model(&path).unwrap();
        let mut io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        let before = data_calls(&session);
        let err = io.write_input(0, &[1.0f32; 2]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::ModelTypeMismatch {
                    tensor: ModelTensor::Input(0),
                    expected: DataType::Uint8,
                    found: DataType::Float,
                }
            ),
            "{err:?}"
        );
        assert!(matches!(
            io.write_input(0, &[1i8; FEATURES]),
            Err(Error::ModelTypeMismatch {
                found: DataType::Int8,
                ..
            })
        ));
        assert_eq!(data_calls(&session), before, "no runtime call was issued");
        let pixels: Vec<u8> = (0..FEATURES as u8).map(|i| i * 3).collect();
        io.write_input(0, &pixels).unwrap();
        model.execute(&mut io).unwrap();
        let mut scores = [0.0f32; CLASSES];
        io.read_output(0, &mut scores).unwrap();
        let as_f32: Vec<f32> = pixels.iter().map(|&p| f32::from(p)).collect();
        assert_close(&scores, &expected(&as_f32), "u8 input");
        drop(io);
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// `Pipeline<f32, f32>` executing a model whose output is `i32`: the sizes agree, the types
/// do not. Refused at the slot's first execution of the model, before its datasets or its
/// execution; the slot then runs the right models, and `Pipeline<f32, i32>` runs this one.
#[test]
fn md13_a_pipeline_of_other_element_types_is_refused_at_first_execution() {
    let rows = 2;
    let dir = support::scratch_dir("typed_models_md13_pipeline");
    let (classes_path, sums_path) = (dir.join("classes.model"), dir.join("sums.model"));
    argmax_classifier(rows).write(&classes_path).unwrap();
    // Same sizes, f32 output: each row's sum.
    SimModel::new(SimDtype::F32, &[rows, FEATURES], SimDtype::F32, &[rows])
        .matmul(FEATURES, 1, &[1.0; FEATURES])
        .write(&sums_path)
        .unwrap();
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut classes = device.load_model(&classes_path).unwrap();
        let mut sums = device.load_model(&sums_path).unwrap();
        let config = PipelineConfig::new(rows * FEATURES, rows).slots(1);
        let mut floats = device.create_pipeline::<f32, f32>(config).unwrap();
        for _ in 0..2 {
            let before = data_calls(&session);
            let mut slot = floats.next_slot().unwrap();
            slot.input_mut().copy_from_slice(&frame_input(0, rows));
            let err = slot
                .submit(|launch| launch.execute(&mut classes))
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::ModelTypeMismatch {
                        tensor: ModelTensor::Output(0),
                        expected: DataType::Int32,
                        found: DataType::Float,
                    }
                ),
                "{err:?}"
            );
            assert_eq!(classes.pending(), 0, "nothing pending");
            let after = data_calls(&session);
            // The frame's input copy was issued; nothing of the model's.
            assert_eq!(after[2..], before[2..], "no dataset, buffer or execution");
        }
        // The same slot runs a model of its types, frame after frame.
        for _ in 0..3 {
            let mut slot = floats.next_slot().unwrap();
            if let Some((n, out)) = slot.output() {
                let want: Vec<f32> = frame_input(n, rows)
                    .chunks(FEATURES)
                    .map(|row| row.iter().sum())
                    .collect();
                assert_close(out, &want, "sums");
            }
            let n = slot.frame();
            slot.input_mut().copy_from_slice(&frame_input(n, rows));
            slot.submit(|launch| launch.execute(&mut sums)).unwrap();
        }
        floats.wait_all().unwrap();
        assert_eq!(floats.outputs().count(), 1);
        floats.destroy().unwrap();
        // The i32 model in a pipeline of its types.
        let mut ints = device.create_pipeline::<f32, i32>(config).unwrap();
        for _ in 0..3 {
            let mut slot = ints.next_slot().unwrap();
            if let Some((n, out)) = slot.output() {
                assert_eq!(out.to_vec(), expected_classes(&frame_input(n, rows)));
            }
            let n = slot.frame();
            slot.input_mut().copy_from_slice(&frame_input(n, rows));
            slot.submit(|launch| launch.execute(&mut classes)).unwrap();
        }
        ints.wait_all().unwrap();
        let (n, out) = ints.outputs().next().expect("a frame");
        assert_eq!(out.to_vec(), expected_classes(&frame_input(n, rows)));
        ints.destroy().unwrap();
        classes.unload().unwrap();
        sums.unload().unwrap();
    }
    ends_clean(session);
}

/// A `float16` model is fed and read through `F16` (the simulator converts like the NPU
/// would: f16 in, f32 arithmetic, rounded to f16), synchronously and in a pipeline; `u16`, the
/// old way of feeding it, is refused. A `bfloat16` output reads through `BF16`.
#[test]
fn md13_float16_models_run_through_f16() {
    let rows = 2;
    let dir = support::scratch_dir("typed_models_md13_f16");
    let (half_path, bf_path) = (dir.join("half.model"), dir.join("bf.model"));
    SimModel::new(
        SimDtype::F16,
        &[rows, FEATURES],
        SimDtype::F16,
        &[rows, CLASSES],
    )
    .matmul(FEATURES, CLASSES, &weights())
    .bias(&BIAS)
    .write(&half_path)
    .unwrap();
    SimModel::new(
        SimDtype::F32,
        &[rows, FEATURES],
        SimDtype::BF16,
        &[rows, CLASSES],
    )
    .matmul(FEATURES, CLASSES, &weights())
    .bias(&BIAS)
    .write(&bf_path)
    .unwrap();
    let halves = |v: &[f32]| -> Vec<F16> { v.iter().map(|&x| F16::from_f32(x)).collect() };
    let close = |found: &[f32], want: &[f32], tolerance: f32, what: &str| {
        assert_eq!(found.len(), want.len(), "{what}");
        for (i, (a, b)) in found.iter().zip(want).enumerate() {
            assert!(
                (a - b).abs() <= tolerance,
                "{what}: element {i}: {a} != {b}"
            );
        }
    };
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut half = device.load_model(&half_path).unwrap();
        assert_eq!(half.inputs()[0].data_type(), DataType::Float16);
        assert_eq!(half.outputs()[0].byte_len(), rows * CLASSES * 2);
        let mut io = half.create_io(MallocPolicy::HugeFirst).unwrap();
        // The inputs (multiples of 1/8) are exact in float16.
        let input = frame_input(5, rows);
        assert!(matches!(
            io.write_input(0, &vec![0u16; rows * FEATURES]),
            Err(Error::ModelTypeMismatch {
                expected: DataType::Float16,
                found: DataType::Uint16,
                ..
            })
        ));
        io.write_input(0, &halves(&input)).unwrap();
        half.execute(&mut io).unwrap();
        let mut out = vec![F16::default(); rows * CLASSES];
        io.read_output(0, &mut out).unwrap();
        let out: Vec<f32> = out.iter().map(|h| h.to_f32()).collect();
        close(&out, &expected(&input), 1e-2, "f16 sync");
        drop(io);

        let config = PipelineConfig::new(rows * FEATURES, rows * CLASSES);
        let mut pipeline = device.create_pipeline::<F16, F16>(config).unwrap();
        for _ in 0..4 {
            let mut slot = pipeline.next_slot().unwrap();
            if let Some((n, out)) = slot.output() {
                let out: Vec<f32> = out.iter().map(|h| h.to_f32()).collect();
                close(&out, &expected(&frame_input(n, rows)), 1e-2, "f16 pipeline");
            }
            let n = slot.frame();
            slot.input_mut()
                .copy_from_slice(&halves(&frame_input(n, rows)));
            slot.submit(|launch| launch.execute(&mut half)).unwrap();
        }
        pipeline.wait_all().unwrap();
        assert_eq!(pipeline.outputs().count(), 2);
        pipeline.destroy().unwrap();
        half.unload().unwrap();

        let mut bf = device.load_model(&bf_path).unwrap();
        let mut io = bf.create_io(MallocPolicy::HugeFirst).unwrap();
        io.write_input(0, &input).unwrap();
        bf.execute(&mut io).unwrap();
        let mut as_f16 = vec![F16::default(); rows * CLASSES];
        assert!(matches!(
            io.read_output(0, &mut as_f16),
            Err(Error::ModelTypeMismatch {
                expected: DataType::Bf16,
                found: DataType::Float16,
                ..
            })
        ));
        let mut out = vec![BF16::default(); rows * CLASSES];
        io.read_output(0, &mut out).unwrap();
        let out: Vec<f32> = out.iter().map(|b| b.to_f32()).collect();
        close(&out, &expected(&input), 5e-2, "bf16");
        drop(io);
        bf.unload().unwrap();
    }
    ends_clean(session);
}

/// The type and format queries fail only by answering `ACL_DT_UNDEFINED` /
/// `ACL_FORMAT_UNDEFINED`: such a model is refused at load (`UnreadableDescription` naming the
/// query), unloaded again, nothing leaked; a dynamic model's batch input is queried too.
#[test]
fn md13_a_failed_type_query_at_load_is_a_typed_error() {
    let dir = support::scratch_dir("typed_models_md13_fault");
    let (stat, dynamic) = (dir.join("s.model"), dir.join("d.model"));
    argmax_classifier(2).write(&stat).unwrap();
    argmax_classifier(2)
        .batch_gears(&[1, 2])
        .write(&dynamic)
        .unwrap();
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        for (call, skip, path) in [
            ("aclmdlGetInputDataType", 0, &stat),
            ("aclmdlGetOutputDataType", 0, &stat),
            ("aclmdlGetInputFormat", 0, &stat),
            ("aclmdlGetOutputFormat", 0, &stat),
            // The second input: the dynamic model's batch input.
            ("aclmdlGetInputDataType", 1, &dynamic),
            ("aclmdlGetInputFormat", 1, &dynamic),
        ] {
            session.sim.inject_fault_at(call, 507_000, skip, 1);
            let loaded = if path == &dynamic {
                device.load_dynamic_model(path).map(|_| ())
            } else {
                device.load_model(path).map(|_| ())
            };
            session.sim.clear_faults();
            match loaded {
                Err(e @ Error::UnreadableDescription { call: named }) => {
                    assert_eq!(named, call);
                    let answer = if call.ends_with("Format") {
                        "ACL_FORMAT_UNDEFINED"
                    } else {
                        "ACL_DT_UNDEFINED"
                    };
                    assert!(e.to_string().contains(answer), "{e}");
                }
                other => panic!("{call} (skip {skip}): {other:?}"),
            }
            assert_eq!(session.sim.live_objects(), 0, "{call}: unloaded again");
        }
        // Without a fault the same files load.
        device.load_model(&stat).unwrap().unload().unwrap();
        device
            .load_dynamic_model(&dynamic)
            .unwrap()
            .unload()
            .unwrap();
    }
    assert_eq!(errors.take(), Vec::<String>::new());
    ends_clean(session);
}
