// MD8: never execute one model from two threads without exclusion: a `Model` is not `Sync`,
// so two threads cannot share it (E0277); executions need `&mut Model`.
// Twin: ui-tests/pass/md8_model_shared_by_two_threads.rs moves the model to one thread.

use ascend_typestate::{Acl, Error, Model, Static};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let model: Model<Static> = device.load_model("model.om")?;
    let shared = &model;
    std::thread::scope(|s| {
        s.spawn(move || shared.pending());
        s.spawn(move || shared.pending());
    });
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
