// DV1: twin of ui-tests/fail/dv1_channel_outlives_the_media_token.rs, the same program in the legal order (destroys the channel before the token); it compiles.

use ascend_typestate::{Acl, Error, JpegdVpc};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    channel.destroy()?;
    drop(media);
    drop(stream);
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
