// D1/D5: twin of ui-tests/fail/d1_reset_device_creates_nothing.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.reset()?;
    let device = device.set()?;
    let ctx = device.create_context()?;
    ctx.destroy()?;
    device.reset()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
