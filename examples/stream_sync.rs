//! Seed 000, "Stream synchronous waiting", in typed form: an asynchronous host-to-device
//! copy, then a stream synchronisation (M1, S2). The copy's buffers are borrowed by the
//! async scope, which synchronises before it returns.
//!
//! ```sh
//! cargo run --example stream_sync
//! ```

use ascend_typestate::MallocPolicy;
use ascend_typestate::{Acl, Error};

fn main() -> Result<(), Error> {
    let acl = Acl::init()?;
    println!("runtime library: {}", acl.library());

    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;

    let host: Vec<f32> = (0..1 << 20).map(|i| i as f32).collect();
    let mut on_device = ctx.alloc::<f32>(host.len(), MallocPolicy::HugeFirst)?;
    ctx.async_scope(|scope| {
        // memcpy_async: H2D is derived from the buffer types; `host` and `on_device` stay
        // borrowed until the scope has synchronised `stream` (M1).
        scope.copy(&stream, &mut on_device, &host)?;
        Ok(())
    })?; // aclrtSynchronizeStream (S2)

    let mut back = vec![0.0f32; host.len()];
    ctx.copy(&mut back[..], &on_device)?; // synchronous D2H
    assert_eq!(back, host);
    println!(
        "copied {} MiB to the device and back",
        (host.len() * 4) >> 20
    );

    on_device.free()?;
    stream.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}
