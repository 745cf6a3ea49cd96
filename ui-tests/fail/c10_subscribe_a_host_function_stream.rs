// C10: host functions and callbacks never share a stream. `subscribe` takes a `Stream` by
// value and a `HostFnStream` is not one (nor can it be turned back into one), so a stream
// that runs host functions cannot be subscribed (E0308).
// Twin: ui-tests/pass/c10_subscribe_a_host_function_stream.rs subscribes a plain stream.

use ascend_typestate::{Acl, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let host = ctx.create_stream()?.with_host_functions();
    host.launch(|| {})?;
    let subscribed = report.subscribe(host)?;
    subscribed.unsubscribe()?.destroy()?;
    report.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
