// Twin of ui-tests/fail/c10_host_function_not_static.rs: the closure owns its data.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = ctx.create_stream()?.with_host_functions();
    let frames = vec![0u8; 16];
    host.launch(move || println!("{}", frames.len()))?;
    host.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
