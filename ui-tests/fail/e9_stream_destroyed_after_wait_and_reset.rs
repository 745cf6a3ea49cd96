// E9/D3: `wait_and_reset` issues the reset on the waiting stream, so the `Reset` event
// borrows that stream: destroying it while the event lives does not compile (E0505).
// Twin: ui-tests/pass/e9_stream_destroyed_after_wait_and_reset.rs destroys the event first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&s1)?.wait_and_reset(&s2)?;
    s2.destroy()?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
