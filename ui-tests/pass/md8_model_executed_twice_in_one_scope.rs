// The legal twin of ui-tests/fail/md8_model_executed_twice_in_one_scope.rs: runs one scope per execution.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let ctx = acl.set_device(0)?.into_default_context()?;
    let stream = ctx.create_stream()?;
    let mut model = ctx.load_model("model.om")?;
    let input = ctx.alloc::<f32>(16, MallocPolicy::HugeFirst)?;
    let mut output = ctx.alloc::<f32>(4, MallocPolicy::HugeFirst)?;
    let mut second = ctx.alloc::<f32>(4, MallocPolicy::HugeFirst)?;
    for out in [&mut output, &mut second] {
        ctx.async_scope(|scope| {
            scope.execute(&stream, &mut model, [(&input).into()], [out.into()])?;
            Ok(())
        })?;
    }
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
