// DV4: a channel serves one stream at a time. `AsyncScope::media` borrows the channel
// exclusively for the whole scope, so using it on a second stream in the same scope does not
// compile (E0499).
// Twin: ui-tests/pass/dv4_channel_on_two_streams_in_one_scope.rs uses the second stream in a second scope.

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
        let _second = scope.media(&mut channel, &other)?;
        Ok(())
    })?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
