// P1: twin of ui-tests/fail/p1_device_without_acl.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Device, Error};

fn program() -> Result<(), Error> {
    let acl = Acl::init()?;
    let device: Device<'_> = acl.set_device(0)?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
