// S8: a force-destroyed stream drops its pending tasks, so nothing may still wait for one.
// An event borrows every stream it was used on, so the stream cannot be moved into
// `destroy_force` while the event recorded on it lives (E0505).
// Twin: ui-tests/pass/s8_destroy_force_while_an_event_needs_the_stream.rs destroys the
// event first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let (producer, consumer) = (ctx.create_stream()?, ctx.create_stream()?);
    let event = ctx.create_event()?.record(&producer)?;
    let event = event.wait_and_reset(&consumer)?;
    producer.destroy_force()?;
    consumer.synchronize()?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
