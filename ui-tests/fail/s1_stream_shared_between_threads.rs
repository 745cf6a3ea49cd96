// S1: tasks issued on one stream from two threads at once have no defined order. `Stream`
// is `Send` but not `Sync`, so a `&Stream` cannot go to another thread (E0277); moving the
// stream there is fine.
// Twin: ui-tests/pass/s1_stream_shared_between_threads.rs moves the stream into the thread.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| stream.synchronize());
        worker.join().unwrap()
    })?;
    stream.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
