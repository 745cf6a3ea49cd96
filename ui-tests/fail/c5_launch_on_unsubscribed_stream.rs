// C5: `aclrtLaunchCallback` on a stream with no subscribed thread returns 107015. `launch`
// exists only on `Subscribed`, so calling it on a plain `Stream` does not compile (E0599).
// Twin: ui-tests/pass/c5_launch_on_unsubscribed_stream.rs subscribes the stream to the report thread first.

use ascend_typestate::{Acl, CallbackMode, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = ctx.create_stream()?;
    stream.launch(CallbackMode::Blocking, || println!("reached"))?;
    stream.destroy()?;
    report.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
