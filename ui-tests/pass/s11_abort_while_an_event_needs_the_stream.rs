// Twin of ui-tests/fail/s11_abort_while_an_event_needs_the_stream.rs: the event is destroyed
// (after its tasks, E9) before the stream is aborted, and the stream is used again after.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let (mut producer, consumer) = (ctx.create_stream()?, ctx.create_stream()?);
    let event = ctx.create_event()?.record(&producer)?;
    let event = event.wait_and_reset(&consumer)?;
    consumer.synchronize()?;
    event.destroy()?;
    producer.abort()?;
    producer.synchronize()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
