// C12, C1: twin of ui-tests/fail/c12_report_subscription_of_a_host_func_subscribed_stream.rs, the same program in the legal order (unsubscribes the stream from the host-function thread before subscribing it to the report thread); it compiles.

use ascend_typestate::{Acl, CallbackMode, Error, HostFuncThread, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = host.subscribe(ctx.create_stream()?)?;
    let stream = report.subscribe(stream.unsubscribe()?)?;
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
