// S11: an aborted stream discards its pending tasks, so nothing may still wait for one.
// An event borrows every stream it was used on, so the stream cannot be borrowed mutably
// for `abort` while the event recorded on it lives (E0502).
// Twin: ui-tests/pass/s11_abort_while_an_event_needs_the_stream.rs destroys the event first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let (mut producer, consumer) = (ctx.create_stream()?, ctx.create_stream()?);
    let event = ctx.create_event()?.record(&producer)?;
    let event = event.wait_and_reset(&consumer)?;
    producer.abort()?;
    consumer.synchronize()?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
