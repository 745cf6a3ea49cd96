// M1: twin of ui-tests/fail/m1_pipeline_input_written_after_submit.rs, the same program in the legal order (writes the input before submitting); it compiles.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn double(x: f32) -> f32 {
    x * 2.0
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    let mut slot = pipeline.next_slot()?;
    let input = slot.input_mut();
    input.fill(1.0);
    slot.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, double))?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
