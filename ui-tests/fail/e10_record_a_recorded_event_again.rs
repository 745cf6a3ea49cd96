// E10: a recorded event keeps its flag set; recording it again without a reset would let a
// later wait pass on the old record. `record` does not exist on a *Recorded* event (E0599).
// Twin: ui-tests/pass/e10_record_a_recorded_event_again.rs resets it first, once its record
// is complete (`reset_completed`).

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&stream)?;
    event.synchronize()?;
    let event = event.record(&stream)?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
