// C12, S1: a subscribed stream is used from one thread at a time. `HostFuncSubscribed` is
// `Send` but not `Sync` (nor is the `Stream` it derefs to), so a `&HostFuncSubscribed`
// cannot go to another thread while this one uses it too (E0277); the host-function thread
// itself is `Sync`.
// Twin: ui-tests/pass/c12_host_func_subscribed_stream_shared_between_threads.rs moves the
// subscription into the other thread, which unsubscribes it there.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let stream = host.subscribe(ctx.create_stream()?)?;
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| stream.synchronize());
        stream.synchronize()?;
        worker.join().unwrap()
    })?;
    stream.unsubscribe()?.destroy()?;
    host.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
