// C1 (step 4), C7: a callback runs on the report thread, not the launching one, so what it
// captures must be `Send`. `launch` requires `Send`, so a closure capturing an `Rc` does
// not compile (E0277).
// Twin: ui-tests/pass/c1_callback_not_send.rs captures an `Arc` instead.

use std::rc::Rc;

use ascend_typestate::{Acl, CallbackMode, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    let shared = Rc::new(vec![1u32, 2, 3]);
    let mine = Rc::clone(&shared);
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
