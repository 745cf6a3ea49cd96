// C12, C1: a stream has one role. `ReportThread::subscribe` takes a `Stream` by value and
// a `HostFuncSubscribed` is not one, so a stream subscribed to a host-function thread
// cannot be subscribed to a report thread too (E0308).
// Twin: ui-tests/pass/c12_report_subscription_of_a_host_func_subscribed_stream.rs
// unsubscribes the stream from the host-function thread first.

use ascend_typestate::{Acl, CallbackMode, Error, HostFuncThread, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = host.subscribe(ctx.create_stream()?)?;
    let stream = report.subscribe(stream)?;
    stream.launch(CallbackMode::Blocking, || println!("reached"))?;
    stream.unsubscribe()?.destroy()?;
    report.stop()?;
    host.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
