// MD9: model inputs and outputs are device memory. A host slice does not convert into a
// `ModelInput` (E0277).
// Twin: ui-tests/pass/md9_host_memory_as_a_model_input.rs a host buffer is copied to device memory first.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let ctx = acl.set_device(0)?.into_default_context()?;
    let stream = ctx.create_stream()?;
    let mut model = ctx.load_model("model.om")?;
    let input = ctx.alloc::<f32>(16, MallocPolicy::HugeFirst)?;
    let mut output = ctx.alloc::<f32>(4, MallocPolicy::HugeFirst)?;
    let host = vec![0.0f32; 16];
    ctx.async_scope(|scope| {
        scope.execute(&stream, &mut model, [(&host[..]).into()], [(&mut output).into()])?;
        Ok(())
    })?;
    let _ = input;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
