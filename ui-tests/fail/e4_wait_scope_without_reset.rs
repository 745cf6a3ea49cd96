// E4: a wait scope must end with `waited.reset()`. The closure has to return the
// `ResetDone` proof that only `Waited::reset` creates; returning `Ok(())` is a type error (E0308).
// Twin: ui-tests/pass/e4_wait_scope_without_reset.rs ends the scope with the reset.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&s1)?;
    let event = event.wait(&s2, |_waited| {
        s2.synchronize()?;
        Ok(())
    })?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
