// D1/D5: a device in the *Reset* state has no runtime behind it: `Device<Reset>` has no
// `create_context` (or any other creating method) until it is set again (E0599).
// Twin: ui-tests/pass/d1_reset_device_creates_nothing.rs sets it again first (recovery).

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.reset()?;
    let ctx = device.create_context()?;
    ctx.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
