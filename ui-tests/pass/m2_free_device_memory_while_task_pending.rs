// M2: twin of ui-tests/fail/m2_free_device_memory_while_task_pending.rs, the same program in the legal order (frees the buffer after the scope); it compiles.

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
    dev.free()?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
