// E1: `wait_and_reset` exists only on `Event<Recorded>`: a `Reset` event (its last record
// already waited for and reset) has no such method (E0599).
// Twin: ui-tests/pass/e1_wait_and_reset_on_reset_event.rs records again first.

use ascend_typestate::{Acl, Error, Event, Reset};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event: Event<'_, Reset> = ctx.create_event()?.into();
    let event = event.wait_and_reset(&s2)?;
    event.record(&s1)?.synchronize()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
