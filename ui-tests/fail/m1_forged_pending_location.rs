// M1: a pending result keeps the location of the copy that wrote it. `MemoryMut::written`,
// which wraps a `Pending` as the destination type's result, takes a token only this crate
// can make, so device memory cannot be re-labelled as host memory (the next copy's kind
// would then be wrong): E0061 without the token, and the token's type is private.
// Twin: ui-tests/pass/m1_forged_pending_location.rs asks `Pending::host`, which checks.

use ascend_typestate::{MallocPolicy, MemoryMut, Pending};
use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let input = vec![1u32; 256];
    let mut dev = ctx.alloc::<u32>(256, MallocPolicy::HugeFirst)?;
    let mut out = vec![0u32; 256];
    ctx.async_scope(|scope| {
        let on_device: Pending<'_, u32> = scope.copy(&stream, &mut dev, &input)?.into();
        let forged = <[u32] as MemoryMut<u32>>::written(on_device);
        scope.copy(&stream, &mut out[..], forged)?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
