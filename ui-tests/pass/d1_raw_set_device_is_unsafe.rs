// D1, D6: twin of ui-tests/fail/d1_raw_set_device_is_unsafe.rs: the raw call in an
// `unsafe` block; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    // SAFETY: the caller pairs it with a raw `reset_device(0)` once done with the device.
    unsafe { acl.api().set_device(0)? };
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
