// S6: the failure mode is set at most once per stream. It is part of the `StreamConfig` a
// stream is created with; a `Stream` has no method to set it again (E0599).
// Twin: ui-tests/pass/s6_failure_mode_set_after_creation.rs sets it at creation.

use ascend_typestate::{Acl, Error, StreamConfig};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream_with(StreamConfig::new().stop_on_failure())?;
    stream.set_failure_mode(StreamConfig::new())?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
