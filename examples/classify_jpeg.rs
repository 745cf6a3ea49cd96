//! JPEG classification with the media engine (DVPP V1, DV1-DV11) in a [`JpegPipeline`]: each
//! JPEG is decoded (JPEGD) and resized (VPC) on the pipeline's compute stream into media
//! memory that the model takes as its input without a copy (DV11), then the model's top-1
//! class is copied back on the download stream. Double-buffered: while one frame's class is
//! copied back, the next picture is decoded; everything is created once, before the loop.
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
//!
//! [`JpegPipeline`]: ascend_typestate::JpegPipeline

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{Acl, FrameLayout, JpegConfig, PipelineConfig, PixelFormat};
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
    let mut model = ctx.load_model(&path)?;
    std::fs::remove_file(&path)?;
    let mut pipeline = ctx.create_jpeg_pipeline::<i32>(
        &media,
        PipelineConfig::new(256 * 1024, 1), // JPEG bytes, output elements (the class)
        JpegConfig::new(target).max_picture(512, 384),
    )?;
    let name = |class: i32| {
        usize::try_from(class)
            .ok()
            .and_then(|c| CLASSES.get(c))
            .copied()
            .unwrap_or("?")
    };
    let mut checked = 0;
    let mut check = |frame: u64, class: i32| -> Result<(), String> {
        let expected = jpegs[frame as usize % jpegs.len()].1;
        println!(
            "frame {frame}: a {expected} picture, top-1: {}",
            name(class)
        );
        if name(class) != expected {
            return Err(format!(
                "expected {expected}, the model said {}",
                name(class)
            ));
        }
        checked += 1;
        Ok(())
    };
    for frame in 0..16 {
        let mut slot = pipeline.next_slot()?; // its previous frame is done (M3)
        if let Some((done, class)) = slot.output() {
            check(done, class[0])?;
        }
        // The header, sizes and length checked before any task (DV7-DV9).
        slot.load_jpeg(&jpegs[frame % jpegs.len()].0)?;
        slot.submit(|launch| launch.execute(&mut model))?;
    }
    pipeline.wait_all()?;
    for (done, class) in pipeline.outputs() {
        check(done, class[0])?;
    }
    pipeline.destroy()?;
    model.unload()?;
    println!("{checked} pictures classified, every answer checked");
    Ok(())
}
