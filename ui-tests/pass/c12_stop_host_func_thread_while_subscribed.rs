// C12: twin of ui-tests/fail/c12_stop_host_func_thread_while_subscribed.rs, the same program in the legal order (unsubscribes the stream before stopping the thread); it compiles.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let stream = host.subscribe(ctx.create_stream()?)?;
    let stream = stream.unsubscribe()?;
    host.stop()?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
