//! The crate-level example of ascend-typestate, pasted into `main` as a new user would.
//! Without a runtime it must fail with a short, readable message (check.sh runs it so).

use ascend_typestate::Acl;

fn main() -> Result<(), ascend_typestate::Error> {
    let acl = Acl::init()?;
    println!("runtime library: {}", acl.library());
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let (producer, consumer) = (ctx.create_stream()?, ctx.create_stream()?);
    let event = ctx.create_event()?;
    let event = event.record(&producer)?;
    let event = event.wait(&consumer, |waited| waited.reset())?;
    consumer.synchronize()?;
    event.destroy()?;
    producer.destroy()?;
    consumer.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    println!("ok");
    Ok(())
}
