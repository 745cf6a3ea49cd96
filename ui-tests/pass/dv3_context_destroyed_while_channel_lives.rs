// DV3: twin of ui-tests/fail/dv3_context_destroyed_while_channel_lives.rs, the same program in the legal order (destroys the channel first); it compiles.

use ascend_typestate::{Acl, Error, JpegdVpc};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    drop(stream);
    channel.destroy()?;
    ctx.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
