// DV1: one media API per process, held by a process-wide token. Every V1 object borrows the
// token, so dropping the token (which lets another media API start) while a channel lives
// does not compile (E0505).
// Twin: ui-tests/pass/dv1_channel_outlives_the_media_token.rs destroys the channel before the token.

use ascend_typestate::{Acl, Error, JpegdVpc};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    drop(media);
    channel.destroy()?;
    drop(stream);
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
