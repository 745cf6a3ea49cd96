// C12: twin of ui-tests/fail/c12_destroy_a_host_func_subscribed_stream.rs, the same program in the legal order (destroys the stream `unsubscribe` gives back); it compiles.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let stream = host.subscribe(ctx.create_stream()?)?;
    stream.synchronize()?;
    stream.unsubscribe()?.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
