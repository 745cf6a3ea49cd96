// D2: streams are created in a context (107002 without one). A device in the *Set* state
// has no context to create them in: `Device<Set>::create_stream` does not exist (E0599);
// enter *DefaultContext* (`into_default_context`) or create a context.
// Twin: ui-tests/pass/d2_stream_without_context.rs creates a context first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let stream = device.create_stream()?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
