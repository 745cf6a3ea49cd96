//! Models (MD1-MD13) through the typed API, on the simulator's text models
//! (`simulator::SimModel`): synchronous and pipelined execution compute the model's function,
//! pending executions keep the model loaded (MD7) and on one stream (MD8), gears are checked
//! (MD11), sizes (MD10) and element types (MD13) come from the description, and every test
//! ends with zero checker findings and no live runtime object, on error paths and injected
//! faults too.

use crate::support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{
    AclError, BF16, DYNAMIC_BATCH_INPUT, DataType, Dynamic, Element, Error, F16, Format,
    MallocPolicy, MemoryKind, Model, ModelSource, ModelTensor, PipelineConfig, Static,
};
use support::DropErrors;
use support::sim::Session;

const FEATURES: usize = 8;
const CLASSES: usize = 4;

fn weights() -> Vec<f32> {
    (0..FEATURES * CLASSES)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) / 4.0)
        .collect()
}

const BIAS: [f32; CLASSES] = [0.5, -0.25, 0.0, 1.0];

/// A linear classifier over `FEATURES` values, `rows` items (the largest gear's batch for a
/// dynamic model).
fn classifier(rows: usize, gears: &[u64]) -> SimModel {
    SimModel::new(
        SimDtype::F32,
        &[rows, FEATURES],
        SimDtype::F32,
        &[rows, CLASSES],
    )
    .batch_gears(gears)
    .matmul(FEATURES, CLASSES, &weights())
    .bias(&BIAS)
}

/// What the classifier computes for `input` (rows of `FEATURES`).
fn expected(input: &[f32]) -> Vec<f32> {
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

fn assert_close(found: &[f32], want: &[f32], what: &str) {
    assert_eq!(found.len(), want.len(), "{what}");
    for (i, (a, b)) in found.iter().zip(want).enumerate() {
        assert!((a - b).abs() < 1e-3, "{what}: element {i}: {a} != {b}");
    }
}

fn model_file(name: &str, model: &SimModel) -> PathBuf {
    // A directory per file: tests run in parallel, and `scratch_dir` empties its directory.
    let path = support::scratch_dir(&format!("typed_models_{name}")).join("m.model");
    model.write(&path).expect("write the model file");
    path
}

fn frame_input(n: u64, rows: usize) -> Vec<f32> {
    (0..rows * FEATURES)
        .map(|i| ((n as usize * 31 + i) % 17) as f32 / 8.0 - 1.0)
        .collect()
}

fn ends_clean(session: Session) {
    assert_eq!(session.sim.live_objects(), 0, "everything released");
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn md_a_synchronous_execution_computes_the_model() {
    let path = model_file("sync", &classifier(2, &[]));
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut model = device.load_model(&path).unwrap();
        assert_eq!(model.inputs().len(), 1);
        assert_eq!(model.inputs()[0].dims(), &[2, FEATURES as i64]);
        assert_eq!(model.inputs()[0].byte_len(), 2 * FEATURES * 4);
        assert_eq!(model.outputs()[0].byte_len(), 2 * CLASSES * 4);
        let mut io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        for n in 0..5 {
            let input = frame_input(n, 2);
            io.write_input(0, &input).unwrap();
            model.execute(&mut io).unwrap();
            let mut output = [0.0f32; 2 * CLASSES];
            io.read_output(0, &mut output).unwrap();
            assert_close(&output, &expected(&input), "sync");
        }
        // Sizes come from the description (MD10).
        let too_long = vec![0.0f32; 2 * FEATURES + 1];
        assert!(matches!(
            io.write_input(0, &too_long),
            Err(Error::ModelSizeMismatch { .. })
        ));
        // Reading in place is for the board only.
        assert!(matches!(
            io.output_view::<f32>(0),
            Err(Error::NotInDeviceRunMode)
        ));
        drop(io);
        model.unload().unwrap();
    }
    ends_clean(session);
}

#[test]
fn md11_md12_a_dynamic_model_executes_each_gear() {
    let path = model_file("dynamic", &classifier(4, &[1, 2, 4]));
    let session = Session::start();
    {
        let device = session.default_device(0);
        // The kinds are checked at load.
        assert!(matches!(
            device.load_model(&path),
            Err(Error::WrongModelKind(_))
        ));
        let mut model: Model<'_, Dynamic> = device.load_dynamic_model(&path).unwrap();
        assert_eq!(model.gears(), &[1, 2, 4]);
        assert!(
            model
                .inputs()
                .iter()
                .any(|t| t.name() == DYNAMIC_BATCH_INPUT)
        );
        // MD12: the largest gear's dims before any batch.
        assert_eq!(
            model.current_output_dims(0).unwrap(),
            vec![4, CLASSES as i64]
        );
        let data = model
            .inputs()
            .iter()
            .position(|t| t.name() != DYNAMIC_BATCH_INPUT)
            .unwrap();
        let mut io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        for batch in [2u64, 1, 4] {
            let input = frame_input(batch, 4);
            io.write_input(data, &input).unwrap();
            model.execute_batch(&mut io, batch).unwrap();
            let mut output = [f32::NAN; 4 * CLASSES];
            io.read_output(0, &mut output).unwrap();
            let rows = batch as usize;
            assert_close(
                &output[..rows * CLASSES],
                &expected(&input[..rows * FEATURES]),
                "batch",
            );
            assert!(
                output[rows * CLASSES..].iter().all(|&y| y == 0.0),
                "the rest zeroed"
            );
            assert_eq!(
                model.current_output_dims(0).unwrap(),
                vec![batch as i64, CLASSES as i64]
            );
        }
        // MD11: a batch that is not a gear never reaches the runtime.
        assert!(matches!(
            model.execute_batch(&mut io, 3),
            Err(Error::NotAGear { batch: 3 })
        ));
        drop(io);
        model.unload().unwrap();
        let fixed = model_file("fixed_for_dynamic", &classifier(1, &[]));
        assert!(matches!(
            device.load_dynamic_model(&fixed),
            Err(Error::WrongModelKind(_))
        ));
    }
    ends_clean(session);
}

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

/// The natural drop order (issue 23): a model declared after the pipeline that runs it drops
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

#[test]
fn md2_md3_loads_with_memory_and_from_bytes_keep_it_until_unload() {
    let rows = 1;
    let model_text = classifier(rows, &[]);
    let path = model_file("with_memory", &model_text);
    let session = Session::start();
    {
        let device = session.default_device(0);
        let (work, weight) = device.model_memory_size(&path).unwrap();
        assert!(work > 0 && weight > 0);
        let live = session.sim.live_objects();
        let source = ModelSource::file_with_memory(
            &path,
            device.alloc::<u8>(work, MallocPolicy::HugeFirst).unwrap(),
            device.alloc::<u8>(weight, MallocPolicy::HugeFirst).unwrap(),
        );
        let mut model = device.load_model(source).unwrap();
        let mut io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        let input = frame_input(7, rows);
        io.write_input(0, &input).unwrap();
        model.execute(&mut io).unwrap();
        let mut output = [0.0f32; CLASSES];
        io.read_output(0, &mut output).unwrap();
        assert_close(&output, &expected(&input), "with memory");
        drop(io);
        model.unload().unwrap();
        assert_eq!(
            session.sim.live_objects(),
            live,
            "the memory went with the model"
        );

        // Memory smaller than the model needs: the runtime refuses, nothing is lost.
        let small = ModelSource::file_with_memory(
            &path,
            device.alloc::<u8>(1, MallocPolicy::HugeFirst).unwrap(),
            device.alloc::<u8>(weight, MallocPolicy::HugeFirst).unwrap(),
        );
        let err = device.load_model(small).unwrap_err();
        assert_eq!(err.code(), Some(AclError::InvalidParam), "{err:?}");
        assert_eq!(session.sim.live_objects(), live);

        // From bytes (host run mode): the model keeps them.
        let mut model = device
            .load_model(ModelSource::bytes(model_text.to_text().into_bytes()))
            .unwrap();
        let mut io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        io.write_input(0, &input).unwrap();
        model.execute(&mut io).unwrap();
        io.read_output(0, &mut output).unwrap();
        assert_close(&output, &expected(&input), "from bytes");
        drop(io);
        model.unload().unwrap();
        assert!(matches!(
            device.load_model(ModelSource::bytes(Vec::new())),
            Err(Error::InvalidArgument(_))
        ));
    }
    ends_clean(session);
}

/// A file the simulator cannot parse is the runtime's error; a path that names no regular
/// file is refused before the runtime is called, naming the file (issue 23: a FIFO would
/// block the runtime's reader): missing, a directory, a FIFO, a device, a NUL byte, through
/// every entry that takes a path.
#[test]
fn md_a_real_om_is_a_runtime_error_and_a_bad_path_names_the_file() {
    use ascend_typestate::ModelFileProblem as P;
    let dir = support::scratch_dir("typed_models_real_om");
    let om = dir.join("real.om");
    std::fs::write(&om, [0x49u8, 0x4d, 0x4f, 0x44, 0, 1, 2, 3]).unwrap();
    let fifo = dir.join("fifo.om");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let link = dir.join("link.om");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let session = Session::start();
    {
        let device = session.default_device(0);
        let err = device.load_model(&om).unwrap_err();
        assert_eq!(err.code(), Some(AclError::ParseModel), "{err:?}");
        let empty = dir.join("empty.om");
        std::fs::write(&empty, b"").unwrap();
        let cases: [(PathBuf, P); 8] = [
            (empty.clone(), P::Empty),
            // Size 0, endless content: never handed to the runtime.
            (PathBuf::from("/proc/self/pagemap"), P::Empty),
            (dir.join("missing.om"), P::NotFound),
            (dir.clone(), P::Directory),
            (fifo.clone(), P::NotRegularFile),
            (link.clone(), P::NotRegularFile),
            (PathBuf::from("/dev/zero"), P::NotRegularFile),
            (PathBuf::from("a\0b"), P::NulByte),
        ];
        let calls = session.sim.call_count("aclmdlLoadFromFile")
            + session.sim.call_count("aclmdlQuerySize");
        for (path, problem) in &cases {
            let load = device.load_model(path).map(|_| ());
            let dynamic = device.load_dynamic_model(path).map(|_| ());
            let size = device.model_memory_size(path).map(|_| ());
            for outcome in [load, dynamic, size] {
                match outcome {
                    Err(Error::ModelFile { path: named, why }) => {
                        assert_eq!(&*named, path.as_path());
                        assert_eq!(why, *problem, "{}", path.display());
                        let shown = Error::ModelFile { path: named, why }.to_string();
                        assert!(shown.contains(&*path.to_string_lossy()), "{shown}");
                    }
                    other => panic!("{}: {other:?}", path.display()),
                }
            }
        }
        let after = session.sim.call_count("aclmdlLoadFromFile")
            + session.sim.call_count("aclmdlQuerySize");
        assert_eq!(calls, after, "refused before the runtime was called");
    }
    ends_clean(session);
}

/// On the board (device run mode), outputs are read in place; model bytes go to device
/// memory (MD3). Run in a child with `ACLSIM_RUN_MODE=device`.
#[test]
fn md3_device_run_mode_reads_outputs_in_place() {
    const CHILD: &str = "ASCEND_TYPESTATE_DEVICE_MODE_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let out = support::child::run(
            "md3_device_run_mode_reads_outputs_in_place",
            &[
                (CHILD, std::ffi::OsStr::new("1")),
                ("ACLSIM_RUN_MODE", std::ffi::OsStr::new("device")),
            ],
            std::time::Duration::from_secs(600),
            support::child::Stderr::Piped,
        );
        let (stdout, stderr) = (&out.stdout, &out.stderr);
        assert!(out.success(), "{stdout}\n{stderr}");
        assert!(stdout.contains("read in place"), "{stdout}\n{stderr}");
        return;
    }
    let model_text = classifier(1, &[]);
    let session = Session::start();
    {
        let device = session.default_device(0);
        assert!(session.acl().runs_on_device().unwrap());
        let mut model = device
            .load_model(ModelSource::bytes(model_text.to_text().into_bytes()))
            .unwrap();
        let mut io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        let input = frame_input(3, 1);
        io.write_input(0, &input).unwrap();
        model.execute(&mut io).unwrap();
        assert_close(io.output_view::<f32>(0).unwrap(), &expected(&input), "view");
        drop(io);
        model.unload().unwrap();
    }
    ends_clean(session);
    println!("read in place");
}

/// Faults injected into every model call of a pipelined loop and of synchronous execution:
/// every failure is an error, the loop recovers, the model unloads, nothing is lost.
#[test]
fn fault_sweep_over_model_execution() {
    const CALLS: &[&str] = &[
        "aclmdlExecuteAsync",
        "aclmdlCreateDataset",
        "aclCreateDataBuffer",
        "aclmdlAddDatasetBuffer",
        "aclmdlExecute",
        "aclmdlSetDynamicBatchSize",
        "aclrtSynchronizeEvent",
        "aclrtMemcpyAsync",
    ];
    let rows = 2;
    let path = model_file(
        "faults",
        &classifier(rows, &[]).time_per_item(Duration::from_micros(50)),
    );
    let dynamic = model_file("faults_dynamic", &classifier(rows, &[1, 2]));
    let session = Session::start();
    let errors = DropErrors::capture();
    let mut injected = 0;
    {
        let device = session.default_device(0);
        let config = PipelineConfig::new(rows * FEATURES, rows * CLASSES);
        for call in CALLS {
            for skip in 0..4 {
                let mut model = device.load_model(&path).unwrap();
                let mut dyn_model = device.load_dynamic_model(&dynamic).unwrap();
                let mut pipeline = device.create_pipeline::<f32, f32>(config).unwrap();
                session.sim.inject_fault_at(call, 507_000, skip, 1);
                let mut failures = 0;
                let mut frames = 0u64;
                while frames < 6 {
                    let step = pipeline.next_slot().and_then(|mut slot| {
                        if let Some((n, output)) = slot.output() {
                            assert_close(output, &expected(&frame_input(n, rows)), "frame");
                        }
                        let n = slot.frame();
                        slot.input_mut().copy_from_slice(&frame_input(n, rows));
                        if n % 2 == 0 {
                            slot.submit(|launch| launch.execute(&mut model))
                        } else {
                            slot.submit(|launch| launch.execute_batch(&mut dyn_model, 2))
                        }
                    });
                    match step {
                        Ok(_) => frames += 1,
                        Err(_) => failures += 1,
                    }
                    assert!(failures < 10, "{call} #{skip}: the loop does not recover");
                }
                while pipeline.wait_all().is_err() {
                    failures += 1;
                    assert!(failures < 10, "{call} #{skip}: wait_all does not recover");
                }
                assert_eq!(model.pending() + dyn_model.pending(), 0);
                let mut io = loop {
                    match model.create_io(MallocPolicy::HugeFirst) {
                        Ok(io) => break io,
                        Err(_) => failures += 1,
                    }
                };
                if model.execute(&mut io).is_err() {
                    failures += 1;
                }
                session.sim.clear_faults();
                model.execute(&mut io).unwrap();
                drop(io);
                pipeline.destroy().unwrap();
                model.unload().unwrap();
                dyn_model.unload().unwrap();
                injected += failures;
            }
        }
    }
    assert!(injected > 15, "the faults were hit ({injected})");
    let _ = errors.take();
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

/// Teardown never trusts the runtime's answers about what to destroy: a dataset's buffers
/// are destroyed from the handles this crate created, so faults in
/// `aclmdlGetDatasetNumBuffers` / `aclmdlGetDatasetBuffer` (which answer 0 / null) change
/// nothing, in `ModelIo`'s drop and in `Pipeline::destroy` alike.
#[test]
fn md5_datasets_are_destroyed_from_their_own_handles() {
    let rows = 2;
    let path = model_file("own_handles", &classifier(rows, &[]));
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        let mut model = device.load_model(&path).unwrap();
        let mut io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        model.execute(&mut io).unwrap();
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(rows * FEATURES, rows * CLASSES))
            .unwrap();
        for _ in 0..3 {
            let slot = pipeline.next_slot().unwrap();
            slot.submit(|launch| launch.execute(&mut model)).unwrap();
        }
        pipeline.wait_all().unwrap();
        session.sim.reset_call_counts();
        session
            .sim
            .inject_fault("aclmdlGetDatasetNumBuffers", 507_000, 100);
        session
            .sim
            .inject_fault("aclmdlGetDatasetBuffer", 507_000, 100);
        drop(io);
        pipeline.destroy().unwrap();
        session.sim.clear_faults();
        // One data buffer per dataset: two for the `ModelIo`, two per slot used.
        assert_eq!(
            session.sim.call_count("aclDestroyDataBuffer"),
            session.sim.call_count("aclmdlDestroyDataset")
        );
        assert!(session.sim.call_count("aclmdlDestroyDataset") >= 4);
        model.unload().unwrap();
    }
    assert_eq!(errors.take(), Vec::<String>::new());
    ends_clean(session);
}

/// A dataset's clean-up that fails is reported, never dropped: a data buffer that cannot be
/// destroyed when `ModelIo` goes, or after a failed `aclmdlAddDatasetBuffer`.
#[test]
fn md5_a_failed_dataset_clean_up_is_reported() {
    let path = model_file("cleanup_reported", &classifier(2, &[]));
    let session = Session::start();
    session.expect_findings();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        let model = device.load_model(&path).unwrap();
        let io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        session.sim.inject_fault("aclDestroyDataBuffer", 507_000, 1);
        drop(io);
        // Reported, and tried again.
        let reported = errors.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert!(reported[0].contains("aclDestroyDataBuffer"), "{reported:?}");
        // `aclmdlAddDatasetBuffer` fails, then destroying the buffer not added fails too:
        // the first error is returned, the second reported.
        session
            .sim
            .inject_fault("aclmdlAddDatasetBuffer", 507_000, 1);
        session.sim.inject_fault("aclDestroyDataBuffer", 507_000, 1);
        let created = model.create_io(MallocPolicy::HugeFirst);
        session.sim.clear_faults();
        match created {
            Err(Error::Runtime { call, .. }) => assert_eq!(call, "aclmdlAddDatasetBuffer"),
            other => panic!("{other:?}"),
        }
        let reported = errors.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert!(reported[0].contains("aclDestroyDataBuffer"), "{reported:?}");
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// Each destroy of a model object failing every time it is tried (issue 23): the object is kept,
/// still counted in its context, which then refuses to be destroyed over it (D3) — never
/// `aclFinalize` over a live dataset, data buffer or description (P2). In a child process:
/// the runtime stays initialised.
#[test]
fn md5_d3_a_model_object_that_cannot_be_destroyed_keeps_its_context() {
    if support::child::ran_in_child(
        "md5_d3_a_model_object_that_cannot_be_destroyed_keeps_its_context",
        "ASCEND_TYPESTATE_MODEL_DESTROY_CHILD",
        "kept as expected",
    ) {
        return;
    }
    let path = model_file("destroy_twice", &classifier(2, &[]));
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    for call in [
        "aclDestroyDataBuffer",
        "aclmdlDestroyDataset",
        "aclmdlDestroyDesc",
    ] {
        let ctx = device.create_context().unwrap();
        let model = ctx.load_model(&path).unwrap();
        let io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        // Every try fails: the crate tries four times while the runtime fails.
        session.sim.inject_fault(call, 507_000, 4);
        drop(io);
        model.unload().unwrap();
        session.sim.clear_faults();
        let reported = errors.take();
        assert_eq!(
            reported.len(),
            4,
            "{call}: every failure reported (four tries): {reported:?}"
        );
        assert!(reported.iter().all(|r| r.contains(call)), "{reported:?}");
        let failed = ctx.try_destroy().unwrap_err();
        assert!(
            matches!(failed.error, Error::LiveChildren { count: 1 }),
            "{call}: {}",
            failed.error
        );
        std::mem::forget(failed.value);
    }
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    println!("kept as expected");
    std::process::exit(0);
}

/// The description's queries fail only by answering 0: such an answer is never taken for a
/// model without inputs or of unknown size ([`Error::UnreadableDescription`] names the
/// query), and a description whose `aclmdlGetDesc` fails is destroyed again, that failure
/// reported if it fails too.
#[test]
fn md10_a_failed_description_query_is_an_error_naming_it() {
    let path = model_file("unreadable", &classifier(2, &[]));
    let session = Session::start();
    session.expect_findings();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        for call in [
            "aclmdlGetNumInputs",
            "aclmdlGetNumOutputs",
            "aclmdlGetInputSizeByIndex",
            "aclmdlGetOutputSizeByIndex",
        ] {
            session.sim.inject_fault(call, 507_000, 1);
            let loaded = device.load_model(&path).map(|_| ());
            session.sim.clear_faults();
            match loaded {
                Err(Error::UnreadableDescription { call: named }) => assert_eq!(named, call),
                other => panic!("{call}: {other:?}"),
            }
            assert_eq!(session.sim.live_objects(), 0, "{call}: unloaded again");
        }
        assert_eq!(errors.take(), Vec::<String>::new());
        session.sim.inject_fault("aclmdlGetDesc", 507_000, 1);
        session.sim.inject_fault("aclmdlDestroyDesc", 507_000, 1);
        let loaded = device.load_model(&path).map(|_| ());
        session.sim.clear_faults();
        match loaded {
            Err(Error::Runtime { call, .. }) => assert_eq!(call, "aclmdlGetDesc"),
            other => panic!("{other:?}"),
        }
        // The failed destroy was reported, and tried again (D3: nothing left behind).
        let reported = errors.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert!(reported[0].contains("aclmdlDestroyDesc"), "{reported:?}");
    }
    ends_clean(session);
}

/// A model whose `aclmdlUnload` fails comes back loaded and whole: its description still
/// answers, it executes, and unloads later.
#[test]
fn md4_a_model_given_back_by_a_failed_unload_is_whole() {
    let path = model_file("unload_fails", &classifier(2, &[1, 2]));
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        let mut model = device.load_dynamic_model(&path).unwrap();
        let mut io = model.create_io(MallocPolicy::HugeFirst).unwrap();
        model.execute_batch(&mut io, 1).unwrap();
        session.sim.inject_fault("aclmdlUnload", 507_000, 1);
        let failed = model.try_unload().unwrap_err();
        session.sim.clear_faults();
        assert!(matches!(
            failed.error,
            Error::Runtime {
                call: "aclmdlUnload",
                ..
            }
        ));
        let mut model = failed.value;
        assert_eq!(model.current_output_dims(0).unwrap()[0], 1);
        model.execute_batch(&mut io, 2).unwrap();
        assert_eq!(model.current_output_dims(0).unwrap()[0], 2);
        drop(io);
        model.unload().unwrap();
    }
    assert_eq!(errors.take(), Vec::<String>::new());
    ends_clean(session);
}

/// One fault in each model-related call, at each of its first four calls, over a file load, a
/// load with caller memory, a load from bytes and a dynamic model in a pipeline: every handle
/// is destroyed or its failure returned or reported; no finding but P2 for reported leaks.
/// (From a red-team round; it found the silent dataset and description leaks.)
#[test]
fn md2_md3_md5_fault_sweep_over_load_io_unload() {
    const CALLS: &[&str] = &[
        "aclmdlLoadFromFile",
        "aclmdlLoadFromFileWithMem",
        "aclmdlLoadFromMem",
        "aclmdlQuerySize",
        "aclmdlCreateDesc",
        "aclmdlGetDesc",
        "aclmdlGetNumInputs",
        "aclmdlGetNumOutputs",
        "aclmdlGetInputSizeByIndex",
        "aclmdlGetOutputSizeByIndex",
        "aclmdlGetInputDims",
        "aclmdlGetOutputDims",
        "aclmdlGetDynamicBatch",
        "aclmdlUnload",
        "aclmdlDestroyDesc",
        "aclrtMalloc",
        "aclrtFree",
        "aclmdlCreateDataset",
        "aclCreateDataBuffer",
        "aclmdlAddDatasetBuffer",
        "aclDestroyDataBuffer",
        "aclmdlDestroyDataset",
        "aclmdlExecute",
        "aclmdlSetDynamicBatchSize",
        "aclrtMemcpy",
    ];
    let dir = support::scratch_dir("typed_models_fault_load");
    let stat = dir.join("s.model");
    let dynamic = dir.join("d.model");
    let small = |gears: &[u64]| {
        SimModel::new(SimDtype::F32, &[2, 4], SimDtype::F32, &[2, 2])
            .batch_gears(gears)
            .matmul(4, 2, &[1.0; 8])
    };
    small(&[]).write(&stat).unwrap();
    small(&[1, 2]).write(&dynamic).unwrap();
    let stat_text = small(&[]).to_text().into_bytes();
    let mut problems = Vec::new();
    let mut failed_runs = 0;
    for call in CALLS {
        for skip in 0..4u32 {
            for source in 0..4 {
                let session = Session::start();
                session.expect_findings();
                let errors = DropErrors::capture();
                let returned;
                {
                    let device = session.default_device(0);
                    session.sim.inject_fault_at(call, 507_000, skip, 1);
                    let run = || -> Result<(), ascend_typestate::Error> {
                        match source {
                            0 => {
                                let mut m = device.load_model(&stat)?;
                                let mut io = m.create_io(MallocPolicy::HugeFirst)?;
                                io.write_input(0, &[1.0f32; 8])?;
                                m.execute(&mut io)?;
                                drop(io);
                                m.unload()
                            }
                            1 => {
                                let (w, wt) = device.model_memory_size(&stat)?;
                                let src = ModelSource::file_with_memory(
                                    &stat,
                                    device.alloc::<u8>(w, MallocPolicy::HugeFirst)?,
                                    device.alloc::<u8>(wt, MallocPolicy::HugeFirst)?,
                                );
                                let mut m = device.load_model(src)?;
                                let mut io = m.create_io(MallocPolicy::HugeFirst)?;
                                m.execute(&mut io)?;
                                m.unload()
                            }
                            2 => {
                                let m = device.load_model(ModelSource::bytes(stat_text.clone()))?;
                                m.unload()
                            }
                            _ => {
                                let mut m = device.load_dynamic_model(&dynamic)?;
                                let mut io = m.create_io(MallocPolicy::HugeFirst)?;
                                m.execute_batch(&mut io, 1)?;
                                let mut p = device
                                    .create_pipeline::<f32, f32>(PipelineConfig::new(8, 4))?;
                                for _ in 0..3 {
                                    let slot = p.next_slot()?;
                                    slot.submit(|l| l.execute_batch(&mut m, 2))?;
                                }
                                p.wait_all()?;
                                p.destroy()?;
                                drop(io);
                                m.unload()
                            }
                        }
                    };
                    let outcome = run();
                    session.sim.clear_faults();
                    returned = outcome.err().map(|e| e.to_string());
                    failed_runs += usize::from(returned.is_some());
                }
                let mut reported = errors.take();
                reported.extend(returned.map(|e| format!("returned: {e}")));
                let live = session.sim.live_objects();
                let findings = session.finish();
                let bad: Vec<_> = findings.iter().filter(|f| f.rule != "P2").collect();
                if !bad.is_empty() || (live > 0 && reported.is_empty()) || live > reported.len() {
                    problems.push(format!(
                        "{call} skip {skip} source {source}: live {live}, reported {reported:?}, findings {findings:?}"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The faults were hit (101 of the 400 runs fail: a call made fewer times than `skip`, or
    // not by that program, is not hit).
    assert!(failed_runs > 80, "{failed_runs} runs failed");
}

// ---- Bounds (issue 23): what the simulator refuses at load or allocation, at once ------

/// Refused quickly: no buffer of the declared size is built, nothing waits.
fn quickly<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let r = f();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{what} took {:?}",
        start.elapsed()
    );
    r
}

/// A model declaring 2^31 elements (8 GiB of f32 input alone) does not fit in the device:
/// 100015 (`ACL_ERROR_MODEL_SIZE_INVALID`) at load, from bytes and from a file, and from
/// `aclmdlQuerySize`; nothing is loaded or allocated.
#[test]
fn md_a_model_larger_than_the_device_is_refused_at_load() {
    let huge = SimModel::new(SimDtype::F32, &[1 << 31], SimDtype::F32, &[1 << 31]);
    let path = model_file("huge", &huge);
    let session = Session::start();
    {
        let device = session.default_device(0);
        let free = device.memory_info(MemoryKind::Hbm).unwrap().free;
        let err = quickly("load from bytes", || {
            device
                .load_model(ModelSource::bytes(huge.to_text().into_bytes()))
                .unwrap_err()
        });
        assert_eq!(err.code(), Some(AclError::ModelSizeInvalid), "{err:?}");
        let err = quickly("load from a file", || device.load_model(&path).unwrap_err());
        assert_eq!(err.code(), Some(AclError::ModelSizeInvalid), "{err:?}");
        let err = quickly("query size", || {
            device.model_memory_size(&path).unwrap_err()
        });
        assert_eq!(err.code(), Some(AclError::ModelSizeInvalid), "{err:?}");
        assert_eq!(device.memory_info(MemoryKind::Hbm).unwrap().free, free);
        assert_eq!(session.sim.live_objects(), 0);
    }
    ends_clean(session);
}

/// A model whose execution could never complete (a time beyond the longest operator
/// execution timeout, P5: 2176 s) is refused at load with 100013 (`ACL_ERROR_PARSE_MODEL`);
/// one at the limit loads.
#[test]
fn md_a_model_that_never_finishes_is_refused_at_load() {
    let tiny = || SimModel::new(SimDtype::F32, &[4], SimDtype::F32, &[4]);
    let forever = tiny().time_per_item(Duration::MAX);
    let path = model_file("forever", &forever);
    let session = Session::start();
    {
        let device = session.default_device(0);
        let err = quickly("load from bytes", || {
            device
                .load_model(ModelSource::bytes(forever.to_text().into_bytes()))
                .unwrap_err()
        });
        assert_eq!(err.code(), Some(AclError::ParseModel), "{err:?}");
        let err = quickly("load from a file", || device.load_model(&path).unwrap_err());
        assert_eq!(err.code(), Some(AclError::ParseModel), "{err:?}");
        let over = tiny().time_per_item(Duration::from_secs(2176) + Duration::from_micros(1));
        let err = device
            .load_model(ModelSource::bytes(over.to_text().into_bytes()))
            .unwrap_err();
        assert_eq!(err.code(), Some(AclError::ParseModel), "{err:?}");
        let at_limit = tiny().time_per_item(Duration::from_secs(2176));
        let model = device
            .load_model(ModelSource::bytes(at_limit.to_text().into_bytes()))
            .unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// A directory or a FIFO as a model path, given to the runtime itself (the raw layer; the
/// typed layer refuses both first, `md_a_real_om_is_a_runtime_error_and_a_bad_path_names_the_file`):
/// 100014 (`ACL_ERROR_READ_MODEL_FAILURE`) at once; a FIFO with no writer is never waited for.
#[test]
fn md_a_model_path_that_is_not_a_regular_file_is_refused_by_the_runtime() {
    let dir = support::scratch_dir("typed_models_not_regular");
    let fifo = dir.join("model.fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let c_dir = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    let session = Session::start();
    {
        let _device = session.default_device(0);
        let api = session.acl().api();
        for path in [&c_dir, &c_path] {
            // SAFETY: the device's default context is current; a model loaded by mistake
            // would be unloaded below.
            let loaded = quickly("load", || unsafe { api.model_load_from_file(path) });
            match loaded {
                Err(err) => assert_eq!(err.code(), Some(AclError::ReadModelFailure), "{err:?}"),
                Ok(id) => panic!("loaded {id} from {path:?}"),
            }
            let err = quickly("query size", || api.model_query_size(path).unwrap_err());
            assert_eq!(err.code(), Some(AclError::ReadModelFailure), "{err:?}");
        }
    }
    ends_clean(session);
}

/// Device memory is enforced (D8): a request beyond the device's free memory fails in
/// `aclrtMalloc` with 207001 before anything is allocated or zeroed, so `Context::alloc`
/// (which zeroes) never touches the memory; the free memory is unchanged.
#[test]
fn m_an_allocation_beyond_the_device_memory_fails_before_touching_it() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let before = device.memory_info(MemoryKind::Hbm).unwrap();
        let err = quickly("alloc 1 TiB", || {
            device
                .alloc::<u8>(1 << 40, MallocPolicy::HugeFirst)
                .unwrap_err()
        });
        assert_eq!(err.code(), Some(AclError::RtMemoryAllocation), "{err:?}");
        let err = quickly("alloc total + 1", || {
            device
                .alloc::<u8>(before.total + 1, MallocPolicy::HugeFirst)
                .unwrap_err()
        });
        assert_eq!(err.code(), Some(AclError::RtMemoryAllocation), "{err:?}");
        let buffer = device
            .alloc::<u8>(1 << 20, MallocPolicy::HugeFirst)
            .unwrap();
        let during = device.memory_info(MemoryKind::Hbm).unwrap();
        assert_eq!(during.free, before.free - (1 << 20));
        drop(buffer);
        assert_eq!(device.memory_info(MemoryKind::Hbm).unwrap(), before);
        assert_eq!(session.sim.live_objects(), 0);
    }
    ends_clean(session);
}

// ---- Element types (MD13, issue 24): checked against the description before anything runs --

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
