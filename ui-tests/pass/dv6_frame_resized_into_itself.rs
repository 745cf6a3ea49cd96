// DV6: twin of ui-tests/fail/dv6_frame_resized_into_itself.rs, the same program resizing into another frame; it compiles.
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
        tasks.resize(&resized, &mut decoded, target)?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
