// E9/D3: twin of ui-tests/fail/e9_stream_destroyed_after_wait_and_reset.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&s1)?.wait_and_reset(&s2)?;
    event.destroy()?;
    s2.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
