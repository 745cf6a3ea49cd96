//! Seed 001, the host callback flow, in typed form (C1-C9): a report thread, a subscribed
//! stream, tasks, callbacks, then unsubscribe after everything ran.
//!
//! ```sh
//! cargo run --example callback
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ascend_typestate::MallocPolicy;
use ascend_typestate::{Acl, Error};
use ascend_typestate::{CallbackMode, ReportThread};

fn main() -> Result<(), Error> {
    let acl = Acl::init()?;
    println!("runtime library: {}", acl.library());
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;

    // (1) a thread that processes reports, with the context current on it (C1, C6).
    let report = ReportThread::spawn(&ctx)?;
    // (2) bind it to a stream: only a subscribed stream has `launch` (C5).
    let stream = report.subscribe(ctx.create_stream()?)?;

    let done = Arc::new(AtomicUsize::new(0));
    let input = vec![1u32; 1 << 16];
    let mut on_device = ctx.alloc::<u32>(input.len(), MallocPolicy::HugeFirst)?;
    for batch in 0..4 {
        ctx.async_scope(|scope| {
            // (3) asynchronous work on the stream ...
            scope.copy(&stream, &mut on_device, &input)?;
            // (4) ... and a callback that runs on the report thread when the stream gets
            // there. Blocking (C5): the stream's later tasks wait for it.
            let done = Arc::clone(&done);
            stream.launch(CallbackMode::Blocking, move || {
                done.fetch_add(1, Ordering::SeqCst);
                println!("callback: batch {batch} reached the host");
            })
        })?;
    }

    // (5) unsubscribe once every task and callback is done (C1, C9).
    let stream = stream.unsubscribe()?;
    println!("{} callbacks ran", done.load(Ordering::SeqCst));
    stream.destroy()?;
    report.stop()?;
    on_device.free()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}
