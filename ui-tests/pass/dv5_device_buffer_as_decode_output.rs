// DV5: twin of ui-tests/fail/dv5_device_buffer_as_decode_output.rs, the same program in the legal order (decodes into a `MediaFrame`); it compiles.

use ascend_typestate::{Acl, Error, JpegdVpc, MallocPolicy, PixelFormat};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let mut input = ctx.alloc_jpeg(&media, 4096)?;
    input.load(&[])?;
    let mut output = ctx.alloc_frame(&media, 4096)?;
    ctx.async_scope(|scope| {
        let tasks = scope.media(&mut channel, &stream)?;
        tasks.decode_jpeg(&input, &mut output, PixelFormat::Nv12)?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
