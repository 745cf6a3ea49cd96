//! Seed 000, "Event synchronous waiting", then "stream-to-stream waiting", in typed form.
//!
//! Runs on the real runtime when one is installed, else on the simulator that Cargo builds
//! beside the example (see the search order in `ascend_typestate::sys::loader`).
//!
//! ```sh
//! cargo run --example event_sync
//! ```

use ascend_typestate::{Acl, Error};

fn main() -> Result<(), Error> {
    let acl = Acl::init()?;
    println!("runtime library: {}", acl.library());
    let device = acl.set_device(0)?; // D1
    let ctx = device.create_context()?; // D2

    // Event synchronous waiting (E2): record on a stream, block the host on the event.
    let stream = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&stream)?;
    event.synchronize()?;
    println!("event complete: {}", event.is_complete()?);
    event.destroy()?;

    // Stream-to-stream waiting (E3, E4): s2 waits for s1's work; the wait scope must reset.
    let s2 = ctx.create_stream()?;
    let start = ctx.create_event()?.record(&stream)?;
    let done = ctx.create_event()?.record(&stream)?;
    let done = done.wait(&s2, |waited| {
        // ... work issued on s2 here runs after everything issued on `stream` so far ...
        waited.reset() // E4: remove this line and the program does not compile
    })?;
    s2.synchronize()?; // S2
    start.synchronize()?;
    done.destroy()?;
    start.destroy()?;

    // D3: streams, then the context, then the device, then finalize (P2).
    s2.destroy()?;
    stream.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    println!("done: every resource released in reverse order (D3)");
    Ok(())
}
