//! A double-buffered inference pipeline: for each frame, a host-to-device copy and a
//! (simulated) kernel on the `compute` stream, then a device-to-host copy on the `download`
//! stream. The download reads the kernel's output as a `Pending` source written by another
//! stream, so the library joins the two streams with an event (record on `compute`, wait and
//! reset on `download`: E2, E3, E4) and the download never sees stale data. Two frames are in
//! flight per async scope: while `download` copies frame A back, `compute` already uploads
//! and processes frame B. Every buffer is borrowed until its scope has synchronised both
//! streams (M1, M2).
//!
//! ```sh
//! cargo run --example pipeline
//! ACLSIM_TRACE=pipeline.trace.json cargo run --example pipeline   # open in Perfetto
//! ```

use std::time::{Duration, Instant};

use ascend_typestate::{Acl, Error, Stream};
use ascend_typestate::{AsyncScope, DeviceBuffer, MallocPolicy};

const FRAMES: usize = 64;
const FRAME_LEN: usize = 1 << 16;
const KERNEL_TIME: Duration = Duration::from_micros(500);

/// The "model": what the kernel computes per element.
fn infer(x: f32) -> f32 {
    x * 2.0 + 1.0
}

/// One frame: upload and infer on `compute`, download on `download`. Everything borrowed
/// for `'scope` stays borrowed until the scope has synchronised both streams (M1).
fn issue_frame<'scope, 'env>(
    scope: &'scope AsyncScope<'scope, 'env>,
    (compute, download): (&'scope Stream<'_>, &'scope Stream<'_>),
    input: &'scope mut DeviceBuffer<'_, f32>,
    output: &'scope mut DeviceBuffer<'_, f32>,
    result: &'scope mut [f32],
    frame: &'scope [f32],
) -> Result<(), Error> {
    // compute: upload, then the kernel on the uploaded data (same stream: in order, S1).
    let uploaded = scope.copy(compute, input, frame)?;
    let inferred = scope.simulated_map(compute, KERNEL_TIME, uploaded, output, infer)?;
    // download: reads what `compute` writes, so it is joined after the kernel (E2, E3).
    scope.copy(download, result, inferred)?;
    Ok(())
}

fn main() -> Result<(), Error> {
    let acl = Acl::init()?;
    println!("runtime library: {}", acl.library());
    if acl.simulator().is_none() {
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

    let frames: Vec<Vec<f32>> = (0..FRAMES)
        .map(|f| (0..FRAME_LEN).map(|i| (f * FRAME_LEN + i) as f32).collect())
        .collect();
    let mut results: Vec<Vec<f32>> = vec![vec![0.0; FRAME_LEN]; FRAMES];

    let start = Instant::now();
    for (pair, out_pair) in frames.chunks_exact(2).zip(results.chunks_exact_mut(2)) {
        let [in_a, in_b] = &mut inputs;
        let [out_a, out_b] = &mut outputs;
        let (res_a, res_b) = out_pair.split_at_mut(1);
        let streams = (&compute, &download);
        ctx.async_scope(|scope| {
            // Frame A's download overlaps frame B's upload and kernel.
            issue_frame(scope, streams, in_a, out_a, &mut res_a[0], &pair[0])?;
            issue_frame(scope, streams, in_b, out_b, &mut res_b[0], &pair[1])
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
