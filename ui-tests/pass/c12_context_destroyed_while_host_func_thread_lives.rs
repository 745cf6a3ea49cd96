// C12, D3: twin of ui-tests/fail/c12_context_destroyed_while_host_func_thread_lives.rs, the same program in the legal order (stops the thread before destroying the context); it compiles.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    host.stop()?;
    ctx.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
