// MD2: twin of ui-tests/fail/md2_model_memory_freed_while_loaded.rs, the same program in the legal order (frees nothing by hand: unloading releases it); it compiles.

use ascend_typestate::{Acl, Error, MallocPolicy, Model, ModelSource, Static};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let (work_size, weight_size) = device.model_memory_size("model.om")?;
    let work = device.alloc::<u8>(work_size, MallocPolicy::HugeFirst)?;
    let weight = device.alloc::<u8>(weight_size, MallocPolicy::HugeFirst)?;
    let model: Model<Static> =
        device.load_model(ModelSource::file_with_memory("model.om", work, weight))?;
    model.unload()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
