// C8: twin of ui-tests/fail/c8_callback_gets_no_handle.rs, the same program in the legal order (captures nothing and calls no runtime function); it compiles.

use ascend_typestate::{Acl, CallbackMode, Error, ReportThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    stream.launch(CallbackMode::Blocking, move || {
        println!("no runtime call here");
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
