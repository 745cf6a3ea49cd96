//! Report threads and subscriptions dropped by thread-local destructors
//! (a thread's exit), where `std::thread::current()` and other thread-locals may already be
//! gone. Each case runs in a child process under a watchdog.

use crate::support;
use crate::support::callbacks as common;

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ascend_typestate::{Acl, Context, InitOptions};
use ascend_typestate::{CallbackMode, ReportThread, Subscribed};
use common::{is_child, run_child};

fn parent(name: &str) {
    let out = run_child(name, Duration::from_secs(30), false);
    println!("{}", out.stdout);
    assert!(out.ok(), "child `{name}` failed:\n{}", out.describe());
}

fn leaked() -> (&'static Acl, &'static Context<'static>, support::sim::Sim) {
    let path = support::simulator_path();
    let sim = support::sim::Sim::open(&path);
    sim.clear_findings();
    ascend_typestate::set_drop_error_handler(common::collect);
    let acl: &'static Acl = Box::leak(Box::new(
        Acl::init_with(&InitOptions::default().library(&path)).unwrap(),
    ));
    let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx: &'static Context<'static> = Box::leak(Box::new(device.create_context().unwrap()));
    (acl, ctx, sim)
}

thread_local! {
    static REPORT: RefCell<Option<ReportThread<'static>>> = const { RefCell::new(None) };
    static SUB: RefCell<Option<Subscribed<'static, 'static>>> = const { RefCell::new(None) };
}

/// A report thread kept in a thread-local: dropped when its owner thread exits.
#[test]
fn report_thread_dropped_by_a_thread_local_destructor() {
    const NAME: &str = "report_thread_dropped_by_a_thread_local_destructor";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let (_acl, ctx, sim) = leaked();
    let t = std::thread::spawn(move || {
        let report = ReportThread::spawn(ctx).unwrap();
        REPORT.with(|r| *r.borrow_mut() = Some(report));
    });
    let joined = t.join();
    println!("owner thread joined: {}", joined.is_ok());
    println!("reported: {:#?}", common::take_drop_errors());
    let findings = sim.findings();
    println!("findings: {findings:#?}");
    assert!(joined.is_ok() && findings.is_empty());
}

/// A subscription (to a leaked report thread) with a pending callback kept in a
/// thread-local: dropped when its owner thread exits.
#[test]
fn subscription_dropped_by_a_thread_local_destructor() {
    const NAME: &str = "subscription_dropped_by_a_thread_local_destructor";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let (_acl, ctx, sim) = leaked();
    let report: &'static ReportThread<'static> =
        Box::leak(Box::new(ReportThread::spawn(ctx).unwrap()));
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    let t = std::thread::spawn(move || {
        let sub = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        sub.launch(CallbackMode::Blocking, move || {
            std::thread::sleep(Duration::from_millis(100));
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        SUB.with(|s| *s.borrow_mut() = Some(sub));
    });
    let joined = t.join();
    println!("owner thread joined: {}", joined.is_ok());
    println!("ran: {}", ran.load(Ordering::SeqCst));
    println!("reported: {:#?}", common::take_drop_errors());
    let findings = sim.findings();
    println!("findings: {findings:#?}");
    assert!(joined.is_ok() && findings.is_empty());
}
