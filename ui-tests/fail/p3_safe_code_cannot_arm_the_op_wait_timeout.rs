// P3: safe code cannot arm the op wait timeout. A timed-out wait lets its stream pass
// before the event is recorded, and the typed API's event cycles rely on waits never timing
// out, so `Acl::set_op_wait_timeout` is gone and the raw call is `unsafe` (E0133).
// Twin: ui-tests/pass/p3_safe_code_cannot_arm_the_op_wait_timeout.rs makes the call in an
// `unsafe` block.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    acl.api().set_op_wait_timeout(1)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
