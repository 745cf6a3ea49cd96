// C12: a subscription does not outlive its host-function thread, which must keep serving
// the stream until it is unsubscribed. A `HostFuncSubscribed` borrows its `HostFuncThread`,
// so returning one made on a thread local to the function does not compile (E0515): the
// thread would be stopped at the function's end with the stream still subscribed.
// Twin: ui-tests/pass/c12_host_func_subscription_outlives_its_thread.rs takes the thread
// from its caller, which outlives the subscription.

use ascend_typestate::{Acl, Context, Error, HostFuncSubscribed, HostFuncThread};

fn subscribed<'a>(ctx: &'a Context<'a>) -> Result<HostFuncSubscribed<'a, 'a>, Error> {
    let host = HostFuncThread::spawn(ctx)?;
    host.subscribe(ctx.create_stream()?)
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = subscribed(&ctx)?;
    stream.unsubscribe()?.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
