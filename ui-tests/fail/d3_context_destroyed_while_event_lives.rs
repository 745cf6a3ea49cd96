// D3: events are destroyed before their context. The event borrows the context, so
// `Context::destroy` does not compile while it lives (E0505).
// Twin: ui-tests/pass/d3_context_destroyed_while_event_lives.rs destroys the event first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let event = ctx.create_event()?;
    ctx.destroy()?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
