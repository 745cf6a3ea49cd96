// E4/E1: twin of ui-tests/fail/e4_record_waited_before_reset.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&s1)?;
    let event = event.wait(&s2, |waited| {
        let waited = waited;
        waited.reset()
    })?;
    let event = event.record(&s1)?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
