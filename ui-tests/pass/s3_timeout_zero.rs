// S3/E6/C6: twin of ui-tests/fail/s3_timeout_zero.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error, timeout};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    stream.synchronize_with(timeout!(250))?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
