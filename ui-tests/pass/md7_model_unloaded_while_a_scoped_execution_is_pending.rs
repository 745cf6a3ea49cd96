// The legal twin of ui-tests/fail/md7_model_unloaded_while_a_scoped_execution_is_pending.rs: unloads after the scope.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let ctx = acl.set_device(0)?.into_default_context()?;
    let stream = ctx.create_stream()?;
    let mut model = ctx.load_model("model.om")?;
    let input = ctx.alloc::<f32>(16, MallocPolicy::HugeFirst)?;
    let mut output = ctx.alloc::<f32>(4, MallocPolicy::HugeFirst)?;
    ctx.async_scope(|scope| {
        scope.execute(&stream, &mut model, [(&input).into()], [(&mut output).into()])?;
        Ok(())
    })?;
    model.unload()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
