// M1: the source of an asynchronous copy stays untouched until the copy is done. A
// pipeline slot's input is written through its `Slot` guard, which `submit` consumes: the
// input borrowed from the guard cannot be written once the frame is submitted (E0505).
// Twin: ui-tests/pass/m1_pipeline_input_written_after_submit.rs writes the input before submitting.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn double(x: f32) -> f32 {
    x * 2.0
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    let mut slot = pipeline.next_slot()?;
    let input = slot.input_mut();
    slot.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, double))?;
    input.fill(1.0);
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
