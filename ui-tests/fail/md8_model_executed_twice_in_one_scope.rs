// MD8/MD6: one execution of a model at a time. A scoped execution borrows the model mutably
// for the whole scope: a second one in the same scope does not compile (E0499).
// Twin: ui-tests/pass/md8_model_executed_twice_in_one_scope.rs runs one scope per execution.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let ctx = acl.set_device(0)?.into_default_context()?;
    let stream = ctx.create_stream()?;
    let mut model = ctx.load_model("model.om")?;
    let input = ctx.alloc::<f32>(16, MallocPolicy::HugeFirst)?;
    let mut output = ctx.alloc::<f32>(4, MallocPolicy::HugeFirst)?;
    let mut second = ctx.alloc::<f32>(4, MallocPolicy::HugeFirst)?;
    ctx.async_scope(|scope| {
        scope.execute(&stream, &mut model, [(&input).into()], [(&mut output).into()])?;
        scope.execute(&stream, &mut model, [(&input).into()], [(&mut second).into()])?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
