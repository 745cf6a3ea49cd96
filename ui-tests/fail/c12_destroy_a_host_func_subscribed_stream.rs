// C12: a stream is unsubscribed before it is destroyed. A `HostFuncSubscribed` lends only
// `&Stream`, and `destroy` takes the `Stream` by value, so a subscribed stream cannot be
// destroyed (E0507).
// Twin: ui-tests/pass/c12_destroy_a_host_func_subscribed_stream.rs destroys the stream
// `unsubscribe` gives back.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let stream = host.subscribe(ctx.create_stream()?)?;
    stream.synchronize()?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
