// M3: a slot is handed out only once its previous frame is proven done, and the pipeline
// decides which: the `Slot` guard borrows the pipeline mutably, so two slots cannot be held
// at once (E0499), and no slot can be taken while another is being filled.
// Twin: ui-tests/pass/m3_pipeline_two_slots_at_once.rs submits the first slot before taking the second.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn double(x: f32) -> f32 {
    x * 2.0
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    let first = pipeline.next_slot()?;
    let second = pipeline.next_slot()?;
    first.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, double))?;
    second.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, double))?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
