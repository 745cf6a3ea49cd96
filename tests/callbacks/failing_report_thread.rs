//! A report thread that cannot run a pending blocking callback (its
//! `aclrtProcessReport` keeps failing), reached through every synchronisation a safe
//! program can issue on a subscribed stream, not only `unsubscribe`. Each case runs in a
//! child process under a watchdog.

use crate::support;
use crate::support::callbacks as common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ascend_typestate::{Acl, Context, MallocPolicy, timeout};
use ascend_typestate::{CallbackMode, ReportThread};
use common::run_child_env;

const OP: &str = "FAILING_REPORT_OP";
const CODE: &str = "FAILING_REPORT_CODE";

fn parent(name: &str, op: &str, code: &str) -> common::ChildOutcome {
    let out = run_child_env(
        name,
        Duration::from_secs(40),
        false,
        &[(OP, op), (CODE, code)],
    );
    println!("=== {op} {code}\n{}", out.stdout);
    out
}

struct Leaked {
    acl: &'static Acl,
    ctx: &'static Context<'static>,
    report: &'static ReportThread<'static>,
}

fn leaked_runtime() -> (Leaked, support::sim::Sim) {
    ascend_typestate::set_drop_error_handler(common::collect);
    let (acl, sim) = support::sim::leaked_runtime();
    let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx: &'static Context<'static> = Box::leak(Box::new(device.create_context().unwrap()));
    let report: &'static ReportThread<'static> =
        Box::leak(Box::new(ReportThread::spawn(ctx).unwrap()));
    (Leaked { acl, ctx, report }, sim)
}

/// The child: a blocking callback is pending on a subscribed stream while the report
/// thread's `aclrtProcessReport` fails (`code`, many times); then one operation that waits
/// for the stream. `unsubscribe` gives up with `ReportThreadFailing` (the round-2 fix); the
/// others should not hang either (or at least end with an error, like `unsubscribe`).
fn child(op: &str, code: i32) {
    let (rt, sim) = leaked_runtime();
    let ran = Arc::new(AtomicUsize::new(0));
    let sub = rt
        .report
        .subscribe(rt.ctx.create_stream().unwrap())
        .unwrap();
    let other = rt.ctx.create_stream().unwrap();
    rt.acl
        .simulator()
        .unwrap()
        .inject_fault("aclrtProcessReport", code, 0, 1_000_000)
        .unwrap();
    // Let the thread see a few failures first.
    std::thread::sleep(Duration::from_millis(50));
    let r = Arc::clone(&ran);
    sub.launch(CallbackMode::Blocking, move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    let ctx = rt.ctx;
    let op_owned = op.to_owned();
    let start = Instant::now();
    let outcome = common::watchdog(Duration::from_secs(8), move || -> String {
        match op_owned.as_str() {
            "unsubscribe" => format!(
                "{:?}",
                sub.try_unsubscribe().map(|_s| ()).map_err(|f| {
                    let e = f.error;
                    std::mem::forget(f.value);
                    e
                })
            ),
            "synchronize" => {
                let r = sub.synchronize();
                std::mem::forget(sub);
                format!("{r:?}")
            }
            "synchronize_with" => {
                let r = sub.synchronize_with(timeout!(2_000));
                std::mem::forget(sub);
                format!("{r:?}")
            }
            "synchronize_device" => {
                let r = ctx.synchronize_device();
                std::mem::forget(sub);
                format!("{r:?}")
            }
            "event_destroy" => {
                // An event reset on the subscribed stream (behind the blocking callback):
                // destroying it waits for that stream (E9).
                let ev = ctx.create_event().unwrap();
                let ev = ev.record(&other).unwrap();
                let ev = match ev.wait(&sub, |w| w.reset()) {
                    Ok(ev) => ev,
                    Err(e) => return format!("wait: {e:?}"),
                };
                let r = ev.try_destroy().map_err(|f| {
                    let e = f.error;
                    std::mem::forget(f.value);
                    e
                });
                std::mem::forget(sub);
                format!("{r:?}")
            }
            "async_scope" => {
                let mut buf = ctx.alloc::<u8>(64, MallocPolicy::HugeFirst).unwrap();
                let r = ctx.async_scope(|scope| scope.memset(&sub, &mut buf, 7));
                std::mem::forget(buf);
                std::mem::forget(sub);
                format!("{r:?}")
            }
            "drop" => {
                drop(sub);
                "dropped".to_owned()
            }
            other => panic!("unknown op {other}"),
        }
    });
    let elapsed = start.elapsed();
    let hung = outcome.is_none();
    println!(
        "op {op} with aclrtProcessReport failing {code}: {} after {elapsed:?}",
        match &outcome {
            None => "HUNG (watchdog, 8 s)".to_owned(),
            Some(Ok(s)) => s.clone(),
            Some(Err(_)) => "panicked".to_owned(),
        }
    );
    println!(
        "process_report calls: {}",
        sim.call_count("aclrtProcessReport")
    );
    println!("reported: {:#?}", common::take_drop_errors());
    // Let the callback run (so that the process can end).
    sim.clear_faults();
    for _ in 0..200 {
        if ran.load(Ordering::SeqCst) == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("callback ran: {}", ran.load(Ordering::SeqCst));
    let findings = sim.findings();
    println!("findings: {findings:#?}");
    if hung {
        println!("RESULT: HANG");
        std::process::exit(3);
    }
    println!("RESULT: OK");
    std::process::exit(0);
}

#[test]
fn failing_report_thread_child() {
    let (Ok(op), Ok(code)) = (std::env::var(OP), std::env::var(CODE)) else {
        return;
    };
    child(&op, code.parse().unwrap());
}

/// Control: `unsubscribe` under a failing report thread ends with `ReportThreadFailing`.
#[test]
fn unsubscribe_gives_up_on_a_failing_report_thread() {
    if std::env::var(OP).is_ok() {
        return;
    }
    let out = parent("failing_report_thread_child", "unsubscribe", "507000");
    assert!(out.ok(), "{}", out.describe());
}

/// Every other safe way to wait for the subscribed stream, under the same failing report
/// thread: `Stream::synchronize` through `Deref`, `Context::synchronize_device`,
/// `Event::destroy` of an event reset on it, the end of an async scope that used it, and
/// `Drop` of the `Subscribed`.
#[test]
fn bounded_waits_on_a_stream_whose_report_thread_fails() {
    if std::env::var(OP).is_ok() {
        return;
    }
    // The unbounded waits (`synchronize`, `synchronize_device`, an event's or a scope's
    // synchronisation) wait for the runtime to recover, as documented in `callback`: a
    // blocking callback nobody can run holds its stream like a kernel that never ends.
    let mut bad = String::new();
    for op in ["synchronize_with", "drop"] {
        let out = parent("failing_report_thread_child", op, "507000");
        if !out.ok() {
            bad.push_str(&format!("--- {op}: {}\n", out.describe()));
        }
    }
    assert!(bad.is_empty(), "{bad}");
}

/// `aclrtProcessReport` answering "thread not subscribed" (107012) while the thread is
/// subscribed and a callback is pending: counted as a failure (it was once counted as a
/// good call, and `unsubscribe` waited without end with no error surfacing).
#[test]
fn not_subscribed_while_callbacks_wait_does_not_hang_unsubscribe() {
    if std::env::var(OP).is_ok() {
        return;
    }
    // 107012 only: a runtime answering "timeout" (507012) says the thread is healthy with
    // nothing to run yet, so waiting is right (the thread backs off if it answers at once).
    let out = parent("failing_report_thread_child", "unsubscribe", "107012");
    assert!(out.ok(), "--- unsubscribe, 107012: {}", out.describe());
}
