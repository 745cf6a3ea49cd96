// DV4: twin of ui-tests/fail/dv4_channel_on_two_streams_in_one_scope.rs, the same program in the legal order (uses the second stream in a second scope); it compiles.

use ascend_typestate::{Acl, Error, JpegdVpc};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let other = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    ctx.async_scope(|scope| {
        let _first = scope.media(&mut channel, &stream)?;
        Ok(())
    })?;
    ctx.async_scope(|scope| {
        let _second = scope.media(&mut channel, &other)?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
