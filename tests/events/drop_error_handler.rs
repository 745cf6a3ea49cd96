//! The drop-error handler is user code (a safe `fn`), called from inside the
//! crate. Each case runs in a child process (it may hang or abort) and leaks its runtime
//! handles (`Box::leak`) so that the handler can reach a context through a `static`.

use crate::support;

use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

use ascend_typestate::{Acl, Context, Error, Event, InitOptions, Reset};

const CHILD_ENV: &str = "RED_HANDLER_CHILD";

/// Runs `test` of this binary in a child process with `CHILD_ENV` set.
fn in_child(test: &str, bound: Duration) -> (Option<std::process::ExitStatus>, String, String) {
    support::child::in_child(test, CHILD_ENV, bound)
}

fn is_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// Runs `body` on a thread; prints `HANG` and exits 2 if it does not finish in `bound`.
fn bounded(bound: Duration, body: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        body();
        let _ = tx.send(());
    });
    match rx.recv_timeout(bound) {
        Ok(()) => println!("FINISHED"),
        Err(_) => {
            println!("HANG: the body did not finish within {bound:?}");
            let _ = std::io::Write::flush(&mut std::io::stdout());
            std::process::exit(2);
        }
    }
}

fn leaked_context() -> (&'static Acl, &'static Context<'static>) {
    let path = support::simulator_path();
    let acl: &'static Acl = Box::leak(Box::new(
        Acl::init_with(&InitOptions::default().library(&path)).unwrap(),
    ));
    let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx: &'static Context<'static> = Box::leak(Box::new(device.create_context().unwrap()));
    (acl, ctx)
}

// ---- 1. A handler that synchronises the device, called while the join list is locked ----

static CTX: OnceLock<&'static Context<'static>> = OnceLock::new();

fn sync_device_handler(what: &'static str, error: &Error) {
    println!("handler: {what}: {error}");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    if let Some(ctx) = CTX.get() {
        // Safe code: any crate call on the same context that touches its join list.
        let r = ctx.synchronize_device();
        println!("handler: synchronize_device -> {r:?}");
    }
}

#[test]
fn handler_child_deferred_lock() {
    if !is_child() {
        return;
    }
    bounded(Duration::from_secs(5), || {
        let (acl, ctx) = leaked_context();
        let sim = acl.simulator().unwrap();
        CTX.set(ctx).ok();
        ascend_typestate::set_drop_error_handler(sync_device_handler);
        let s1 = ctx.create_stream().unwrap();
        let s2 = ctx.create_stream().unwrap();
        // Two re-records on s1 after resets on s2: two join events deferred on s1.
        let mut e: Event<'_, Reset> = ctx.create_event().unwrap().into();
        for _ in 0..3 {
            e = e.record(&s1).unwrap().wait_and_reset(&s2).unwrap();
        }
        s2.synchronize().unwrap();
        // Their destruction fails twice in a row (injected): the first error is kept for
        // the caller, the second is reported while the list's mutex is held.
        sim.inject_fault("aclrtDestroyEvent", 507000, 0, 2).unwrap();
        println!("synchronising s1");
        let _ = std::io::Write::flush(&mut std::io::stdout());
        let r = s1.synchronize();
        println!("s1.synchronize -> {r:?}");
    });
    std::process::exit(0);
}

#[test]
fn handler_may_reenter_the_crate_while_join_destroys_fail() {
    if is_child() {
        return;
    }
    let (status, out, err) = in_child("handler_child_deferred_lock", Duration::from_secs(30));
    println!("status {status:?}\n{out}\n{err}");
    assert!(
        out.contains("FINISHED"),
        "the program did not finish: status {status:?}"
    );
}

// ---- 2. A handler panic whose payload panics when dropped ----------------------------------

struct PanicOnDrop;
impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("red: the payload's drop panics");
    }
}

fn payload_handler(what: &'static str, error: &Error) {
    println!("handler: {what}: {error}");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    std::panic::panic_any(PanicOnDrop);
}

#[test]
fn handler_child_payload_wait_scope() {
    if !is_child() {
        return;
    }
    let path = support::simulator_path();
    let acl = Acl::init_with(&InitOptions::default().library(&path)).unwrap();
    let sim = acl.simulator().unwrap();
    let device = acl.set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    ascend_typestate::set_drop_error_handler(payload_handler);
    let e = ctx.create_event().unwrap().record(&s1).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = e.wait(&s2, |_w| -> ascend_typestate::Result<_> {
            // One reset failure: `wait`'s reset-on-unwind reports it, then tries again.
            sim.inject_fault("aclrtResetEvent", 507000, 0, 1).unwrap();
            panic!("red: panic in the wait scope")
        });
    }));
    println!("caught: {}", caught.is_err());
    println!("FINISHED");
    std::process::exit(0);
}

#[test]
fn handler_child_payload_no_fault() {
    if !is_child() {
        return;
    }
    let path = support::simulator_path();
    let acl = Acl::init_with(&InitOptions::default().library(&path)).unwrap();
    let device = acl.set_device(0).unwrap();
    ascend_typestate::set_drop_error_handler(payload_handler);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let ctx = device.create_context().unwrap();
        // A leaked stream: the context's `Drop` refuses (LiveChildren) and reports it.
        std::mem::forget(ctx.create_stream().unwrap());
        panic!("red: an ordinary panic while the context is alive");
    }));
    println!("caught: {}", caught.is_err());
    println!("FINISHED");
    std::process::exit(0);
}

#[test]
fn handler_payload_panic_stays_in_report_drop_error_during_unwind_of_a_wait_scope() {
    if is_child() {
        return;
    }
    let (status, out, err) = in_child("handler_child_payload_wait_scope", Duration::from_secs(30));
    println!("status {status:?}\n{out}\n{err}");
    assert!(out.contains("FINISHED"), "the process died: {status:?}");
}

#[test]
fn handler_payload_panic_stays_in_a_context_drop_during_unwind() {
    if is_child() {
        return;
    }
    let (status, out, err) = in_child("handler_child_payload_no_fault", Duration::from_secs(30));
    println!("status {status:?}\n{out}\n{err}");
    assert!(out.contains("FINISHED"), "the process died: {status:?}");
}
