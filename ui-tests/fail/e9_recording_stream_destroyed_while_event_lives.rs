// E9/D3: an event is destroyed before the streams its tasks were issued on. A recorded
// event borrows the recording stream, so `Stream::destroy` does not compile while the
// event lives (E0505).
// Twin: ui-tests/pass/e9_recording_stream_destroyed_while_event_lives.rs destroys the event first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&stream)?;
    stream.destroy()?;
    event.synchronize()?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
