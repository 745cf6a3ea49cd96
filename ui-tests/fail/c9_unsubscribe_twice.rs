// C9: unsubscribing a stream that is not subscribed returns 107011. `unsubscribe` consumes the
// `Subscribed` and gives back a plain `Stream`, which has no `unsubscribe` (E0599).
// Twin: ui-tests/pass/c9_unsubscribe_twice.rs unsubscribes once.

use ascend_typestate::{Acl, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    let stream = stream.unsubscribe()?;
    let stream = stream.unsubscribe()?;
    stream.destroy()?;
    report.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
