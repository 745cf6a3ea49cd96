// E4/E1: the scope's `Waited` handle can only wait on more streams or be reset; recording
// it before `reset()` has no method (E0599).
// Twin: ui-tests/pass/e4_record_waited_before_reset.rs resets, then records after the scope.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&s1)?;
    let event = event.wait(&s2, |waited| {
        let waited = waited.record(&s1)?;
        waited.reset()
    })?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
