//! `mem::forget` of `Subscribed` / `ReportThread` / streams, teardown with leaked
//! things alive, dropping a report thread or a subscription inside its own callback. Each
//! test runs in a child process (the `Acl` cannot be finalized after a leak).

use crate::support;
use crate::support::callbacks as common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use ascend_typestate::{Acl, Error, InitOptions};
use ascend_typestate::{CallbackMode, ReportThread, Subscribed};
use common::{is_child, run_child};

fn parent(name: &str) {
    let out = run_child(name, Duration::from_secs(30), false);
    assert!(out.ok(), "child `{name}` failed:\n{}", out.describe());
    eprintln!("{}", out.stdout);
}

fn init() -> (Acl, support::sim::Sim) {
    let path = support::simulator_path();
    let sim = support::sim::Sim::open(&path);
    sim.clear_findings();
    ascend_typestate::set_drop_error_handler(common::collect);
    (
        Acl::init_with(&InitOptions::default().library(&path)).unwrap(),
        sim,
    )
}

fn is_live_children<T>(r: &Result<T, Error>) -> bool {
    matches!(r, Err(Error::LiveChildren { .. }))
}

/// Forget a `Subscribed` with a callback still pending; then stop, destroy, reset, finalize:
/// each must be `LiveChildren` (never released under the leak), the callback must still run,
/// the process must exit cleanly with the detached report thread running.
#[test]
fn forget_subscribed_with_a_pending_callback_then_tear_down() {
    const NAME: &str = "forget_subscribed_with_a_pending_callback_then_tear_down";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let (acl, sim) = init();
    let ran = Arc::new(AtomicUsize::new(0));
    {
        let device = acl.set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let r = Arc::clone(&ran);
        stream
            .launch(CallbackMode::NonBlocking, move || {
                std::thread::sleep(Duration::from_millis(300));
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        std::mem::forget(stream);
        let stopped = report.stop();
        println!("stop: {stopped:?}");
        assert!(is_live_children(&stopped), "{stopped:?}");
        let destroyed = ctx.destroy();
        println!("ctx.destroy: {destroyed:?}");
        assert!(is_live_children(&destroyed));
        // `ctx` was given back inside the error and dropped: reported.
        let reset = device.reset();
        println!("device.reset: {reset:?}");
        assert!(is_live_children(&reset));
    }
    let finalized = acl.finalize();
    println!("finalize: {finalized:?}");
    assert!(is_live_children(&finalized));
    assert!(matches!(Acl::init(), Err(Error::AlreadyInitialized)));
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the pending callback ran");
    let reported = common::take_drop_errors();
    println!("reported: {reported:#?}");
    assert!(sim.findings().is_empty(), "{:#?}", sim.findings());
}

/// Forgetting a `Subscribed` after a callback panicked and `aclrtProcessReport` failed:
/// `stop` returns `LiveChildren` and detaches the thread: are the panic and the failure
/// reported anywhere?
#[test]
fn forget_subscribed_still_reports_the_threads_panics_and_failures() {
    const NAME: &str = "forget_subscribed_still_reports_the_threads_panics_and_failures";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let (acl, sim) = init();
    let device = acl.set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let report = ReportThread::spawn(&ctx).unwrap();
    let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
    acl.simulator()
        .unwrap()
        .inject_fault("aclrtProcessReport", 507000, 0, 1)
        .unwrap();
    stream
        .launch(CallbackMode::Blocking, || panic!("LOST-PANIC"))
        .unwrap();
    stream.synchronize().unwrap();
    std::mem::forget(stream);
    let stopped = report.stop();
    println!("stop: {stopped:?}");
    // The failing call may come after `stop` (the call in progress when the fault was armed
    // may have run the callback): a thread left running reports it when it happens.
    let mut reported = common::take_drop_errors();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !format!("{stopped:?} {reported:?}").contains("aclrtProcessReport")
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
        reported.extend(common::take_drop_errors());
    }
    println!("reported: {reported:#?}");
    assert!(sim.findings().is_empty(), "{:#?}", sim.findings());
    let all = format!("{stopped:?} {reported:?}");
    assert!(
        all.contains("LOST-PANIC") && all.contains("aclrtProcessReport"),
        "lost: stop returned {stopped:?}, the handler got {reported:?}"
    );
    std::mem::forget(ctx);
    std::mem::forget(device);
    std::mem::forget(acl);
}

/// Forget an idle `ReportThread`: the context is kept (`LiveChildren`), nothing else.
#[test]
fn forget_an_idle_report_thread() {
    const NAME: &str = "forget_an_idle_report_thread";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let (acl, sim) = init();
    {
        let device = acl.set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        std::mem::forget(ReportThread::spawn(&ctx).unwrap());
        // Another report thread on the same context still works.
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let (tx, rx) = mpsc::channel();
        stream
            .launch(CallbackMode::Blocking, move || tx.send(()).unwrap())
            .unwrap();
        stream.unsubscribe().unwrap().destroy().unwrap();
        rx.recv().unwrap();
        report.stop().unwrap();
        let destroyed = ctx.destroy();
        assert!(is_live_children(&destroyed), "{destroyed:?}");
    }
    assert!(sim.findings().is_empty(), "{:#?}", sim.findings());
    let finalized = acl.finalize();
    assert!(is_live_children(&finalized), "{finalized:?}");
}

static SLOT: Mutex<Option<ReportThread<'static>>> = Mutex::new(None);
static SUB_SLOT: Mutex<Option<Subscribed<'static, 'static>>> = Mutex::new(None);

/// A report thread dropped inside its own callback (its subscription forgotten, so that it
/// can be moved): must not join itself, must report, must not hang.
#[test]
fn drop_a_report_thread_inside_its_own_callback() {
    const NAME: &str = "drop_a_report_thread_inside_its_own_callback";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let (acl, sim) = init();
    let acl: &'static Acl = Box::leak(Box::new(acl));
    let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx = Box::leak(Box::new(device.create_context().unwrap()));
    let report = ReportThread::spawn(ctx).unwrap();
    let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    stream
        .launch(CallbackMode::NonBlocking, move || {
            go_rx.recv().unwrap();
            let me = SLOT.lock().unwrap().take();
            drop(me); // its own report thread, from its own callback
            done_tx.send(()).unwrap();
        })
        .unwrap();
    std::mem::forget(stream);
    *SLOT.lock().unwrap() = Some(report);
    go_tx.send(()).unwrap();
    done_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the callback finished");
    let reported = common::take_drop_errors();
    println!("reported: {reported:#?}");
    assert!(
        reported.iter().any(|r| r.contains("alive")),
        "{reported:#?}"
    );
    assert!(sim.findings().is_empty(), "{:#?}", sim.findings());
}

/// A `Subscribed` dropped inside its own blocking callback: refused (C8), leaked, reported;
/// the stream's later tasks still run.
#[test]
fn drop_a_subscription_inside_its_own_callback() {
    const NAME: &str = "drop_a_subscription_inside_its_own_callback";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let (acl, sim) = init();
    let acl: &'static Acl = Box::leak(Box::new(acl));
    let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx = Box::leak(Box::new(device.create_context().unwrap()));
    let report: &'static ReportThread<'static> =
        Box::leak(Box::new(ReportThread::spawn(ctx).unwrap()));
    let sub = report.subscribe(ctx.create_stream().unwrap()).unwrap();
    let (tx, rx) = mpsc::channel::<()>();
    let t2 = tx.clone();
    {
        *SUB_SLOT.lock().unwrap() = Some(sub);
        let guard = SUB_SLOT.lock().unwrap();
        let sub = guard.as_ref().unwrap();
        sub.launch(CallbackMode::Blocking, move || {
            let me = SUB_SLOT.lock().unwrap().take();
            drop(me);
            tx.send(()).unwrap();
        })
        .unwrap();
        sub.launch(CallbackMode::Blocking, move || t2.send(()).unwrap())
            .unwrap();
    }
    rx.recv_timeout(Duration::from_secs(10)).expect("first");
    rx.recv_timeout(Duration::from_secs(10)).expect("second");
    let reported = common::take_drop_errors();
    println!("reported: {reported:#?}");
    assert!(reported.iter().all(|r| r.contains("C8")), "{reported:#?}");
    assert!(sim.findings().is_empty(), "{:#?}", sim.findings());
}
