// P1/P2: twin of ui-tests/fail/p1_raw_api_after_finalize.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: Acl) -> Result<(), Error> {
    let api = acl.api();
    let _count = api.get_device_count()?;
    acl.finalize()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
