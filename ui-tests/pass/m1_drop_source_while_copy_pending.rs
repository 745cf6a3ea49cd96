// M1: twin of ui-tests/fail/m1_drop_source_while_copy_pending.rs, the same program in the legal order (drops the source after the scope); it compiles.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let mut dev = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst)?;
    let host_src = vec![1u32; 4];
    ctx.async_scope(|scope| {
        scope.copy(&stream, &mut dev, &host_src)?;
        Ok(())
    })?;
    drop(host_src);
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
