//! A model with several inputs and outputs of different types, executed asynchronously on
//! streams of the program's choice ([`AsyncScope::execute`]): an image and its `i32` size go
//! up on one stream, a preprocessing kernel scales the image there, the model runs on a
//! second stream (ordered after both by a join), and its `f32` scores and `i32` counts come
//! back on a third. Every buffer stays borrowed until the scope has synchronised the streams
//! it used (M1); element types and sizes are checked against the model's description before
//! anything runs (MD10, MD13).
//!
//! On the simulator it runs out of the box: it writes a small model in the simulator's format
//! (`SimModel`: inputs `f32 [16]` and `i32 [2]`, outputs `f32 [12]` and `i32 [6]`, each value
//! scaled by 2) and checks every result against the same computation on the CPU. The
//! preprocessing kernel is the simulator's synthetic one (`simulated_map`); on a board it is
//! your own kernel.
//!
//! ```sh
//! cargo run --example detect
//! ```
//!
//! [`AsyncScope::execute`]: ascend_typestate::AsyncScope::execute

use std::time::Duration;

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{Acl, Error, MallocPolicy};

const PIXELS: usize = 16;
const SCORES: usize = 12;
const COUNTS: usize = 6;

/// The preprocessing kernel: pixels from 0..255 to 0..1.
fn normalise(x: f32) -> f32 {
    x / 255.0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("detect-{}.model", std::process::id()));
    SimModel::new(SimDtype::F32, &[PIXELS], SimDtype::F32, &[SCORES])
        .and_input(SimDtype::I32, &[2])
        .and_output(SimDtype::I32, &[COUNTS])
        .scale(2.0)
        .write(&path)?;

    let acl = Acl::init()?;
    println!("runtime: {}", acl.library());
    let ctx = acl.set_device(0)?.into_default_context()?;
    let mut model = ctx.load_model(&path)?;
    std::fs::remove_file(&path)?;
    for (i, t) in model.inputs().iter().enumerate() {
        println!("input {i}: {} {:?} {:?}", t.name(), t.data_type(), t.dims());
    }
    for (i, t) in model.outputs().iter().enumerate() {
        println!(
            "output {i}: {} {:?} {:?}",
            t.name(),
            t.data_type(),
            t.dims()
        );
    }
    let (upload, infer, download) = (
        ctx.create_stream()?,
        ctx.create_stream()?,
        ctx.create_stream()?,
    );
    // Allocated once: the model keeps its datasets over the same buffers (nothing is created
    // per frame).
    let mut raw = ctx.alloc::<f32>(PIXELS, MallocPolicy::HugeFirst)?;
    let mut image = ctx.alloc::<f32>(PIXELS, MallocPolicy::HugeFirst)?;
    let mut size = ctx.alloc::<i32>(2, MallocPolicy::HugeFirst)?;
    let mut d_scores = ctx.alloc::<f32>(SCORES, MallocPolicy::HugeFirst)?;
    let mut d_counts = ctx.alloc::<i32>(COUNTS, MallocPolicy::HugeFirst)?;

    for frame in 0..5u8 {
        let pixels: Vec<f32> = (0..PIXELS)
            .map(|i| f32::from(frame * 10 + i as u8))
            .collect();
        let dims = [4 + i32::from(frame), 4];
        let (mut scores, mut counts) = ([0.0f32; SCORES], [0i32; COUNTS]);
        ctx.async_scope(|scope| {
            let up = scope.copy(&upload, &mut raw, &pixels[..])?;
            let ready = scope.simulated_map(
                &upload,
                Duration::from_micros(200),
                up,
                &mut image,
                normalise,
            )?;
            let size = scope.copy(&upload, &mut size, &dims[..])?;
            let run = scope.execute(
                &infer,
                &mut model,
                [ready.into(), size.into()],
                [(&mut d_scores).into(), (&mut d_counts).into()],
            )?;
            scope.copy(&download, &mut scores[..], run.output::<f32>(0)?)?;
            scope.copy(&download, &mut counts[..], run.output::<i32>(1)?)?;
            Ok(())
        })?;
        // What the model computes: every value of both inputs, in order, times two.
        let want: Vec<f32> = pixels
            .iter()
            .map(|p| normalise(*p))
            .chain(dims.iter().map(|d| *d as f32))
            .map(|v| v * 2.0)
            .collect();
        let close = scores.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5);
        let want_counts: Vec<i32> = want[SCORES..].iter().map(|v| v.round() as i32).collect();
        if !close || counts[..] != want_counts[..] {
            return Err(Box::new(Error::InvalidArgument(
                "the model's outputs differ from the CPU's computation",
            )));
        }
        println!(
            "frame {frame}: scores[0..3] = {:?}, counts = {counts:?}",
            &scores[..3]
        );
    }

    model.unload()?;
    for buffer in [raw, image, d_scores] {
        buffer.free()?;
    }
    size.free()?;
    d_counts.free()?;
    upload.destroy()?;
    infer.destroy()?;
    download.destroy()?;
    let device = ctx.release_default_context()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}
