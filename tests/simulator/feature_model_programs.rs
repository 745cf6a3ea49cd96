//! The programs of the feature fault sweep (`fault_sweep_features`) that run models: `models`
//! (pipelines with a simulated kernel and with models, run by another thread, going on after
//! a failed frame; models executed synchronously, static and dynamic-batch, loaded with their
//! memory and from bytes) and `scoped_models` (models executed in async scopes).

use crate::support;

use std::path::Path;
use std::time::Duration;

use ascend_typestate::{
    DYNAMIC_BATCH_INPUT, Error, MallocPolicy, ModelSource, PipelineConfig, Result,
};
use support::sweep::{self, Fault, self_check};

use super::fault_sweep_features::{
    BIAS, CLASSES, FEATURES, ROWS, classifier, expect_nothing_alive, frame_input, init,
    on_another_thread, static_model_file, weights,
};

/// What the classifier computes for `input` (rows of `FEATURES`).
fn classify(input: &[f32]) -> Vec<f32> {
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

fn close(found: &[f32], want: &[f32]) -> bool {
    found.len() == want.len() && found.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-3)
}

/// Models in a created context: a static model loaded with its memory (MD2) and a
/// dynamic-batch model loaded from bytes (MD3), executed synchronously through `ModelIo`,
/// then both in one pipeline (`Launch::execute`, `Launch::execute_batch`), a slot switching
/// between them, then synchronously again.
pub(crate) fn models(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let file = static_model_file();
    let acl = init(path, fault)?;
    let sim = acl.simulator().expect("self-check: the simulator");
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;

    let (work, weight) = ctx.model_memory_size(file)?;
    let source = ModelSource::file_with_memory(
        file,
        ctx.alloc::<u8>(work, MallocPolicy::HugeFirst)?,
        ctx.alloc::<u8>(weight, MallocPolicy::HugeFirst)?,
    );
    let mut model = ctx.load_model(source)?;
    let mut io = model.create_io(MallocPolicy::HugeFirst)?;
    let mut output = [0.0f32; ROWS * CLASSES];
    for n in 0..2 {
        let input = frame_input(n);
        io.write_input(0, &input)?;
        model.execute(&mut io)?;
        io.read_output(0, &mut output)?;
        self_check(
            close(&output, &classify(&input)),
            "self-check: a synchronous execution",
        )?;
    }

    let text = classifier(&[1, 2]).to_text().into_bytes();
    let mut dynamic = ctx.load_dynamic_model(ModelSource::bytes(text))?;
    let data = dynamic
        .inputs()
        .iter()
        .position(|t| t.name() != DYNAMIC_BATCH_INPUT)
        .unwrap_or(0);
    let mut dyn_io = dynamic.create_io(MallocPolicy::NormalOnly)?;
    for batch in [1u64, 2] {
        let input = frame_input(batch + 10);
        dyn_io.write_input(data, &input)?;
        dynamic.execute_batch(&mut dyn_io, batch)?;
        let mut output = [f32::NAN; ROWS * CLASSES];
        dyn_io.read_output(0, &mut output)?;
        let rows = batch as usize;
        self_check(
            close(
                &output[..rows * CLASSES],
                &classify(&input[..rows * FEATURES]),
            ),
            "self-check: a dynamic-batch execution",
        )?;
        self_check(
            dynamic.current_output_dims(0)? == vec![batch as i64, CLASSES as i64],
            "self-check: the current output dims",
        )?;
    }

    // Both models in one pipeline, on another thread (the models move there: Send, MD8):
    // slot 0 runs frames 0, 2, 4 (static, dynamic, static). A frame that fails is not retried: the loop goes on with the next one (the slot is
    // settled first), as an inference loop would; the first error is returned at the end,
    // after the whole teardown.
    let first_error = on_another_thread(|| -> Result<Option<Error>> {
        let uses_dynamic = |n: u64| n % 3 == 2;
        let mut pipeline =
            ctx.create_pipeline::<f32, f32>(PipelineConfig::new(ROWS * FEATURES, ROWS * CLASSES))?;
        let mut first_error: Option<Error> = None;
        let mut failures = 0;
        let mut recover = |error: Error| -> Result<()> {
            if error.to_string().contains(sweep::SELF_CHECK) {
                return Err(error);
            }
            failures += 1;
            first_error.get_or_insert(error);
            self_check(
                failures <= 6,
                "self-check: the pipeline recovers (within 6 failures)",
            )
        };
        let mut frames = 0;
        while frames < 5 {
            let step = pipeline.next_slot().and_then(|mut slot| {
                if let Some((n, output)) = slot.output() {
                    self_check(
                        close(output, &classify(&frame_input(n))),
                        "self-check: a pipelined execution",
                    )?;
                }
                let n = slot.frame();
                slot.input_mut().copy_from_slice(&frame_input(n));
                if uses_dynamic(n) {
                    slot.submit(|launch| launch.execute_batch(&mut dynamic, 2))
                } else {
                    slot.submit(|launch| launch.execute(&mut model))
                }
            });
            match step {
                Ok(_) => frames += 1,
                Err(error) => recover(error)?,
            }
        }
        while let Err(error) = pipeline.wait_all() {
            recover(error)?;
        }
        let mut seen = 0;
        for (n, output) in pipeline.outputs() {
            self_check(
                close(output, &classify(&frame_input(n))),
                "self-check: a last pipelined execution",
            )?;
            seen += 1;
        }
        self_check(
            seen == 2 || first_error.is_some(),
            "self-check: the last two frames",
        )?;
        self_check(
            model.pending() == 0 && dynamic.pending() == 0,
            "self-check: nothing pending once the frames are done",
        )?;
        pipeline.destroy()?;
        Ok(first_error)
    })?;

    // Synchronously again, once nothing is pending (MD7, MD8).
    let input = frame_input(99);
    io.write_input(0, &input)?;
    model.execute(&mut io)?;
    io.read_output(0, &mut output)?;
    self_check(
        close(&output, &classify(&input)),
        "self-check: an execution after the pipeline",
    )?;

    drop(dyn_io);
    dynamic.unload()?;
    drop(io);
    model.unload()?;
    ctx.destroy()?;
    expect_nothing_alive(&sim, "Context::destroy");
    let device = device.reset()?;
    expect_nothing_alive(&sim, "Device::reset");
    drop(device);
    acl.finalize()?;
    first_error.map_or(Ok(()), Err)
}

/// A model executed asynchronously in async scopes on streams of the program's choice
/// (`AsyncScope::execute`): upload and a preprocessing kernel on one stream, the model and the
/// download on another (a join), the same buffers twice (datasets kept), other buffers once
/// (datasets rebuilt), a dynamic model's gears; a scope left by an error mid-way; every
/// model dropped or unloaded with its datasets. Nothing may be lost on any path.
pub(crate) fn scoped_models(path: &Path, fault: Option<&Fault>) -> Result<()> {
    fn halve(x: f32) -> f32 {
        x * 0.5
    }
    let file = static_model_file();
    let acl = init(path, fault)?;
    let sim = acl.simulator().expect("self-check: the simulator");
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let (upload, run) = (ctx.create_stream()?, ctx.create_stream()?);
    let mut model = ctx.load_model(file)?;
    let mut staged = ctx.alloc::<f32>(ROWS * FEATURES, MallocPolicy::HugeFirst)?;
    let mut input = ctx.alloc::<f32>(ROWS * FEATURES, MallocPolicy::HugeFirst)?;
    let mut output = ctx.alloc::<f32>(ROWS * CLASSES, MallocPolicy::HugeFirst)?;
    let mut other_output = ctx.alloc::<f32>(ROWS * CLASSES, MallocPolicy::NormalOnly)?;
    for n in 0..3u64 {
        let host: Vec<f32> = frame_input(n).iter().map(|x| x * 2.0).collect();
        let mut scores = [f32::NAN; ROWS * CLASSES];
        let out = if n == 2 {
            &mut other_output
        } else {
            &mut output
        };
        ctx.async_scope(|scope| {
            let up = scope.copy(&upload, &mut staged, &host[..])?;
            let pre =
                scope.simulated_map(&upload, Duration::from_micros(200), up, &mut input, halve)?;
            let done = scope.execute(&run, &mut model, [pre.into()], [out.into()])?;
            scope.copy(&run, &mut scores[..], done.output::<f32>(0)?)?;
            Ok(())
        })?;
        self_check(
            close(&scores, &classify(&frame_input(n))),
            "self-check: a scoped execution after a kernel on another stream",
        )?;
    }

    let text = classifier(&[1, 2]).to_text().into_bytes();
    let mut dynamic = ctx.load_dynamic_model(ModelSource::bytes(text))?;
    for batch in [2u64, 1] {
        let host = frame_input(batch + 20);
        let mut scores = [f32::NAN; ROWS * CLASSES];
        ctx.async_scope(|scope| {
            let up = scope.copy(&run, &mut input, &host[..])?;
            let done = scope.execute_batch(
                &run,
                &mut dynamic,
                batch,
                [up.into()],
                [(&mut output).into()],
            )?;
            scope.copy(&run, &mut scores[..], done.output::<f32>(0)?)?;
            Ok(())
        })?;
        let rows = batch as usize;
        self_check(
            close(
                &scores[..rows * CLASSES],
                &classify(&host[..rows * FEATURES]),
            ),
            "self-check: a scoped dynamic-batch execution",
        )?;
    }
    // A scope whose body fails after the execution: synchronised all the same (M1).
    let refused = ctx.async_scope(|scope| {
        scope.execute(&run, &mut model, [(&input).into()], [(&mut output).into()])?;
        Err::<(), _>(Error::InvalidArgument("the body's own error"))
    });
    match refused {
        Err(Error::InvalidArgument("the body's own error")) => {}
        // The injected failure of the execution itself.
        Err(error) => return Err(error),
        Ok(()) => self_check(false, "self-check: the body's error comes first")?,
    }

    drop(dynamic);
    model.unload()?;
    for buffer in [staged, input, output, other_output] {
        buffer.free()?;
    }
    upload.destroy()?;
    run.destroy()?;
    ctx.destroy()?;
    expect_nothing_alive(&sim, "Context::destroy");
    device.reset()?;
    acl.finalize()
}
