//! Seed 000, "Stream-to-stream waiting", in typed form: s2 waits for s1 through an event,
//! and the wait scope must end with the reset (E1, E3, E4).
//!
//! ```sh
//! cargo run --example stream_wait
//! ```

use ascend_typestate::{Acl, Error};

fn main() -> Result<(), Error> {
    let acl = Acl::init()?;
    println!("runtime library: {}", acl.library());
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;

    let event = ctx.create_event()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;

    let event = event.record(&s1)?; // the event captures s1's work so far (E2)
    let event = event.wait(&s2, |waited| {
        // s2 runs what is issued here only after s1's work (E3) ...
        waited.reset() // ... and the event resource is released (E4): required to compile
    })?;
    s2.synchronize()?;
    println!("s2 waited for s1; the event is reset and can be recorded again");

    event.destroy()?;
    s1.destroy()?;
    s2.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}
