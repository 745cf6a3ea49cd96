// M1: a copy moves raw bytes, so buffer elements must be valid for every bit pattern.
// Buffers require `bytemuck::Pod`, so allocating device memory of `String` does not
// compile (E0277, at the type argument and at the `DeviceBuffer<String>` it would return).
// Twin: ui-tests/pass/m1_non_pod_element.rs allocates `u32`.

use ascend_typestate::{Acl, Error, MallocPolicy};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let dev = ctx.alloc::<String>(4, MallocPolicy::HugeFirst)?;
    dev.free()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
