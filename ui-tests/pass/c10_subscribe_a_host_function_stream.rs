// Twin of ui-tests/fail/c10_subscribe_a_host_function_stream.rs: the subscribed stream is a
// plain one.

use ascend_typestate::{Acl, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let host = ctx.create_stream()?.with_host_functions();
    host.launch(|| {})?;
    let subscribed = report.subscribe(ctx.create_stream()?)?;
    subscribed.unsubscribe()?.destroy()?;
    host.destroy()?;
    report.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
