// DV1: twin of ui-tests/fail/dv1_jpeg_pipeline_outlives_the_media_token.rs, the same program in the legal order (destroys the pipeline before the token); it compiles.

use ascend_typestate::{Acl, Error, FrameLayout, JpegConfig, PipelineConfig, PixelFormat};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12)?;
    let pipeline = ctx.create_jpeg_pipeline::<f32>(
        &media,
        PipelineConfig::new(4096, 3),
        JpegConfig::new(target),
    )?;
    pipeline.destroy()?;
    drop(media);
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
