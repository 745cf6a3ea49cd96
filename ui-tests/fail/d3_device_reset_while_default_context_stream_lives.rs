// D3: streams of the default context are destroyed before the device is reset. A stream
// borrows the `Device<DefaultContext>` it was created from, so `reset` does not compile
// while it lives (E0505).
// Twin: ui-tests/pass/d3_device_reset_while_default_context_stream_lives.rs destroys it first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let stream = device.create_stream()?;
    device.reset()?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
