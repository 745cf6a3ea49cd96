//! C8 (class 10): a panic caught at the FFI boundary is reported without `eprintln!`, which
//! panics when stderr cannot be written, and a panic there (inside an `extern "C"` function)
//! aborts the process. The children below run with stderr on `/dev/full`.

use std::time::Duration;

use ascend_typestate::{CallbackMode, MallocPolicy, ReportThread};

use crate::support::isolated::{Child, isolated_with};
use crate::support::sim::{Session, assert_no_findings};

/// stderr is `/dev/full` in these children: show panics (an assertion's too) on stdout,
/// which the parent prints, then run the default hook (which ignores write errors).
fn panics_on_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        println!("child: {info}");
        default(info);
    }));
}

fn full_stderr() -> Child {
    Child::default()
        .stderr_to_dev_full()
        .timeout(Duration::from_secs(60))
}

/// Hole: a host callback's panic was caught, then printed with `eprintln!`; with stderr
/// unwritable (`/dev/full`) that print panicked inside the `extern "C"` trampoline, and the
/// process aborted. The child must exit normally, the panic reported to the caller.
#[test]
fn c8_panicking_callback_with_unwritable_stderr_does_not_abort() {
    isolated_with(full_stderr(), || {
        panics_on_stdout();
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let report = ReportThread::spawn(&ctx).unwrap();
            let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
            stream
                .launch(CallbackMode::Blocking, || {
                    panic!("a bug in a host callback")
                })
                .unwrap();
            let stream = stream.unsubscribe().unwrap();
            let panics = report.take_panics();
            assert_eq!(panics.len(), 1, "{panics:?}");
            stream.destroy().unwrap();
            report.stop().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_no_findings(&session.finish());
        println!("child: exits normally");
    });
}

fn panicking_kernel(_: u32) -> u32 {
    panic!("a bug in a simulated kernel's function")
}

/// Hole: a simulated kernel function's panic was caught, then printed with `eprintln!`;
/// with stderr unwritable that print panicked inside the `extern "C"` kernel entry, and the
/// process aborted. The child must exit normally (whether the scope reports the panic as
/// an error is not prescribed here).
#[test]
fn c8_panicking_kernel_with_unwritable_stderr_does_not_abort() {
    isolated_with(full_stderr(), || {
        panics_on_stdout();
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let stream = ctx.create_stream().unwrap();
            let mut input = ctx.alloc::<u32>(4, MallocPolicy::default()).unwrap();
            ctx.copy(&mut input, &[1u32, 2, 3, 4][..]).unwrap();
            let mut output = ctx.alloc::<u32>(4, MallocPolicy::default()).unwrap();
            let outcome = ctx.async_scope(|scope| {
                scope.simulated_map(
                    &stream,
                    Duration::from_millis(1),
                    &input,
                    &mut output,
                    panicking_kernel,
                )?;
                Ok(())
            });
            println!("child: the scope returned {outcome:?}");
            // Whatever the scope said, the stream is usable and everything is released.
            stream.synchronize().unwrap_or_else(|e| {
                println!("child: a second synchronisation reported {e}");
            });
            stream.synchronize().unwrap();
            input.free().unwrap();
            output.free().unwrap();
            stream.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_no_findings(&session.finish());
        println!("child: exits normally");
    });
}
