// DV4: a channel is not thread-safe. `MediaChannel` is not `Sync`, so a shared borrow of it
// cannot reach another thread (E0277); it may be moved (`Send`).
// Twin: ui-tests/pass/dv4_channel_shared_between_threads.rs moves the channel to the thread.

use ascend_typestate::{Acl, Error, JpegdVpc};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    std::thread::scope(|s| {
        s.spawn(|| println!("{channel:?}"));
    });
    drop(stream);
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
