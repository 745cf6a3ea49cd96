// DV7: a tensor pipeline (`Pipeline<I, O>`) has no media stage: `load_jpeg` exists only on
// a `JpegPipeline`'s slots (E0599), so a file is never copied in as a tensor by mistake.
// Twin: ui-tests/pass/dv7_tensor_pipeline_given_a_jpeg.rs creates a `JpegPipeline` for the file.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn program(acl: &Acl, jpeg: &[u8]) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let mut pipeline = ctx.create_pipeline::<u8, f32>(PipelineConfig::new(4096, 3))?;
    let mut slot = pipeline.next_slot()?;
    slot.load_jpeg(jpeg)?;
    slot.submit(|_| Ok(()))?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
