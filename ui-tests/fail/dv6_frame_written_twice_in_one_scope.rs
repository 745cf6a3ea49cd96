// DV6: a frame is the output of one task per scope. `decode_jpeg` borrows its output
// exclusively until the scope has synchronised the stream, so resizing into the same frame
// in that scope does not compile (E0499): each output is on the scope's list once.
// Twin: ui-tests/pass/dv6_frame_written_twice_in_one_scope.rs resizes into another frame.
use ascend_typestate::{Acl, Error, FrameLayout, JpegdVpc, PixelFormat};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let input = ctx.alloc_jpeg(&media, 4096)?;
    let mut decoded = ctx.alloc_frame(&media, 4096)?;
    let mut resized = ctx.alloc_frame(&media, 4096)?;
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12)?;
    let _ = &mut resized;
    ctx.async_scope(|scope| {
        let tasks = scope.media(&mut channel, &stream)?;
        let picture = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
        tasks.resize(picture, &mut decoded, target)?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
