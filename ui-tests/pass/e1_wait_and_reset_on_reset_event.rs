// E1: twin of ui-tests/fail/e1_wait_and_reset_on_reset_event.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error, Event, Reset};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event: Event<'_, Reset> = ctx.create_event()?.into();
    let event = event.record(&s1)?.wait_and_reset(&s2)?;
    event.record(&s1)?.synchronize()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
