//! C8 (class 4): no runtime call from inside a host callback or a
//! simulated kernel, even through `'static` handles (leaked on purpose: the only way safe
//! code can reach a handle there). A refused call is `Error::InsideCallback`, makes no
//! runtime call (zero `[C8]` findings), gives the value back, and never aborts.
//!
//! Its own test binary, and each test in a child process of its own (`common::isolated`):
//! a leaked `Acl` can never be finalized, and an abort must fail one test only.

use crate::support;

use crate::support::isolated as common;

use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

use ascend_typestate::{CallbackMode, Context, Error, MallocPolicy};
use ascend_typestate::{ReportThread, Stream};
use common::{Reports, isolated};
use support::sim::{Sim, assert_no_findings, leaked_runtime};

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// How `Error::InsideCallback` is reported (its `Debug` form, hint included).
fn inside_callback() -> String {
    format!("{:?}", Error::InsideCallback)
}

fn debug(result: Result<(), Error>) -> String {
    match result {
        Ok(()) => "Ok".to_owned(),
        Err(error) => format!("{error:?}"),
    }
}

/// Runs `body` in a blocking host callback on a stream of `ctx` subscribed to a fresh report
/// thread, and returns what it returned.
fn in_callback<R: Send + 'static>(
    ctx: &'static Context<'static>,
    body: impl FnOnce() -> R + Send + 'static,
) -> R {
    let report = ReportThread::spawn(ctx).unwrap();
    let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
    let (tx, rx) = mpsc::channel();
    stream
        .launch(CallbackMode::Blocking, move || tx.send(body()).unwrap())
        .unwrap();
    let value = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the callback did not run");
    let stream = stream.unsubscribe().unwrap();
    stream.destroy().unwrap();
    report.stop().unwrap();
    value
}

/// Hole: `Context::destroy` of a context owned by a callback reached the runtime
/// (`aclrtDestroyContext` inside a callback: a C8 violation, refused by the simulator with
/// 107000). It must be `Error::InsideCallback`, with the context given back.
#[test]
fn c8_context_destroy_inside_callback_is_refused() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let owned = device.create_context().unwrap();
        let outcome = in_callback(ctx, move || match owned.try_destroy() {
            Ok(()) => None,
            Err(failed) => Some(failed.into_parts()),
        });
        let (error, owned) = outcome.expect("a context was destroyed inside a callback");
        assert!(matches!(error, Error::InsideCallback), "{error:?}");
        // Given back, and destroyed outside the callback.
        owned.destroy().unwrap();
        assert_no_findings(&sim.findings());
    });
}

/// Hole: `Device::reset` of a device owned by a callback reached the runtime
/// (`aclrtResetDevice` inside a callback, C8). It must be `Error::InsideCallback`, with the
/// device given back.
#[test]
fn c8_device_reset_inside_callback_is_refused() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let owned = acl.set_device(1).unwrap();
        let outcome = in_callback(ctx, move || match owned.try_reset() {
            Ok(_reset) => None,
            Err(failed) => Some(failed.into_parts()),
        });
        let (error, owned) = outcome.expect("a device was reset inside a callback");
        assert!(matches!(error, Error::InsideCallback), "{error:?}");
        assert_eq!(owned.id(), 1);
        owned.reset().unwrap();
        assert_no_findings(&sim.findings());
    });
}

/// Hole: dropping a context inside a callback ran its `Drop` fallback's runtime call there
/// (C8). The drop must report `Error::InsideCallback` to the drop-error handler and make no
/// runtime call.
#[test]
fn c8_context_dropped_inside_callback_reports_inside_callback() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let reports = Reports::capture();
        let owned = device.create_context().unwrap();
        in_callback(ctx, move || drop(owned));
        let reported = reports.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert_eq!(reported[0].1, inside_callback(), "{reported:?}");
        assert_no_findings(&sim.findings());
    });
}

/// Hole: dropping a device inside a callback ran its `Drop` fallback's `aclrtResetDevice`
/// there (C8). The drop must report `Error::InsideCallback` and make no runtime call.
#[test]
fn c8_device_dropped_inside_callback_reports_inside_callback() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let reports = Reports::capture();
        let owned = acl.set_device(1).unwrap();
        in_callback(ctx, move || drop(owned));
        let reported = reports.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert_eq!(reported[0].1, inside_callback(), "{reported:?}");
        assert_no_findings(&sim.findings());
    });
}

/// What a simulated kernel's function reaches: leaked handles, in a `static` (a kernel
/// function is a plain `fn`, it captures nothing).
struct KernelEnv {
    ctx: &'static Context<'static>,
    /// A stream for an async scope opened inside the kernel.
    stream: Mutex<Option<Stream<'static>>>,
    /// A context the kernel tries to destroy (and puts back if refused).
    owned: Mutex<Option<Context<'static>>>,
    /// `(call, outcome)` of each call made inside the kernel.
    outcomes: Mutex<Vec<(&'static str, String)>>,
}

static KERNEL: OnceLock<KernelEnv> = OnceLock::new();

fn kernel_env() -> &'static KernelEnv {
    KERNEL
        .get()
        .expect("the test sets the kernel's environment first")
}

/// A kernel function that makes typed runtime calls through the leaked handles.
fn typed_calls_kernel(x: u32) -> u32 {
    let env = kernel_env();
    let mut outcomes = Vec::new();
    outcomes.push(("create_stream", debug(env.ctx.create_stream().map(drop))));
    outcomes.push(("create_event", debug(env.ctx.create_event().map(drop))));
    outcomes.push(("synchronize_device", debug(env.ctx.synchronize_device())));
    let owned = env.owned.lock().unwrap().take();
    if let Some(owned) = owned {
        match owned.try_destroy() {
            Ok(()) => outcomes.push(("Context::destroy", "Ok".to_owned())),
            Err(failed) => {
                let (error, owned) = failed.into_parts();
                outcomes.push(("Context::destroy", format!("{error:?}")));
                *env.owned.lock().unwrap() = Some(owned);
            }
        }
    }
    env.outcomes.lock().unwrap().extend(outcomes);
    x
}

/// A kernel function that opens an async scope through the leaked handles.
fn async_scope_kernel(x: u32) -> u32 {
    let env = kernel_env();
    let guard = env.stream.lock().unwrap();
    let stream = guard.as_ref().expect("the kernel's stream");
    let src = [7u8; 16];
    let mut dst = [0u8; 16];
    let outcome = env.ctx.async_scope(|scope| {
        scope.copy(stream, &mut dst[..], &src[..])?;
        Ok(())
    });
    env.outcomes
        .lock()
        .unwrap()
        .push(("async_scope", debug(outcome)));
    x
}

/// Sets the kernel's environment and runs `kernel` once (one element) on a stream of the
/// leaked context; returns the outcomes it recorded.
fn run_kernel(kernel: fn(u32) -> u32) -> (Sim, Vec<(&'static str, String)>) {
    let (acl, sim) = leaked_runtime();
    let device = leak(acl.set_device(0).unwrap());
    let ctx = leak(device.create_context().unwrap());
    let owned = device.create_context().unwrap();
    let env = KernelEnv {
        ctx,
        stream: Mutex::new(Some(ctx.create_stream().unwrap())),
        owned: Mutex::new(Some(owned)),
        outcomes: Mutex::new(Vec::new()),
    };
    assert!(KERNEL.set(env).is_ok(), "one kernel test per process");
    let stream = ctx.create_stream().unwrap();
    let mut input = ctx.alloc::<u32>(1, MallocPolicy::default()).unwrap();
    ctx.copy(&mut input, &[21u32][..]).unwrap();
    let mut output = ctx.alloc::<u32>(1, MallocPolicy::default()).unwrap();
    ctx.async_scope(|scope| {
        scope.simulated_map(
            &stream,
            Duration::from_millis(1),
            &input,
            &mut output,
            kernel,
        )?;
        Ok(())
    })
    .unwrap();
    let mut result = [0u32];
    ctx.copy(&mut result[..], &output).unwrap();
    assert_eq!(result, [21], "the kernel ran to its end");
    // Clean up what the kernel did not (could not) touch.
    input.free().unwrap();
    output.free().unwrap();
    stream.destroy().unwrap();
    let env = kernel_env();
    if let Some(s) = env.stream.lock().unwrap().take() {
        s.destroy().unwrap();
    }
    if let Some(c) = env.owned.lock().unwrap().take() {
        c.destroy().unwrap();
    }
    let outcomes = env.outcomes.lock().unwrap().clone();
    (sim, outcomes)
}

/// Hole: a simulated kernel's function runs on a stream's worker thread, which the crate did
/// not mark as a callback: typed calls made there through `'static` handles reached the
/// runtime (C8; the simulator refuses them with 107000). Each must be
/// `Error::InsideCallback`, the owned context given back.
#[test]
fn c8_typed_calls_inside_a_simulated_kernel_are_refused() {
    isolated(|| {
        let (sim, outcomes) = run_kernel(typed_calls_kernel);
        assert_eq!(outcomes.len(), 4, "{outcomes:?}");
        for (call, outcome) in &outcomes {
            assert_eq!(
                outcome,
                &inside_callback(),
                "{call} inside a kernel: {outcomes:?}"
            );
        }
        assert_no_findings(&sim.findings());
    });
}

/// Hole: an async scope opened inside a simulated kernel issued its copy (refused by the
/// runtime, C8), then could not synchronise its stream (refused again) and aborted the
/// process "rather than release buffers a pending copy may use". Inside a kernel the scope
/// must be `Err(Error::InsideCallback)`, and the process must go on (the child exits 0).
#[test]
fn c8_async_scope_inside_a_simulated_kernel_is_refused_without_abort() {
    isolated(|| {
        let (sim, outcomes) = run_kernel(async_scope_kernel);
        assert_eq!(
            outcomes,
            [("async_scope", inside_callback())],
            "{outcomes:?}"
        );
        assert_no_findings(&sim.findings());
    });
}
