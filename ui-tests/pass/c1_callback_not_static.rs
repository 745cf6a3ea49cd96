// C1 (step 4): twin of ui-tests/fail/c1_callback_not_static.rs, the same program in the legal order (moves an `Arc` of the data into the closure); it compiles.

use std::sync::Arc;

use ascend_typestate::{Acl, CallbackMode, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    let local = Arc::new(vec![1u32, 2, 3]);
    let view = Arc::clone(&local);
    stream.launch(CallbackMode::Blocking, move || println!("{}", view.len()))?;
    let stream = stream.unsubscribe()?;
    stream.destroy()?;
    report.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
