// E1: a stream cannot wait on an event that was never recorded.
// `wait` exists only on `Event<Recorded>`; a `Created` event has no such method (E0599).
// Twin: ui-tests/pass/e1_wait_on_created_event.rs records first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event = ctx.create_event()?;
    let event = event.wait(&s2, |waited| waited.reset())?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
