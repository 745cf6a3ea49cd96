// D3: contexts are destroyed before their device is reset. `Device::reset` consumes the
// device, so it does not compile while a context borrows it (E0505).
// Twin: ui-tests/pass/d3_device_reset_while_context_lives.rs destroys the context first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    device.reset()?;
    ctx.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
