// DV6, DV10: a frame on a scope's list is neither moved nor dropped before the scope ends.
// `decode_jpeg` borrows its output for the whole scope, so dropping the frame inside the
// scope does not compile (E0505, and E0597: the frame must outlive the scope): the list
// never points at a frame that is gone.
// Twin: ui-tests/pass/dv6_frame_dropped_while_its_scope_lists_it.rs drops the frame after the scope.
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
        drop(decoded);
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
