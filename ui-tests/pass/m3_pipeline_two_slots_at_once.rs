// M3: twin of ui-tests/fail/m3_pipeline_two_slots_at_once.rs, the same program in the legal order (submits the first slot before taking the second); it compiles.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn double(x: f32) -> f32 {
    x * 2.0
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    let first = pipeline.next_slot()?;
    first.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, double))?;
    let second = pipeline.next_slot()?;
    second.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, double))?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
