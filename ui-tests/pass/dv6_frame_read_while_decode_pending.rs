// DV6: twin of ui-tests/fail/dv6_frame_read_while_decode_pending.rs, the same program in the legal order (reads the frame after the scope); it compiles.

use ascend_typestate::{Acl, Error, JpegdVpc, PixelFormat};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let input = ctx.alloc_jpeg(&media, 4096)?;
    let mut output = ctx.alloc_frame(&media, 4096)?;
    let mut host = vec![0u8; 4096];
    ctx.async_scope(|scope| {
        let tasks = scope.media(&mut channel, &stream)?;
        tasks.decode_jpeg(&input, &mut output, PixelFormat::Nv12)?;
        Ok(())
    })?;
    ctx.copy(&mut host[..], &output)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
