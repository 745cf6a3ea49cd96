// P2/D3: twin of ui-tests/fail/p2_finalize_while_device_lives.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
