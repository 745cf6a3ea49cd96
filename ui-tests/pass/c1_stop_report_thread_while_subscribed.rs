// C1 (step 5), C9: twin of ui-tests/fail/c1_stop_report_thread_while_subscribed.rs, the same program in the legal order (unsubscribes the stream before stopping the thread); it compiles.

use ascend_typestate::{Acl, CallbackMode, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    stream.launch(CallbackMode::NonBlocking, || println!("reached"))?;
    let stream = stream.unsubscribe()?;
    report.stop()?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
