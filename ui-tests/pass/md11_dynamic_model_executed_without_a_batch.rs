// MD11: twin of ui-tests/fail/md11_dynamic_model_executed_without_a_batch.rs, the same program in the legal order (executes with a gear); it compiles.

use ascend_typestate::{Acl, Dynamic, Error, MallocPolicy, Model};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut model: Model<Dynamic> = device.load_dynamic_model("model.om")?;
    let mut io = model.create_io(MallocPolicy::HugeFirst)?;
    model.execute_batch(&mut io, 2)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
