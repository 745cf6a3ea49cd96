// C12, D3: a host-function thread has its context current for as long as it runs. It
// borrows the context, and `destroy` takes the context by value, so destroying the context
// while the thread lives does not compile (E0505).
// Twin: ui-tests/pass/c12_context_destroyed_while_host_func_thread_lives.rs stops the
// thread first.

use ascend_typestate::{Acl, Error, HostFuncThread};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let host = HostFuncThread::spawn(&ctx)?;
    ctx.destroy()?;
    host.stop()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
