// D3: streams are destroyed before their context. `Context::destroy` consumes the context,
// so it cannot run while a stream borrows it (E0505: move out while borrowed).
// Twin: ui-tests/pass/d3_stream_used_after_context_destroyed.rs destroys the stream first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    ctx.destroy()?;
    stream.synchronize()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
