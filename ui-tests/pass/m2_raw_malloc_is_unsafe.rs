// M2, D3: twin of ui-tests/fail/m2_raw_malloc_is_unsafe.rs: the raw call in an `unsafe`
// block; it compiles.

use ascend_typestate::sys::bindings::ACL_MEM_MALLOC_HUGE_FIRST;
use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    // SAFETY: the caller frees the memory before the device is reset.
    let _memory = unsafe { acl.api().malloc(64, ACL_MEM_MALLOC_HUGE_FIRST)? };
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
