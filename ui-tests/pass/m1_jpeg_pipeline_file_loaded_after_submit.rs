// M1: twin of ui-tests/fail/m1_jpeg_pipeline_file_loaded_after_submit.rs, the same program in the legal order (loads the file before `submit`); it compiles.

use ascend_typestate::{Acl, Error, FrameLayout, JpegConfig, PipelineConfig, PixelFormat};

fn program(acl: &Acl, jpeg: &[u8]) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12)?;
    let mut pipeline = ctx.create_jpeg_pipeline::<f32>(
        &media,
        PipelineConfig::new(4096, 3),
        JpegConfig::new(target),
    )?;
    let mut slot = pipeline.next_slot()?;
    slot.load_jpeg(jpeg)?;
    slot.load_jpeg(jpeg)?;
    slot.submit(|_| Ok(()))?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
