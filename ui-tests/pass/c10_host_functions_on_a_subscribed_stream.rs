// Twin of ui-tests/fail/c10_host_functions_on_a_subscribed_stream.rs: host functions on a
// stream that is not subscribed, callbacks on another.

use ascend_typestate::{Acl, CallbackMode, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let subscribed = report.subscribe(ctx.create_stream()?)?;
    subscribed.launch(CallbackMode::Blocking, || {})?;
    let host = ctx.create_stream()?.with_host_functions();
    host.launch(|| {})?;
    host.destroy()?;
    subscribed.unsubscribe()?.destroy()?;
    report.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
