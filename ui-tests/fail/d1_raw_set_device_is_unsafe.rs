// D1, D6: a raw `aclrtSetDevice` takes a device reference the typed `Device` values do not
// count (set and reset must pair) and changes the thread's current context behind the
// typed API, so it is `unsafe` (E0133).
// Twin: ui-tests/pass/d1_raw_set_device_is_unsafe.rs makes the call in an `unsafe` block.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    acl.api().set_device(0)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
