//! A double-buffered inference pipeline: for each frame, a host-to-device copy and a
//! (simulated) kernel on the `compute` stream, then a device-to-host copy on the `download`
//! stream, which waits for the kernel through an event (E2, E3, E4). Two frames are in
//! flight per async scope: while `download` copies frame A back, `compute` already uploads
//! and processes frame B. Every buffer is borrowed until its scope has synchronised both
//! streams (M1, M2), and the events are recorded, waited and reset in the order the types
//! allow (E1-E5).
//!
//! ```sh
//! cargo run --example pipeline
//! ACLSIM_TRACE=pipeline.trace.json cargo run --example pipeline   # open in Perfetto
//! ```

use std::time::{Duration, Instant};

use ascend_typestate::memory::{AsyncScope, DeviceBuffer, MallocPolicy};
use ascend_typestate::{Acl, Error, Event, Reset, Stream};

const FRAMES: usize = 64;
const FRAME_LEN: usize = 1 << 16;
const KERNEL_TIME: Duration = Duration::from_micros(500);

/// The "model": what the kernel computes per element.
fn infer(x: f32) -> f32 {
    x * 2.0 + 1.0
}

/// One frame: upload and infer on `compute`, hand over through `event`, download on
/// `download`. Everything borrowed for `'scope` stays borrowed until the scope has
/// synchronised both streams (M1).
#[allow(clippy::too_many_arguments)]
fn issue_frame<'scope, 'env, 'e: 'scope>(
    scope: &'scope AsyncScope<'scope, 'env>,
    compute: &'e Stream<'e>,
    download: &'e Stream<'e>,
    input: &'scope mut DeviceBuffer<'e, f32>,
    output: &'scope mut DeviceBuffer<'e, f32>,
    event: Event<'e, Reset>,
    result: &'scope mut [f32],
    frame: &'scope [f32],
) -> Result<Event<'e, Reset>, Error> {
    let not_device = || Error::InvalidArgument("expected device memory");
    // compute: upload, then the kernel, then record the hand-over (E2).
    let uploaded = scope
        .copy(compute, input, frame)?
        .device()
        .ok_or_else(not_device)?;
    let inferred = scope.simulated_map(compute, KERNEL_TIME, uploaded, output, infer)?;
    let ready = event.record(compute)?;
    // download: wait for the kernel (E3) and reset (E4), then copy the result back.
    let event = ready.wait(download, |waited| waited.reset())?;
    scope.copy(download, result, inferred.device().ok_or_else(not_device)?)?;
    Ok(event)
}

fn main() -> Result<(), Error> {
    let acl = Acl::init()?;
    let api = acl.api();
    println!(
        "loaded {} (simulator: {})",
        api.path().display(),
        api.is_simulator()
    );
    if !api.is_simulator() {
        println!("the kernel of this example is simulated: run it without an Ascend runtime");
        return Ok(());
    }
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let compute = ctx.create_stream()?;
    let download = ctx.create_stream()?;

    // Two slots: device input, device output, and the event that hands the output over.
    let mut inputs = [
        ctx.alloc::<f32>(FRAME_LEN, MallocPolicy::HugeFirst)?,
        ctx.alloc::<f32>(FRAME_LEN, MallocPolicy::HugeFirst)?,
    ];
    let mut outputs = [
        ctx.alloc::<f32>(FRAME_LEN, MallocPolicy::HugeFirst)?,
        ctx.alloc::<f32>(FRAME_LEN, MallocPolicy::HugeFirst)?,
    ];
    let mut events: [Event<'_, Reset>; 2] =
        [ctx.create_event()?.into(), ctx.create_event()?.into()];

    let frames: Vec<Vec<f32>> = (0..FRAMES)
        .map(|f| (0..FRAME_LEN).map(|i| (f * FRAME_LEN + i) as f32).collect())
        .collect();
    let mut results: Vec<Vec<f32>> = vec![vec![0.0; FRAME_LEN]; FRAMES];

    let start = Instant::now();
    for (pair, out_pair) in frames.chunks(2).zip(results.chunks_mut(2)) {
        let [in_a, in_b] = &mut inputs;
        let [out_a, out_b] = &mut outputs;
        let [ev_a, ev_b] = events;
        let [res_a, res_b] = out_pair else {
            unreachable!("FRAMES is even")
        };
        events = ctx.async_scope(|scope| {
            // Frame A's download overlaps frame B's upload and kernel.
            let a = issue_frame(
                scope, &compute, &download, in_a, out_a, ev_a, res_a, &pair[0],
            )?;
            let b = issue_frame(
                scope, &compute, &download, in_b, out_b, ev_b, res_b, &pair[1],
            )?;
            Ok([a, b])
        })?;
    }
    let elapsed = start.elapsed();

    for (f, (frame, result)) in frames.iter().zip(&results).enumerate() {
        let expected: Vec<f32> = frame.iter().copied().map(infer).collect();
        assert_eq!(result, &expected, "frame {f}");
    }
    let serial = KERNEL_TIME * FRAMES as u32;
    println!(
        "{FRAMES} frames of {} KiB in {:.1} ms (kernels alone: {:.1} ms); every result checked",
        FRAME_LEN * 4 / 1024,
        elapsed.as_secs_f64() * 1e3,
        serial.as_secs_f64() * 1e3
    );

    for event in events {
        event.destroy()?;
    }
    for buffer in inputs.into_iter().chain(outputs) {
        buffer.free()?;
    }
    compute.destroy()?;
    download.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    if let Some(sim) = acl.simulator() {
        println!("simulator findings: {}", sim.findings().len());
    }
    acl.finalize()?;
    Ok(())
}
