// M2: twin of ui-tests/fail/m2_pipeline_destroyed_while_slot_held.rs, the same program in the legal order (uses the slot before destroying the pipeline); it compiles.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn double(x: f32) -> f32 {
    x * 2.0
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    let mut slot = pipeline.next_slot()?;
    slot.input_mut().fill(1.0);
    pipeline.destroy()?;
    let pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
