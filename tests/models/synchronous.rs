//! Models (MD1-MD13) executed synchronously through the typed API, on the simulator's text
//! models: a static and a dynamic model compute the model's function (each gear, MD11, MD12),
//! loads with caller memory and from bytes keep it until unload (MD2, MD3), device run mode
//! reads the outputs in place, and a file that is not a model names itself. Every test ends
//! with zero checker findings and no live runtime object.

use crate::support;

use std::path::PathBuf;
use std::process::Command;

use ascend_typestate::{
    AclError, DYNAMIC_BATCH_INPUT, Dynamic, Error, MallocPolicy, Model, ModelSource,
};
use support::sim::Session;

use super::common::{
    CLASSES, FEATURES, assert_close, classifier, ends_clean, expected, frame_input, model_file,
};

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
/// file is refused before the runtime is called, naming the file (a FIFO would
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
