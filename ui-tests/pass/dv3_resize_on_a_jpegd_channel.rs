// DV3: twin of ui-tests/fail/dv3_resize_on_a_jpegd_channel.rs, the same program in the legal order (creates the channel with both modes); it compiles.

use ascend_typestate::{Acl, Error, FrameLayout, Jpegd, JpegdVpc, PixelFormat};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let input = ctx.alloc_frame(&media, 4096)?;
    let mut output = ctx.alloc_frame(&media, 4096)?;
    let layout = FrameLayout::resized(32, 32, PixelFormat::Nv12)?;
    ctx.async_scope(|scope| {
        let tasks = scope.media(&mut channel, &stream)?;
        tasks.resize(&input, &mut output, layout)?;
        Ok(())
    })?;
    let _ = Jpegd;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
