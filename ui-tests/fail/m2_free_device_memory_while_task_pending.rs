// M2: free device memory only after every task that uses it is done. `AsyncScope::copy`
// borrows the destination until the scope has synchronised the stream, and `free` takes
// the buffer by value, so freeing it inside the scope does not compile (E0505; and E0597,
// since `free` moves the buffer into the closure).
// Twin: ui-tests/pass/m2_free_device_memory_while_task_pending.rs frees the buffer after the scope.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let mut dev = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst)?;
    let host_src = vec![1u32; 4];
    ctx.async_scope(|scope| {
        scope.copy(&stream, &mut dev, &host_src)?;
        dev.free()?;
        Ok(())
    })?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
