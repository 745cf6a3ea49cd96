// C12, S11: a subscribed stream is not aborted while subscribed. `Stream::abort` needs
// `&mut Stream`, and a `HostFuncSubscribed` derefs to its stream shared only (no
// `DerefMut`), so aborting through the subscription does not compile (E0596).
// Twin: ui-tests/pass/c12_abort_a_host_func_subscribed_stream.rs aborts the stream
// `unsubscribe` gives back, then subscribes it again.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let stream = host.subscribe(ctx.create_stream()?)?;
    stream.abort()?;
    stream.unsubscribe()?.destroy()?;
    host.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
