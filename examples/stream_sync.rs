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

    // The samples' pattern: set the device and work in its default context (D1); the device
    // in state `DefaultContext` lends it, so streams and buffers borrow the device.
    let device = acl.set_device(0)?.into_default_context()?;
    let stream = device.create_stream()?;

    let host: Vec<f32> = (0..1 << 20).map(|i| i as f32).collect();
    let mut on_device = device.alloc::<f32>(host.len(), MallocPolicy::HugeFirst)?;
    device.async_scope(|scope| {
        // memcpy_async: H2D is derived from the buffer types; `host` and `on_device` stay
        // borrowed until the scope has synchronised `stream` (M1).
        scope.copy(&stream, &mut on_device, &host)?;
        Ok(())
    })?; // aclrtSynchronizeStream (S2)

    let mut back = vec![0.0f32; host.len()];
    device.copy(&mut back[..], &on_device)?; // synchronous D2H
    assert_eq!(back, host);
    println!(
        "copied {} MiB to the device and back",
        (host.len() * 4) >> 20
    );

    on_device.free()?;
    stream.destroy()?;
    device.reset()?; // DefaultContext -> Reset: the default context ends with the device (D5)
    acl.finalize()?;
    Ok(())
}
