// S3/E6/C6: values below -1 are invalid timeouts (107000). `timeout!` takes milliseconds as
// `u32` (or `forever`), so a negative literal does not type-check (E0600: no unary `-` on u32).
// Twin: ui-tests/pass/s3_timeout_below_minus_one.rs uses `timeout!(forever)` (-1).

use ascend_typestate::{Acl, Error, timeout};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    stream.synchronize_with(timeout!(-2))?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
