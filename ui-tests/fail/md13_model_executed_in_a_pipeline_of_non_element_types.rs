// MD13: a pipeline executes a model only if its element types are `Element`s, checked
// against the model's description: raw bytes in `[u8; 4]` (`Pod`, not an `Element`) have no
// `Launch::execute` (E0599).
// Twin: ui-tests/pass/md13_model_executed_in_a_pipeline_of_non_element_types.rs uses f32.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut model = device.load_model("model.om")?;
    let mut pipeline = device.create_pipeline::<[u8; 4], f32>(PipelineConfig::new(32, 16))?;
    pipeline
        .next_slot()?
        .submit(|launch| launch.execute(&mut model))?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
