// MD4: twin of ui-tests/fail/md4_description_used_after_unload.rs, the same program in the legal order (copies what it needs before unloading); it compiles.

use ascend_typestate::{Acl, Error, Model, Static};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let model: Model<Static> = device.load_model("model.om")?;
    let inputs = model.inputs().to_vec();
    model.unload()?;
    println!("{}", inputs.len());
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
