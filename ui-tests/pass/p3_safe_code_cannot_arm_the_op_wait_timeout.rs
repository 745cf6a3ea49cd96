// P3: twin of ui-tests/fail/p3_safe_code_cannot_arm_the_op_wait_timeout.rs: the raw call in
// an `unsafe` block, whose author takes on keeping every typed wait from timing out; it
// compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    // SAFETY: no typed event is waited on while the timeout is armed.
    unsafe { acl.api().set_op_wait_timeout(1)? };
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
