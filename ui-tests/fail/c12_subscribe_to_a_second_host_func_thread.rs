// C12: a stream's host-function slot holds one thread (a second subscription returns
// 107011). `subscribe` takes a `Stream` by value and a `HostFuncSubscribed` is not one, so
// subscribing a subscribed stream to a second thread does not compile (E0308).
// Twin: ui-tests/pass/c12_subscribe_to_a_second_host_func_thread.rs unsubscribes it from
// the first thread before subscribing it to the second.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let first = HostFuncThread::spawn(&ctx)?;
    let second = HostFuncThread::spawn(&ctx)?;
    let stream = first.subscribe(ctx.create_stream()?)?;
    let stream = second.subscribe(stream)?;
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
