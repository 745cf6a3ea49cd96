// M1: a copy writes its destination, which must be exclusively borrowed. `Context::copy`
// takes `&mut D`, so a shared slice `&[T]` as the destination does not compile (E0308).
// Twin: ui-tests/pass/m1_copy_into_shared_slice.rs passes a `&mut [T]`.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let dev = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst)?;
    let host = vec![0u32; 4];
    let dst: &[u32] = &host;
    ctx.copy(dst, &dev)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
