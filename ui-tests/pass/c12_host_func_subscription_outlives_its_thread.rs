// C12: twin of ui-tests/fail/c12_host_func_subscription_outlives_its_thread.rs, the same program in the legal order (the thread comes from the caller, which outlives the subscription); it compiles.

use ascend_typestate::{Acl, Context, Error, HostFuncSubscribed, HostFuncThread};

fn subscribed<'a>(
    host: &'a HostFuncThread<'a>,
    ctx: &'a Context<'a>,
) -> Result<HostFuncSubscribed<'a, 'a>, Error> {
    host.subscribe(ctx.create_stream()?)
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    let stream = subscribed(&host, &ctx)?;
    stream.unsubscribe()?.destroy()?;
    host.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
