// M2: memory is freed only after every use of it. Destroying a pipeline frees its slots'
// buffers; a `Slot` guard borrows the pipeline, so the pipeline cannot be destroyed (moved)
// while the host still holds a slot's buffers (E0505).
// Twin: ui-tests/pass/m2_pipeline_destroyed_while_slot_held.rs uses the slot before destroying the pipeline.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn double(x: f32) -> f32 {
    x * 2.0
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    let mut slot = pipeline.next_slot()?;
    pipeline.destroy()?;
    slot.input_mut().fill(1.0);
    let pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
