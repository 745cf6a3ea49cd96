// P2/D3: `aclFinalize` after every resource is released. A device borrows the `Acl`, so
// `Acl::finalize` does not compile while it lives (E0505).
// Twin: ui-tests/pass/p2_finalize_while_device_lives.rs resets the device first.

use ascend_typestate::{Acl, Error};

fn program(acl: Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    acl.finalize()?;
    device.reset()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
