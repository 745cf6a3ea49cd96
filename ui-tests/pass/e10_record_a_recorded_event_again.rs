// E10: twin of ui-tests/fail/e10_record_a_recorded_event_again.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&stream)?;
    event.synchronize()?;
    let event = event.reset_completed(&stream)?.record(&stream)?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
