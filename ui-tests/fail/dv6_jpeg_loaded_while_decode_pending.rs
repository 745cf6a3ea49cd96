// DV6: a pending decode reads its JPEG buffer until the scope ends, so loading another file
// into it meanwhile does not compile (E0502).
// Twin: ui-tests/pass/dv6_jpeg_loaded_while_decode_pending.rs loads the next file after the scope.
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
        tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
        input.load(&[0xFF, 0xD8])?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
