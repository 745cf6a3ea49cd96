// C12, C10: a stream has one role. A `HostFuncSubscribed` lends only `&Stream`, and
// `with_host_functions` takes the `Stream` by value, so a stream subscribed to a
// host-function thread cannot become a `HostFnStream` (E0507).
// Twin: ui-tests/pass/c12_host_functions_on_a_host_func_subscribed_stream.rs unsubscribes
// the stream first.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let subscribed = host.subscribe(ctx.create_stream()?)?;
    let stream = subscribed.with_host_functions();
    stream.launch(|| {})?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
