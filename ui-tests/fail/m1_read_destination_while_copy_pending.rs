// M1: the destination of `aclrtMemcpyAsync` must not be read before the stream is
// synchronised. `AsyncScope::copy` borrows it mutably until the scope ends, so reading it
// inside the scope does not compile (E0502).
// Twin: ui-tests/pass/m1_read_destination_while_copy_pending.rs reads the destination after the scope.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let dev = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst)?;
    let mut host_dst = vec![0u32; 4];
    ctx.async_scope(|scope| {
        scope.copy(&stream, &mut host_dst, &dev)?;
        let x = host_dst[0];
        println!("{x}");
        Ok(())
    })?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
