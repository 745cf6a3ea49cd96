// C1 (step 4): a callback runs later, on the report thread, after `launch` has returned, so
// it must not borrow the caller's locals (use-after-free). `launch` requires `'static`, so
// a closure holding `&local` does not compile (E0597).
// Twin: ui-tests/pass/c1_callback_not_static.rs moves an `Arc` of the data into the closure.

use ascend_typestate::{Acl, CallbackMode, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    let local = vec![1u32, 2, 3];
    let view = &local;
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
