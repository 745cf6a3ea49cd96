// M1: `submit` consumes the slot, so loading the next file into a slot whose frame is in
// flight (its media memory read by the pending decode, DV6) does not compile (E0382).
// Twin: ui-tests/pass/m1_jpeg_pipeline_file_loaded_after_submit.rs loads the file before `submit`.

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
    slot.submit(|_| Ok(()))?;
    slot.load_jpeg(jpeg)?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
