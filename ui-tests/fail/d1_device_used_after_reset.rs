// D1/D5: after `aclrtResetDevice` nothing may be created on the device. `Device::reset`
// consumes it, so any later call is a use of a moved value (E0382).
// Twin: ui-tests/pass/d1_device_used_after_reset.rs creates the context before the reset.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    device.reset()?;
    let ctx = device.create_context()?;
    ctx.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
