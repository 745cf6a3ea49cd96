// C12, C10: twin of ui-tests/fail/c12_host_functions_on_a_host_func_subscribed_stream.rs, the same program in the legal order (unsubscribes the stream before launching host functions on it); it compiles.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let subscribed = host.subscribe(ctx.create_stream()?)?;
    let stream = subscribed.unsubscribe()?.with_host_functions();
    stream.launch(|| {})?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
