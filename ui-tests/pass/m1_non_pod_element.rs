// M1: twin of ui-tests/fail/m1_non_pod_element.rs, the same program in the legal order (allocates `u32`); it compiles.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let dev = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst)?;
    dev.free()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
