// E4/E1: reset comes after a wait. A recorded event outside a wait scope has no `reset`
// (E0599).
// Twin: ui-tests/pass/e4_reset_event_never_waited.rs resets inside the wait scope.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&s1)?;
    let event = event.reset()?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
