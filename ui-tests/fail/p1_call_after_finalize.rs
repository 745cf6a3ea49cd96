// P1/P2: no runtime call after `aclFinalize`. `Acl::finalize` consumes the token, so a later
// `set_device` is a use of a moved value (E0382).
// Twin: ui-tests/pass/p1_call_after_finalize.rs sets and resets the device before finalizing.

use ascend_typestate::{Acl, Error};

fn program(acl: Acl) -> Result<(), Error> {
    acl.finalize()?;
    let device = acl.set_device(0)?;
    device.reset()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
