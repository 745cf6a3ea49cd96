//! Report threads left running (detached) after a leaked `Subscribed`.
//! Each test runs in a child process under a watchdog.

use crate::support;
use crate::support::callbacks as common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use ascend_typestate::{Acl, Context, Error, InitOptions};
use ascend_typestate::{CallbackMode, ReportThread};
use common::{is_child, run_child};

fn parent(name: &str) {
    let out = run_child(name, Duration::from_secs(30), false);
    eprintln!("{}", out.stdout);
    assert!(out.ok(), "child `{name}` failed:\n{}", out.describe());
}

static CTX: OnceLock<&'static Context<'static>> = OnceLock::new();
static HANDLER_CALLS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static CALLED_ON_REPORT_THREAD: AtomicBool = AtomicBool::new(false);
static CRATE_ANSWER: Mutex<Option<String>> = Mutex::new(None);
static ONCE: AtomicUsize = AtomicUsize::new(0);

/// A drop-error handler that, like any handler might, uses a context it can reach (a
/// `'static` one): here it only creates and destroys a stream.
fn handler(what: &'static str, error: &Error) {
    HANDLER_CALLS
        .lock()
        .unwrap()
        .push(format!("{what}: {error}"));
    let on_report = std::thread::current().name() == Some("acl-report");
    if on_report && ONCE.fetch_add(1, Ordering::SeqCst) == 0 {
        CALLED_ON_REPORT_THREAD.store(true, Ordering::SeqCst);
        if let Some(ctx) = CTX.get() {
            let answer = match ctx.create_stream() {
                Ok(s) => format!("create_stream: Ok; destroy: {:?}", s.destroy()),
                Err(e) => format!("create_stream: Err({e:?})"),
            };
            *CRATE_ANSWER.lock().unwrap() = Some(answer);
        }
    }
}

/// C8: the drop-error handler runs on the report thread, inside the runtime's callback
/// (between the trampoline's `leave_callback` and its return), when a callback of a detached
/// report thread panics. The crate does not refuse its entry points there: the simulator
/// flags C8.
#[test]
fn handler_on_a_detached_report_thread_is_marked_c8() {
    const NAME: &str = "handler_on_a_detached_report_thread_is_marked_c8";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let path = support::simulator_path();
    let sim = support::sim::Sim::open(&path);
    sim.clear_findings();
    ascend_typestate::set_drop_error_handler(handler);
    let acl: &'static Acl = Box::leak(Box::new(
        Acl::init_with(&InitOptions::default().library(&path)).unwrap(),
    ));
    let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx: &'static Context<'static> = Box::leak(Box::new(device.create_context().unwrap()));
    CTX.set(ctx).unwrap();
    let report = ReportThread::spawn(ctx).unwrap();
    let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
    stream
        .launch(CallbackMode::NonBlocking, || {
            std::thread::sleep(Duration::from_millis(300));
            panic!("a callback panics after its thread was detached");
        })
        .unwrap();
    std::mem::forget(stream);
    let stopped = report.stop();
    println!("stop: {stopped:?}");
    assert!(matches!(stopped, Err(Error::LiveChildren { .. })));
    std::thread::sleep(Duration::from_millis(1000));
    println!("handler calls: {:#?}", HANDLER_CALLS.lock().unwrap());
    println!(
        "on report thread: {}; crate answered: {:?}",
        CALLED_ON_REPORT_THREAD.load(Ordering::SeqCst),
        CRATE_ANSWER.lock().unwrap()
    );
    let findings = sim.findings();
    println!("findings: {findings:#?}");
    assert!(findings.is_empty(), "checker findings: {findings:#?}");
}

static SYNC_ANSWER: Mutex<Option<String>> = Mutex::new(None);
static SYNC_ONCE: AtomicUsize = AtomicUsize::new(0);

/// A handler that synchronises the device of a context it can reach (a `'static` one).
fn syncing_handler(what: &'static str, error: &Error) {
    HANDLER_CALLS
        .lock()
        .unwrap()
        .push(format!("{what}: {error}"));
    if std::thread::current().name() == Some("acl-report")
        && SYNC_ONCE.fetch_add(1, Ordering::SeqCst) == 0
        && let Some(ctx) = CTX.get()
    {
        let r = ctx.synchronize_device();
        *SYNC_ANSWER.lock().unwrap() = Some(format!("{r:?}"));
    }
}

/// The same handler, reached through `keep_failure` (an `aclrtProcessReport` failure of the
/// detached thread): it runs on the report thread, outside any callback, so nothing refuses
/// a synchronisation there, and it waits for a blocking callback only that thread can run.
/// On the vendor runtime: a hang; on the simulator: its deadlock watchdog (C1).
#[test]
fn handler_on_a_detached_report_thread_cannot_deadlock_it() {
    const NAME: &str = "handler_on_a_detached_report_thread_cannot_deadlock_it";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let path = support::simulator_path();
    let sim = support::sim::Sim::open(&path);
    sim.clear_findings();
    ascend_typestate::set_drop_error_handler(syncing_handler);
    let acl: &'static Acl = Box::leak(Box::new(
        Acl::init_with(&InitOptions::default().library(&path)).unwrap(),
    ));
    let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx: &'static Context<'static> = Box::leak(Box::new(device.create_context().unwrap()));
    CTX.set(ctx).unwrap();
    let report = ReportThread::spawn(ctx).unwrap();
    let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
    // Keep the stream busy so that the blocking callback is still pending when the thread's
    // next aclrtProcessReport fails.
    sim.sleep_kernel(stream.as_raw(), 300_000);
    stream.launch(CallbackMode::Blocking, || {}).unwrap();
    std::mem::forget(stream);
    let stopped = report.stop();
    println!("stop: {stopped:?}");
    assert!(matches!(stopped, Err(Error::LiveChildren { .. })));
    acl.simulator()
        .unwrap()
        .inject_fault("aclrtProcessReport", 507000, 0, 1)
        .unwrap();
    std::thread::sleep(Duration::from_millis(4000));
    println!("handler calls: {:#?}", HANDLER_CALLS.lock().unwrap());
    println!(
        "synchronize_device in the handler: {:?}",
        SYNC_ANSWER.lock().unwrap()
    );
    let findings = sim.findings();
    println!("findings: {findings:#?}");
    assert!(
        SYNC_ANSWER.lock().unwrap().is_some(),
        "the report thread is stuck in the handler's synchronisation (a hang)"
    );
    assert!(findings.is_empty(), "checker findings: {findings:#?}");
}

/// STRANDED_AFTER: after a burst of 50 `aclrtProcessReport` failures that has already
/// ended (faults cleared; the report thread is healthy and parked for at most 10 ms), a
/// `Subscribed` dropped with a callback pending is leaked at once: `release` does not wait,
/// because the failure counter is only reset by the thread's next successful call. The
/// stream, the report thread, the context, the device and the `Acl` can then never be
/// released (LiveChildren), although the callback runs a few milliseconds later.
#[test]
fn stranded_heuristic_keeps_a_healthy_subscription() {
    const NAME: &str = "stranded_heuristic_keeps_a_healthy_subscription";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let path = support::simulator_path();
    let sim = support::sim::Sim::open(&path);
    sim.clear_findings();
    ascend_typestate::set_drop_error_handler(common::collect);
    let acl = Acl::init_with(&InitOptions::default().library(&path)).unwrap();
    let ran = std::sync::Arc::new(AtomicUsize::new(0));
    let outcome = {
        let device = acl.set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        // A burst of failures (a transient runtime problem), long enough to cross the
        // threshold, then over.
        acl.simulator()
            .unwrap()
            .inject_fault("aclrtProcessReport", 507000, 0, 60)
            .unwrap();
        while sim.call_count("aclrtProcessReport") < 62 {
            std::thread::sleep(Duration::from_micros(200));
        }
        sim.clear_faults();
        let r = std::sync::Arc::clone(&ran);
        stream
            .launch(CallbackMode::NonBlocking, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        // The fallback: drop the subscription (e.g. on an early return).
        drop(stream);
        std::thread::sleep(Duration::from_millis(200));
        println!("callback ran: {}", ran.load(Ordering::SeqCst));
        let stopped = report.stop();
        println!("stop: {stopped:?}");
        let destroyed = ctx.destroy();
        println!("ctx.destroy: {destroyed:?}");
        let reset = device.reset().map(|_| ());
        println!("device.reset: {reset:?}");
        (stopped, destroyed, reset)
    };
    let finalized = acl.finalize();
    println!("finalize: {finalized:?}");
    println!("reported: {:#?}", common::take_drop_errors());
    println!("findings: {:#?}", sim.findings());
    // `stop` returns the burst's first failure (kept, nothing lost); nothing is leaked.
    let burst = matches!(
        &outcome.0,
        Err(ascend_typestate::Error::Runtime {
            call: "aclrtProcessReport",
            ..
        })
    );
    assert!(
        burst && outcome.1.is_ok() && outcome.2.is_ok() && finalized.is_ok(),
        "a healthy report thread's subscription was leaked: {outcome:?} {finalized:?}"
    );
    std::process::exit(0);
}
