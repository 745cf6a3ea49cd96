// DV5: every JPEGD and VPC output is media memory from `acldvppMalloc`. `decode_jpeg` takes a
// `MediaFrame`, whose memory only `acldvppMalloc` gives, so a `DeviceBuffer` from `aclrtMalloc`
// there does not compile (E0308).
// Twin: ui-tests/pass/dv5_device_buffer_as_decode_output.rs decodes into a `MediaFrame`.

use ascend_typestate::{Acl, Error, JpegdVpc, MallocPolicy, PixelFormat};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let stream = ctx.create_stream()?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let mut input = ctx.alloc_jpeg(&media, 4096)?;
    input.load(&[])?;
    let mut output = ctx.alloc::<u8>(4096, MallocPolicy::HugeFirst)?;
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
