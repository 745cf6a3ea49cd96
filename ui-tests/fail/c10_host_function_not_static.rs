// C10: the runtime may run a host function at any later time (or never, S8), so the
// closure owns what it uses: one that borrows a local does not compile (E0597).
// Twin: ui-tests/pass/c10_host_function_not_static.rs moves the value in.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = ctx.create_stream()?.with_host_functions();
    let frames = vec![0u8; 16];
    host.launch(|| println!("{}", frames.len()))?;
    host.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
