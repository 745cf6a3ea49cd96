// MD7: a model is unloaded only once no execution of it is pending. A scoped execution
// borrows the model until its scope has synchronised the stream: unloading it inside the
// scope does not compile (E0597, E0505: moved while borrowed for the scope).
// Twin: ui-tests/pass/md7_model_unloaded_while_a_scoped_execution_is_pending.rs unloads after the scope.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let ctx = acl.set_device(0)?.into_default_context()?;
    let stream = ctx.create_stream()?;
    let mut model = ctx.load_model("model.om")?;
    let input = ctx.alloc::<f32>(16, MallocPolicy::HugeFirst)?;
    let mut output = ctx.alloc::<f32>(4, MallocPolicy::HugeFirst)?;
    ctx.async_scope(|scope| {
        scope.execute(&stream, &mut model, [(&input).into()], [(&mut output).into()])?;
        model.unload()?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
