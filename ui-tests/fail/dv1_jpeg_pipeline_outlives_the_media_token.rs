// DV1: a JPEG pipeline owns a media channel, which borrows the process-wide media token, so
// dropping the token while the pipeline lives does not compile (E0505).
// Twin: ui-tests/pass/dv1_jpeg_pipeline_outlives_the_media_token.rs destroys the pipeline before the token.

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
    drop(media);
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
