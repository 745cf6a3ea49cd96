// C10: host functions and callbacks never share a stream. A `Subscribed` lends only
// `&Stream`, and `with_host_functions` takes the `Stream` by value, so a subscribed stream
// cannot become a `HostFnStream` (E0507).
// Twin: ui-tests/pass/c10_host_functions_on_a_subscribed_stream.rs launches on a stream
// that is not subscribed.

use ascend_typestate::{Acl, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let subscribed = report.subscribe(ctx.create_stream()?)?;
    let host = subscribed.with_host_functions();
    host.launch(|| {})?;
    report.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
