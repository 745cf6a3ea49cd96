// C1 (step 5), C9: unsubscribe before the report thread goes away. A `Subscribed` borrows
// its `ReportThread`, and `stop` takes the thread by value, so stopping it while a stream
// is still subscribed does not compile (E0505).
// Twin: ui-tests/pass/c1_stop_report_thread_while_subscribed.rs unsubscribes the stream before stopping the thread.

use ascend_typestate::{Acl, CallbackMode, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    stream.launch(CallbackMode::NonBlocking, || println!("reached"))?;
    report.stop()?;
    let stream = stream.unsubscribe()?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
