// DV7: a JPEG pipeline's slot takes a file only through `load_jpeg`, which checks it before
// any task; it has no `input_mut` to write unchecked bytes (E0599).
// Twin: ui-tests/pass/dv7_jpeg_pipeline_slot_written_as_raw_bytes.rs loads the file with `load_jpeg`.

use ascend_typestate::{Acl, Error, FrameLayout, JpegConfig, PipelineConfig, PixelFormat};

fn program(acl: &Acl) -> Result<(), Error> {
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
    slot.input_mut().copy_from_slice(&[0xFF; 4096]);
    slot.submit(|_| Ok(()))?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
