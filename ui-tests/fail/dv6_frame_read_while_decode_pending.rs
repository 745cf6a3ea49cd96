// DV6: the output of a decode is not read until the task is complete. `decode_jpeg` borrows
// the frame exclusively until the scope has synchronised the stream, so copying it out inside
// the scope does not compile (E0502).
// Twin: ui-tests/pass/dv6_frame_read_while_decode_pending.rs reads the frame after the scope.

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
        ctx.copy(&mut host[..], &output)?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
