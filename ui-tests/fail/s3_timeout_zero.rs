// S3/E6/C6: a timeout is -1 (forever) or > 0 ms; 0 is invalid (107000). `timeout!(0)` fails
// const evaluation (E0080).
// Twin: ui-tests/pass/s3_timeout_zero.rs uses 250 ms.

use ascend_typestate::{Acl, Error, timeout};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    stream.synchronize_with(timeout!(0))?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
