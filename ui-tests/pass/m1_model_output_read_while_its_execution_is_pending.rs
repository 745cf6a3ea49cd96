// The legal twin of ui-tests/fail/m1_model_output_read_while_its_execution_is_pending.rs: reads it after the scope.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let ctx = acl.set_device(0)?.into_default_context()?;
    let stream = ctx.create_stream()?;
    let mut model = ctx.load_model("model.om")?;
    let input = ctx.alloc::<f32>(16, MallocPolicy::HugeFirst)?;
    let mut output = ctx.alloc::<f32>(4, MallocPolicy::HugeFirst)?;
    let mut host = vec![0.0f32; 4];
    ctx.async_scope(|scope| {
        scope.execute(&stream, &mut model, [(&input).into()], [(&mut output).into()])?;
        Ok(())
    })?;
    ctx.copy(&mut host[..], &output)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
