// MD1: twin of ui-tests/fail/md1_model_outlives_its_context.rs, the same program in the legal order (keeps the context alive as long as the model); it compiles.

use ascend_typestate::{Acl, Error, Model, Static};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let model: Model<Static> = ctx.load_model("model.om")?;
    drop(model);
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
