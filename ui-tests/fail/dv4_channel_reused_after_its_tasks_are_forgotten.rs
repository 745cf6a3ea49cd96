// DV4, leak safety: forgetting a channel's tasks (`mem::forget`) does not end the scope's
// exclusive borrow of the channel, so it still cannot serve a second stream in the same scope
// (E0499).
// Twin: ui-tests/pass/dv4_channel_reused_after_its_tasks_are_forgotten.rs uses the second stream in a second scope.
use ascend_typestate::{Acl, Error, FrameLayout, JpegdVpc, PixelFormat};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let other = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let mut input = ctx.alloc_jpeg(&media, 4096)?;
    let mut decoded = ctx.alloc_frame(&media, 4096)?;
    let mut resized = ctx.alloc_frame(&media, 4096)?;
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12)?;
    let _ = (&other, &mut input, &mut decoded, &mut resized, target);
    ctx.async_scope(|scope| {
        let tasks = scope.media(&mut channel, &stream)?;
        std::mem::forget(tasks);
        let _second = scope.media(&mut channel, &other)?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
