// DV6, DV10: twin of ui-tests/fail/dv6_frame_dropped_while_its_scope_lists_it.rs, the same program dropping the frame after the scope; it compiles.
use ascend_typestate::{Acl, Error, JpegdVpc, PixelFormat};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let input = ctx.alloc_jpeg(&media, 4096)?;
    let mut decoded = ctx.alloc_frame(&media, 4096)?;
    ctx.async_scope(|scope| {
        let tasks = scope.media(&mut channel, &stream)?;
        tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
        Ok(())
    })?;
    drop(decoded);
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
