// DV3: channels go before the context they were created in. A `MediaChannel` borrows its
// context, so destroying the context while the channel lives does not compile (E0505).
// Twin: ui-tests/pass/dv3_context_destroyed_while_channel_lives.rs destroys the channel first.

use ascend_typestate::{Acl, Error, JpegdVpc};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    drop(stream);
    ctx.destroy()?;
    channel.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
