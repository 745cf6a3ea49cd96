// MD13: twin of ui-tests/fail/md13_model_executed_in_a_pipeline_of_non_element_types.rs, the same program with `Element` types (f32); it compiles.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut model = device.load_model("model.om")?;
    let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(32, 16))?;
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
