//! Seed 000, "Device synchronous waiting", in typed form: work on several streams, one
//! device synchronisation (D4), then every resource released in reverse order (D3).
//!
//! ```sh
//! cargo run --example device_sync
//! ```

use ascend_typestate::MallocPolicy;
use ascend_typestate::{Acl, Error};

fn main() -> Result<(), Error> {
    let acl = Acl::init()?;
    println!("runtime library: {}", acl.library());
    let device = acl.set_device(0)?; // D1
    let ctx = device.create_context()?; // D2
    let streams = [
        ctx.create_stream()?,
        ctx.create_stream()?,
        ctx.create_stream()?,
    ];
    let input = vec![7u8; 1 << 16];
    let mut buffers = [
        ctx.alloc::<u8>(input.len(), MallocPolicy::HugeFirst)?,
        ctx.alloc::<u8>(input.len(), MallocPolicy::HugeFirst)?,
        ctx.alloc::<u8>(input.len(), MallocPolicy::HugeFirst)?,
    ];
    ctx.async_scope(|scope| {
        for (stream, buffer) in streams.iter().zip(buffers.iter_mut()) {
            scope.copy(stream, buffer, &input)?;
        }
        // D4: block until all work on the device is done (the scope synchronises too).
        ctx.synchronize_device()
    })?;
    println!(
        "device synchronised after {} streams of copies",
        streams.len()
    );

    // D3: buffers and streams, then the context, then the device, then finalize (P2).
    for buffer in buffers {
        buffer.free()?;
    }
    for stream in streams {
        stream.destroy()?;
    }
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}
