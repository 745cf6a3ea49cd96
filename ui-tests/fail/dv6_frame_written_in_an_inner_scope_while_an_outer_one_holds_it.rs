// DV6: an output on an outer scope's list is not written in an inner scope. The outer
// decode borrows the frame exclusively until the outer scope has synchronised its stream,
// so an inner scope resizing into it does not compile (E0499): no frame is on two lists.
// Twin: ui-tests/pass/dv6_frame_written_in_an_inner_scope_while_an_outer_one_holds_it.rs resizes into another frame.
use ascend_typestate::{Acl, Error, FrameLayout, JpegdVpc, PixelFormat, Vpc};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let mut vpc = ctx.create_media_channel::<Vpc>(&media)?;
    let input = ctx.alloc_jpeg(&media, 4096)?;
    let mut decoded = ctx.alloc_frame(&media, 4096)?;
    let mut resized = ctx.alloc_frame(&media, 4096)?;
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12)?;
    let _ = &mut resized;
    ctx.async_scope(|outer| {
        let tasks = outer.media(&mut channel, &stream)?;
        let picture = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
        ctx.async_scope(|inner| {
            let tasks = inner.media(&mut vpc, &stream)?;
            tasks.resize(picture, &mut decoded, target)?;
            Ok(())
        })
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
