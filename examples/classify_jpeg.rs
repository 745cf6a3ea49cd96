//! JPEG classification with the media engine (DVPP V1, DV1-DV11): each JPEG is decoded
//! (JPEGD) and resized (VPC) into media memory that the model takes as its input without a
//! copy (DV11), then the model's top-1 class is copied back. Double-buffered: two streams,
//! each with its own channel, frames and model, so two pictures are in flight in every async
//! scope; everything is created once, before the loop.
//!
//! It writes its own JPEGs (`jpeg-encoder`: plain colours) and, on the simulator, its own
//! model (`SimModel`): input `u8 [1, 32 * 32 * 3 / 2]` (NV12), three scores (the means of the
//! Y, U and V bytes), top-1 by `argmax`: "bright", "blue" or "red". It checks every answer.
//! A real model takes the same YUV420SP input when compiled with static AIPP (README, "Media
//! preprocessing").
//!
//! ```sh
//! cargo run --example classify_jpeg
//! ```

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{Acl, FrameLayout, JpegdVpc, MallocPolicy, PixelFormat};
use jpeg_encoder::{ColorType, Encoder, SamplingFactor};

/// The resize output, the model's input: SIDE x SIDE NV12.
const SIDE: u32 = 32;
const CLASSES: [&str; 3] = ["bright", "blue", "red"];

fn jpeg(rgb: [u8; 3], width: u16, height: u16) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let pixels: Vec<u8> = (0..usize::from(width) * usize::from(height))
        .flat_map(|_| rgb)
        .collect();
    let mut out = Vec::new();
    let mut encoder = Encoder::new(&mut out, 90);
    encoder.set_sampling_factor(SamplingFactor::R_4_2_0);
    encoder.encode(&pixels, width, height, ColorType::Rgb)?;
    Ok(out)
}

/// Scores: the mean of the Y plane, of the U bytes and of the V bytes of an NV12 picture.
fn model(bytes: usize) -> SimModel {
    let luma = bytes * 2 / 3;
    let mut weights = vec![0.0f32; bytes * 3];
    for i in 0..bytes {
        let class = if i < luma { 0 } else { 1 + (i - luma) % 2 };
        let count = if class == 0 { luma } else { (bytes - luma) / 2 };
        weights[i * 3 + class] = 1.0 / count as f32;
    }
    SimModel::new(SimDtype::U8, &[1, bytes], SimDtype::I32, &[1])
        .matmul(bytes, 3, &weights)
        .argmax(3)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = FrameLayout::resized(SIDE, SIDE, PixelFormat::Nv12)?;
    let path = std::env::temp_dir().join(format!("classify-jpeg-{}.model", std::process::id()));
    model(target.byte_len()).write(&path)?;
    let pictures = [
        ([240, 240, 240], "bright", 320, 240),
        ([20, 30, 230], "blue", 500, 375),
        ([230, 20, 20], "red", 64, 64),
        ([10, 250, 10], "bright", 100, 80),
    ];
    let jpegs = pictures
        .iter()
        .map(|&(rgb, class, w, h)| Ok((jpeg(rgb, w, h)?, class)))
        .collect::<Result<Vec<_>, Box<dyn std::error::Error>>>()?;

    let acl = Acl::init()?;
    println!("runtime: {}", acl.library());
    let ctx = acl.set_device(0)?.into_default_context()?;
    let media = acl.media_v1()?;
    // Two of everything: one per stream (a channel serves one stream per scope, DV4; a model
    // executes once per scope, MD8).
    let mut lanes = Vec::new();
    for _ in 0..2 {
        lanes.push((
            ctx.create_stream()?,
            ctx.create_media_channel::<JpegdVpc>(&media)?,
            ctx.alloc_jpeg(&media, 256 * 1024)?,
            ctx.alloc_frame(&media, 512 * 384 * 3 / 2)?,
            ctx.alloc_frame(&media, target.byte_len())?,
            ctx.load_model(&path)?,
            ctx.alloc::<i32>(1, MallocPolicy::HugeFirst)?,
        ));
    }
    std::fs::remove_file(&path)?;
    let mut checked = 0;
    for round in 0..8 {
        let pair = [
            &jpegs[(2 * round) % jpegs.len()],
            &jpegs[(2 * round + 1) % jpegs.len()],
        ];
        for ((_, _, input, ..), (bytes, _)) in lanes.iter_mut().zip(pair) {
            input.load(bytes)?; // the header checked first (DV7)
        }
        ctx.async_scope(|scope| {
            for (stream, channel, input, decoded, resized, model, top) in lanes.iter_mut() {
                let tasks = scope.media(channel, stream)?;
                let frame = tasks.decode_jpeg(input, decoded, PixelFormat::Nv12)?;
                let picture = tasks.resize(frame, resized, target)?;
                scope.execute(stream, model, [picture.into()], [top.into()])?;
            }
            Ok(())
        })?;
        for ((.., top), (_, expected)) in lanes.iter().zip(pair) {
            let mut class = [0i32];
            ctx.copy(&mut class[..], top)?;
            let name = usize::try_from(class[0])
                .ok()
                .and_then(|c| CLASSES.get(c))
                .copied()
                .unwrap_or("?");
            println!("round {round}: a {expected} picture, top-1: {name}");
            if name != *expected {
                return Err(format!("expected {expected}, the model said {name}").into());
            }
            checked += 1;
        }
    }
    println!("{checked} pictures classified, every answer checked");
    Ok(())
}
