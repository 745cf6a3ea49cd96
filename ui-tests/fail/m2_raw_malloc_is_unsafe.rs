// M2, D3: a raw `aclrtMalloc` allocates in the thread's current context, outside the
// typed API's accounting of what a context or device still holds, so it is `unsafe`
// (E0133).
// Twin: ui-tests/pass/m2_raw_malloc_is_unsafe.rs makes the call in an `unsafe` block.

use ascend_typestate::sys::bindings::ACL_MEM_MALLOC_HUGE_FIRST;
use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let _memory = acl.api().malloc(64, ACL_MEM_MALLOC_HUGE_FIRST)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
