// E8: twin of ui-tests/fail/e8_elapsed_time_of_an_unrecorded_event.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let start = ctx.create_event()?.record(&stream)?;
    let end = ctx.create_event()?.record(&stream)?;
    end.synchronize()?;
    let _ms = end.elapsed_since(&start)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
