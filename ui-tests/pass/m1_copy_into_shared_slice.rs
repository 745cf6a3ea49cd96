// M1: twin of ui-tests/fail/m1_copy_into_shared_slice.rs, the same program in the legal order (passes a `&mut [T]`); it compiles.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let dev = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst)?;
    let mut host = vec![0u32; 4];
    let dst: &mut [u32] = &mut host;
    ctx.copy(dst, &dev)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
