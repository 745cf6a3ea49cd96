// D5: the default context is not destroyed (107002): it ends with the device's reset. The
// device only lends it (`Deref`); taking it out to destroy it is a move out of a borrow
// (E0507).
// Twin: ui-tests/pass/d5_default_context_cannot_be_destroyed.rs resets the device instead.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let ctx = *device;
    ctx.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
