// C2: a stream has at most one subscribed thread (a second subscription returns 107011).
// `subscribe` takes a `Stream` by value and a `Subscribed` is not one, so subscribing an
// already subscribed stream again does not compile (E0308).
// Twin: ui-tests/pass/c2_subscribe_twice.rs subscribes the stream once.

use ascend_typestate::{Acl, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    let stream = report.subscribe(stream)?;
    let stream = stream.unsubscribe()?;
    stream.destroy()?;
    report.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
