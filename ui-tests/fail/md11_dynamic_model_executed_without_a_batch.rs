// MD11: a dynamic-batch model's batch is set on the input dataset before every execution:
// `Model<Dynamic>` has no `execute`, only `execute_batch`, which names a gear (E0599).
// Twin: ui-tests/pass/md11_dynamic_model_executed_without_a_batch.rs executes with a gear.

use ascend_typestate::{Acl, Dynamic, Error, MallocPolicy, Model};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut model: Model<Dynamic> = device.load_dynamic_model("model.om")?;
    let mut io = model.create_io(MallocPolicy::HugeFirst)?;
    model.execute(&mut io)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
