// Twin of ui-tests/fail/s6_failure_mode_set_after_creation.rs: the mode is chosen once, at
// creation.

use ascend_typestate::{Acl, Error, StreamConfig};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream_with(StreamConfig::new().stop_on_failure())?;
    stream.synchronize()?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
