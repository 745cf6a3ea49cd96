// D3: twin of ui-tests/fail/d3_device_reset_while_default_context_stream_lives.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let stream = device.create_stream()?;
    stream.destroy()?;
    device.reset()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
