// D3: leaving the *DefaultContext* state gives the default context up, so nothing created
// in it may live on: an event borrows the device, and `release_default_context` does not
// compile while it lives (E0505).
// Twin: ui-tests/pass/d3_default_context_released_while_event_lives.rs destroys the event first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let event = device.create_event()?;
    let device = device.release_default_context()?;
    event.destroy()?;
    device.reset()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
