// M1: twin of ui-tests/fail/m1_read_destination_while_copy_pending.rs, the same program in the legal order (reads the destination after the scope); it compiles.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let dev = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst)?;
    let mut host_dst = vec![0u32; 4];
    ctx.async_scope(|scope| {
        scope.copy(&stream, &mut host_dst, &dev)?;
        Ok(())
    })?;
    let x = host_dst[0];
    println!("{x}");
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
