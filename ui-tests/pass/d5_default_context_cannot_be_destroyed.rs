// D5: twin of ui-tests/fail/d5_default_context_cannot_be_destroyed.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let ctx = &*device;
    ctx.synchronize_device()?;
    device.reset()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
