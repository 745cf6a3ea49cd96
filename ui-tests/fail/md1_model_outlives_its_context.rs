// MD1: a model belongs to the context it was loaded in and cannot outlive it (E0597).
// Twin: ui-tests/pass/md1_model_outlives_its_context.rs keeps the context alive as long as the model.

use ascend_typestate::{Acl, Error, Model, Static};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let model: Model<Static> = {
        let ctx = device.create_context()?;
        ctx.load_model("model.om")?
    };
    drop(model);
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
