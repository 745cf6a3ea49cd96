// C12, S11: twin of ui-tests/fail/c12_abort_a_host_func_subscribed_stream.rs, the same program in the legal order (aborts the stream `unsubscribe` gives back, then subscribes it again); it compiles.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let stream = host.subscribe(ctx.create_stream()?)?;
    let mut stream = stream.unsubscribe()?;
    stream.abort()?;
    let stream = host.subscribe(stream)?;
    stream.unsubscribe()?.destroy()?;
    host.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
