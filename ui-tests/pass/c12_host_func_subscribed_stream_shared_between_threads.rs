// C12, S1: twin of ui-tests/fail/c12_host_func_subscribed_stream_shared_between_threads.rs, the same program in the legal order (the subscription is moved into the other thread, which unsubscribes it there); it compiles.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let stream = host.subscribe(ctx.create_stream()?)?;
    let stream = std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            stream.synchronize()?;
            stream.unsubscribe()
        });
        worker.join().unwrap()
    })?;
    stream.destroy()?;
    host.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
