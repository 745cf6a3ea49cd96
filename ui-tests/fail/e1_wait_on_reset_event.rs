// E1: after a wait scope the event is `Reset`; waiting on it again before a new record
// is illegal. `Event<Reset>` has no `wait` method (E0599).
// Twin: ui-tests/pass/e1_wait_on_reset_event.rs records again between the two waits.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&s1)?;
    let event = event.wait(&s2, |waited| waited.reset())?;
    let event = event.wait(&s2, |waited| waited.reset())?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
