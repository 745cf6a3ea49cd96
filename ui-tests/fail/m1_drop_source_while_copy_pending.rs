// M1: the source of `aclrtMemcpyAsync` must stay alive until the stream is synchronised.
// `AsyncScope::copy` borrows it until the scope ends, so dropping it inside the scope does
// not compile (E0505; and E0597, since `drop` moves the buffer into the closure).
// Twin: ui-tests/pass/m1_drop_source_while_copy_pending.rs drops the source after the scope.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let mut dev = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst)?;
    let host_src = vec![1u32; 4];
    ctx.async_scope(|scope| {
        scope.copy(&stream, &mut dev, &host_src)?;
        drop(host_src);
        Ok(())
    })?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
