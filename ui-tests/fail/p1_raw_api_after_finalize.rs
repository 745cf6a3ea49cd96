// P1/P2: the raw layer cannot outlive the runtime either. `Acl::api` borrows the token, so a
// raw call after `acl.finalize()` is a move out of a borrowed value (E0505).
// Twin: ui-tests/pass/p1_raw_api_after_finalize.rs makes the raw call before finalizing.

use ascend_typestate::{Acl, Error};

fn program(acl: Acl) -> Result<(), Error> {
    let api = acl.api();
    acl.finalize()?;
    let _count = api.get_device_count()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
