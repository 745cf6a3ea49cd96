//! Stderr is `/dev/full` (every write fails). Panicking callbacks and kernels,
//! drop errors with the default handler (which prints), `aclrtProcessReport` failures at
//! `stop`: no abort, no panic out of the crate.

use crate::support;
use crate::support::callbacks as common;

use std::time::Duration;

use ascend_typestate::{CallbackMode, ReportThread};
use ascend_typestate::{Error, MallocPolicy};
use common::{is_child, run_child};
use support::sim::Session;

fn panicking_kernel(x: u32) -> u32 {
    if x == 0 {
        panic!("kernel panics with stderr full");
    }
    x
}

#[test]
fn everything_that_prints_with_stderr_full() {
    const NAME: &str = "everything_that_prints_with_stderr_full";
    if !is_child(NAME) {
        let out = run_child(NAME, Duration::from_secs(60), true);
        assert!(
            out.ok(),
            "child failed with stderr=/dev/full:\n{}",
            out.describe()
        );
        println!("{}", out.stdout);
        return;
    }
    // The default drop-error handler (prints to stderr).
    let session = Session::start();
    let sim = session.acl().simulator().unwrap();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        // A stream moved into a callback and dropped there: InsideCallback, reported by the
        // default handler (to the full stderr). It is leaked: create it in a leaked context.
        stream
            .launch(CallbackMode::Blocking, || {
                panic!("callback panics with stderr full")
            })
            .unwrap();
        stream
            .launch(CallbackMode::NonBlocking, || {
                std::panic::panic_any(42u32);
            })
            .unwrap();
        sim.inject_fault("aclrtProcessReport", 507000, 0, 20)
            .unwrap();
        let stream = stream.unsubscribe().unwrap();
        // Drop errors: a stream whose first synchronisation fails (reported, then retried).
        sim.inject_fault("aclrtSynchronizeStream", 507000, 0, 1)
            .unwrap();
        drop(stream);
        let stopped = report.stop();
        println!("stop: {stopped:?}");
        assert!(matches!(stopped, Err(Error::Runtime { .. })), "{stopped:?}");
        // A kernel function that panics (run_map writes to stderr).
        let s = ctx.create_stream().unwrap();
        let input = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst).unwrap();
        let mut output = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst).unwrap();
        let r = ctx.async_scope(|scope| {
            scope.simulated_map(
                &s,
                Duration::from_millis(1),
                &input,
                &mut output,
                panicking_kernel,
            )?;
            Ok(())
        });
        println!("scope: {r:?}");
        drop((input, output, s));
    }
    let findings = session.finish();
    println!("findings: {findings:?}");
    assert!(findings.is_empty());
}
