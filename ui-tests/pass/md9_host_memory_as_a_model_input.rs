// The legal twin of ui-tests/fail/md9_host_memory_as_a_model_input.rs: a host buffer is copied to device memory first.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let ctx = acl.set_device(0)?.into_default_context()?;
    let stream = ctx.create_stream()?;
    let mut model = ctx.load_model("model.om")?;
    let input = ctx.alloc::<f32>(16, MallocPolicy::HugeFirst)?;
    let mut output = ctx.alloc::<f32>(4, MallocPolicy::HugeFirst)?;
    let host = vec![0.0f32; 16];
    let mut staged = ctx.alloc::<f32>(16, MallocPolicy::HugeFirst)?;
    ctx.async_scope(|scope| {
        let up = scope.copy(&stream, &mut staged, &host[..])?;
        scope.execute(&stream, &mut model, [up.into()], [(&mut output).into()])?;
        Ok(())
    })?;
    let _ = input;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
