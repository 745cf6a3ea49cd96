//! Faults injected into every media call (and the copies and synchronisations around them)
//! of typed decode and resize programs, swept with the engine of `support/sweep.rs`: each
//! call fails once (`media_fault_sweep_once`) or twice in a row (`media_fault_sweep_twice`)
//! at each of its occurrences. A case must return the injected error, or recover and
//! report it; leave no checker finding and nothing alive; and finalize the runtime.
//!
//! Programs: `flow` (token, channel, buffers and frames; two scopes of decode and resize,
//! each result checked; explicit teardown), `drops` (the same ended by `Drop` right after a
//! scope whose body fails with the tasks pending), `jpeg_pipeline` (a double-buffered JPEG
//! pipeline of three frames, each classified by a model and checked; explicit teardown).

use crate::common::{LUMA, jpeg};
use crate::support;

use std::path::Path;

use ascend_typestate::sys::dvpp::DVPP_SYMBOLS;
use ascend_typestate::{
    Acl, Error, FrameLayout, InitOptions, JpegConfig, JpegdVpc, PipelineConfig, PixelFormat, Result,
};
use support::sweep::{self, Fault, Sweep, self_check};

fn init(path: &Path, fault: Option<&Fault>) -> Result<Acl> {
    let acl = Acl::init_with(&InitOptions::default().library(path))?;
    sweep::arm(&acl, fault);
    Ok(acl)
}

fn flow(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let bytes = jpeg(130, 98, false);
    let acl = init(path, fault)?;
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let mut input = ctx.alloc_jpeg(&media, 16 * 1024)?;
    let mut decoded = ctx.alloc_frame(&media, 192 * 112 * 3 / 2)?;
    let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2)?;
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12)?;
    for _ in 0..2 {
        input.load(&bytes)?;
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })?;
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized)?;
        self_check(
            small[..32 * 32].iter().all(|y| y.abs_diff(LUMA) <= 3),
            "self-check: the resized picture's luma",
        )?;
    }
    channel.destroy()?;
    drop((input, decoded, resized));
    stream.destroy()?;
    drop(media);
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

fn drops(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let bytes = jpeg(64, 64, false);
    let acl = init(path, fault)?;
    {
        let device = acl.set_device(0)?;
        let ctx = device.create_context()?;
        let media = acl.media_v1()?;
        let stream = ctx.create_stream()?;
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
        let mut input = ctx.alloc_jpeg(&media, 16 * 1024)?;
        let mut decoded = ctx.alloc_frame(&media, 64 * 64 * 3 / 2)?;
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2)?;
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv21)?;
        input.load(&bytes)?;
        let ended = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Err::<(), _>(Error::InvalidArgument("self-check: the body's own error"))
        });
        match ended {
            Err(Error::InvalidArgument("self-check: the body's own error")) => {}
            Err(error) => return Err(error),
            Ok(()) => return self_check(false, "self-check: the body's error is returned"),
        }
    }
    acl.finalize()?;
    Ok(())
}

fn jpeg_pipeline(path: &Path, fault: Option<&Fault>) -> Result<()> {
    let bytes = jpeg(96, 64, false);
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12)?;
    let model = crate::pipeline::model_file("media_fault_sweep_jpeg_pipeline", target.byte_len());
    let acl = init(path, fault)?;
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let mut model = ctx.load_model(&model)?;
    let mut pipeline = ctx.create_jpeg_pipeline::<i32>(
        &media,
        PipelineConfig::new(16 * 1024, 1),
        JpegConfig::new(target).max_picture(96, 64),
    )?;
    let mut outputs = 0;
    for _ in 0..3 {
        let mut slot = pipeline.next_slot()?;
        if let Some((_, class)) = slot.output() {
            // The fixture's colour (200, 100, 50) is V-heaviest: class 2.
            self_check(class == [2], "self-check: a frame's class")?;
            outputs += 1;
        }
        slot.load_jpeg(&bytes)?;
        slot.submit(|launch| launch.execute(&mut model))?;
    }
    pipeline.wait_all()?;
    for (_, class) in pipeline.outputs() {
        self_check(class == [2], "self-check: a frame's class")?;
        outputs += 1;
    }
    self_check(outputs == 3, "self-check: every frame's output")?;
    pipeline.destroy()?;
    model.unload()?;
    drop(media);
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

/// The media functions, and the runtime calls the media layer makes around them.
fn functions() -> Vec<&'static str> {
    let mut all = DVPP_SYMBOLS.to_vec();
    all.extend_from_slice(&[
        "aclrtMemcpy",
        "aclrtMemset",
        "aclrtSynchronizeStream",
        "aclrtMemcpyAsync",
        "aclmdlExecuteAsync",
        "aclrtRecordEvent",
        "aclrtStreamWaitEvent",
        "aclrtResetEvent",
        "aclrtSynchronizeEvent",
    ]);
    all
}

const SWEEP: Sweep = Sweep {
    name: "media fault sweep",
    worker_test: "media_fault_sweep_worker",
    programs: &[
        ("flow", flow),
        ("drops", drops),
        ("jpeg_pipeline", jpeg_pipeline),
    ],
    functions,
    codes: sweep::default_codes,
    check: sweep::no_check,
    expected_reports: &["the body's own error"],
};

#[test]
fn media_fault_sweep_worker() {
    sweep::worker(&SWEEP);
}

#[test]
fn media_fault_sweep_once() {
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return;
    }
    // Its clean runs initialise the runtime outside any `Session`: a process of its own.
    if support::child::own_process("media_fault_sweep_once") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 1);
    support::child::passed("media_fault_sweep_once");
}

#[test]
fn media_fault_sweep_twice() {
    if std::env::var_os(sweep::WORKER_ENV).is_some() {
        return;
    }
    if support::child::own_process("media_fault_sweep_twice") {
        return;
    }
    sweep::run_and_assert(&SWEEP, 2);
    support::child::passed("media_fault_sweep_twice");
}
