// C12: unsubscribe before the host-function thread goes away. A `HostFuncSubscribed`
// borrows its `HostFuncThread`, and `stop` takes the thread by value, so stopping it while
// a stream is still subscribed does not compile (E0505).
// Twin: ui-tests/pass/c12_stop_host_func_thread_while_subscribed.rs unsubscribes the stream
// before stopping the thread.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let stream = host.subscribe(ctx.create_stream()?)?;
    host.stop()?;
    let stream = stream.unsubscribe()?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
