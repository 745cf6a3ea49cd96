// E8: `aclrtEventElapsedTime` needs both events recorded (507000 otherwise). `elapsed_since`
// exists only on a *Recorded* event and takes a *Recorded* start, so asking a *Created* event
// does not compile (E0599).
// Twin: ui-tests/pass/e8_elapsed_time_of_an_unrecorded_event.rs records the end event first.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let start = ctx.create_event()?.record(&stream)?;
    let end = ctx.create_event()?;
    let _ms = end.elapsed_since(&start)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
