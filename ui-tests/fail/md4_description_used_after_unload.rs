// MD4: what the description says cannot outlive the model: `inputs()` borrows it, so the
// model cannot be unloaded while it is read (E0505).
// Twin: ui-tests/pass/md4_description_used_after_unload.rs copies what it needs before unloading.

use ascend_typestate::{Acl, Error, Model, Static};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let model: Model<Static> = device.load_model("model.om")?;
    let inputs = model.inputs();
    model.unload()?;
    println!("{}", inputs.len());
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
