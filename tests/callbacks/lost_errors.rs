//! Errors that must be returned or reported (drop-error handler), and once
//! were not.

use crate::support;
use crate::support::callbacks as common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ascend_typestate::{CallbackMode, ReportThread};
use ascend_typestate::{Error, MallocPolicy};
use support::sim::Session;

/// A callback panics, and `aclrtProcessReport` fails once (injected). `stop` returns the
/// `aclrtProcessReport` failure; the panic is neither returned nor reported.
#[test]
fn a_callback_panic_is_kept_when_process_report_also_failed() {
    if support::child::own_process("a_callback_panic_is_kept_when_process_report_also_failed") {
        return;
    }
    let out = common::watchdog(Duration::from_secs(30), || {
        let session = Session::start();
        let sim = session.acl().simulator().unwrap();
        ascend_typestate::set_drop_error_handler(common::collect);
        common::take_drop_errors();
        let stopped;
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let report = ReportThread::spawn(&ctx).unwrap();
            let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
            sim.inject_fault("aclrtProcessReport", 507000, 0, 1)
                .unwrap();
            stream
                .launch(CallbackMode::Blocking, || panic!("PANIC-IN-CALLBACK"))
                .unwrap();
            let stream = stream.unsubscribe().unwrap();
            stream.destroy().unwrap();
            stopped = format!("{:?}", report.stop());
        }
        let reported = common::take_drop_errors();
        let findings = session.finish();
        (stopped, reported, findings)
    });
    let (stopped, reported, findings) = out.expect("no hang").expect("no panic");
    eprintln!("stop: {stopped}\nreported: {reported:#?}");
    assert!(findings.is_empty(), "{findings:#?}");
    let seen = stopped.contains("PANIC-IN-CALLBACK")
        || reported.iter().any(|r| r.contains("PANIC-IN-CALLBACK"));
    assert!(
        seen,
        "the callback's panic was lost: stop returned {stopped}, handler got {reported:#?}"
    );
    support::child::passed("a_callback_panic_is_kept_when_process_report_also_failed");
}

fn panics_on_3(x: u32) -> u32 {
    if x == 3 {
        panic!("PANIC-IN-KERNEL");
    }
    x + 100
}

/// A simulated kernel's function panics: `run_map` catches the panic and only writes to
/// stderr. The scope returns `Ok`, the output is half written, nothing is reported. (The
/// simulator would have failed the stream's synchronisation, 507000, had the panic reached
/// it.)
#[test]
fn a_kernel_function_panic_is_reported() {
    if support::child::own_process("a_kernel_function_panic_is_reported") {
        return;
    }
    let out = common::watchdog(Duration::from_secs(30), || {
        let session = Session::start();
        ascend_typestate::set_drop_error_handler(common::collect);
        common::take_drop_errors();
        let result;
        let mut host = vec![0u32; 8];
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let stream = ctx.create_stream().unwrap();
            let src: Vec<u32> = (0..8).collect();
            let mut input = ctx.alloc::<u32>(8, MallocPolicy::HugeFirst).unwrap();
            let mut output = ctx.alloc::<u32>(8, MallocPolicy::HugeFirst).unwrap();
            result = format!(
                "{:?}",
                ctx.async_scope(|scope| {
                    let up = scope.copy(&stream, &mut input, &src)?;
                    let mapped = scope.simulated_map(
                        &stream,
                        Duration::from_millis(1),
                        up,
                        &mut output,
                        panics_on_3,
                    )?;
                    scope.copy(&stream, &mut host, mapped)?;
                    Ok(())
                })
            );
            drop((input, output));
            stream.destroy().unwrap();
        }
        let reported = common::take_drop_errors();
        let findings = session.finish();
        (result, host, reported, findings)
    });
    let (result, host, reported, findings) = out.expect("no hang").expect("no panic");
    eprintln!("scope: {result}\nhost: {host:?}\nreported: {reported:#?}\nfindings: {findings:#?}");
    let seen = result.contains("Err") || !reported.is_empty();
    assert!(
        seen,
        "the kernel function's panic was lost: scope returned {result}, output {host:?}"
    );
    support::child::passed("a_kernel_function_panic_is_reported");
}

/// Many `aclrtProcessReport` failures: the first is returned by `stop`, the next 15 and a
/// count of the others reported. (Held: baseline.)
#[test]
fn many_process_report_failures_are_returned_or_reported() {
    if support::child::own_process("many_process_report_failures_are_returned_or_reported") {
        return;
    }
    let out = common::watchdog(Duration::from_secs(30), || {
        let session = Session::start();
        let sim = session.acl().simulator().unwrap();
        ascend_typestate::set_drop_error_handler(common::collect);
        common::take_drop_errors();
        let stopped;
        let ran = Arc::new(AtomicUsize::new(0));
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let report = ReportThread::spawn(&ctx).unwrap();
            let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
            sim.inject_fault("aclrtProcessReport", 507000, 0, 40)
                .unwrap();
            for _ in 0..5 {
                let r = Arc::clone(&ran);
                stream
                    .launch(CallbackMode::Blocking, move || {
                        r.fetch_add(1, Ordering::SeqCst);
                    })
                    .unwrap();
            }
            let stream = stream.unsubscribe().unwrap();
            stream.destroy().unwrap();
            stopped = report.stop();
        }
        let reported = common::take_drop_errors();
        let findings = session.finish();
        (
            format!("{stopped:?}"),
            ran.load(Ordering::SeqCst),
            reported,
            findings,
        )
    });
    let (stopped, ran, reported, findings) = out.expect("no hang").expect("no panic");
    eprintln!("stop: {stopped}\nran: {ran}\nreported: {reported:#?}");
    assert_eq!(ran, 5);
    assert!(findings.is_empty(), "{findings:#?}");
    assert!(stopped.contains("RtInternalError"), "{stopped}");
    assert_eq!(reported.len(), 16, "{reported:#?}");
    support::child::passed("many_process_report_failures_are_returned_or_reported");
}

/// Is a `CallbackPanicked` returned by `stop` for panics not yet taken, even when there were
/// several? (Held: baseline.)
#[test]
fn several_callback_panics_are_counted() {
    if support::child::own_process("several_callback_panics_are_counted") {
        return;
    }
    let out = common::watchdog(Duration::from_secs(30), || {
        let session = Session::start();
        let stopped;
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let report = ReportThread::spawn(&ctx).unwrap();
            let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
            for i in 0..3 {
                stream
                    .launch(CallbackMode::NonBlocking, move || panic!("p{i}"))
                    .unwrap();
            }
            let stream = stream.unsubscribe().unwrap();
            stream.destroy().unwrap();
            stopped = report.stop();
        }
        let findings = session.finish();
        (stopped, findings)
    });
    let (stopped, findings) = out.expect("no hang").expect("no panic");
    assert!(
        matches!(stopped, Err(Error::CallbackPanicked { count: 3, .. })),
        "{stopped:?}"
    );
    assert!(findings.is_empty(), "{findings:#?}");
    support::child::passed("several_callback_panics_are_counted");
}
