// C12: twin of ui-tests/fail/c12_subscribe_to_a_second_host_func_thread.rs, the same program in the legal order (unsubscribes the stream from the first thread before subscribing it to the second); it compiles.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let first = HostFuncThread::spawn(&ctx)?;
    let second = HostFuncThread::spawn(&ctx)?;
    let stream = first.subscribe(ctx.create_stream()?)?;
    let stream = second.subscribe(stream.unsubscribe()?)?;
    let stream = stream.unsubscribe()?;
    stream.destroy()?;
    second.stop()?;
    first.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
