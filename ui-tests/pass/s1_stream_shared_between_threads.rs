// S1: twin of ui-tests/fail/s1_stream_shared_between_threads.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            stream.synchronize()?;
            stream.destroy()?;
            Ok::<(), Error>(())
        });
        worker.join().unwrap()
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
