// DV10: nothing a pending task uses is freed. `decode_jpeg` borrows its JPEG buffer until the
// scope has synchronised the stream, so dropping the buffer inside the scope does not compile
// (E0505).
// Twin: ui-tests/pass/dv10_input_dropped_while_decode_pending.rs drops the buffer after the scope.

use ascend_typestate::{Acl, Error, JpegdVpc, PixelFormat};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let input = ctx.alloc_jpeg(&media, 4096)?;
    let mut output = ctx.alloc_frame(&media, 4096)?;
    ctx.async_scope(|scope| {
        let tasks = scope.media(&mut channel, &stream)?;
        tasks.decode_jpeg(&input, &mut output, PixelFormat::Nv12)?;
        drop(input);
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
