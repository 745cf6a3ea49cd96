// MD11: in a pipeline too, a dynamic-batch model executes only with a gear:
// `Launch::execute` takes a `Model<Static>` (E0308).
// Twin: ui-tests/pass/md11_dynamic_model_launched_without_a_batch.rs uses execute_batch.

use ascend_typestate::{Acl, Dynamic, Error, Model, PipelineConfig};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut model: Model<Dynamic> = device.load_dynamic_model("model.om")?;
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
