// M1: twin of ui-tests/fail/m1_forged_pending_location.rs: `Pending::host` checks the
// location (here `None`: the result is device memory), so it compiles.

use ascend_typestate::{MallocPolicy, Pending};
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
        if let Some(on_host) = on_device.into_host() {
            scope.copy(&stream, &mut out[..], on_host)?;
        }
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
