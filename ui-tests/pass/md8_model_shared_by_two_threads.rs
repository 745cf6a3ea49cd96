// MD8: twin of ui-tests/fail/md8_model_shared_by_two_threads.rs, the same program in the legal order (moves the model to one thread); it compiles.

use ascend_typestate::{Acl, Error, Model, Static};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut model: Model<Static> = device.load_model("model.om")?;
    let exclusive = &mut model;
    std::thread::scope(|s| {
        s.spawn(move || exclusive.pending());
    });
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
