// C8: a callback must not synchronize, allocate or free runtime resources, or launch tasks
// (deadlock). It receives nothing, and must be `'static`, so it cannot borrow the context
// (or a stream) to call the runtime with: capturing `&ctx` does not compile (E0597 on `ctx`;
// also on `device`, and E0521 on `acl`, which the context borrows in turn).
// Twin: ui-tests/pass/c8_callback_gets_no_handle.rs captures nothing and calls no runtime function.

use ascend_typestate::{Acl, CallbackMode, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    let handle = &ctx;
    stream.launch(CallbackMode::Blocking, move || {
        let _ = handle.synchronize_device();
    })?;
    let stream = stream.unsubscribe()?;
    stream.destroy()?;
    report.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
