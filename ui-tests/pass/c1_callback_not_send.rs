// C1 (step 4), C7: twin of ui-tests/fail/c1_callback_not_send.rs, the same program in the legal order (captures an `Arc` instead); it compiles.

use std::sync::Arc;

use ascend_typestate::{Acl, CallbackMode, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    let shared = Arc::new(vec![1u32, 2, 3]);
    let mine = Arc::clone(&shared);
    stream.launch(CallbackMode::Blocking, move || println!("{}", mine.len()))?;
    let stream = stream.unsubscribe()?;
    stream.destroy()?;
    report.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
