//! Panic payloads whose `Drop` panics ("bombs"), thrown by code the crate runs on
//! the runtime's threads (callbacks, simulated kernels) or by the drop-error handler. Each
//! test runs its body in a child process (it may abort or crash).

use crate::support;
use crate::support::callbacks as common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ascend_typestate::{CallbackMode, ReportThread};
use ascend_typestate::{Error, MallocPolicy};
use common::{Bomb, is_child, run_child};
use support::sim::Session;

const LIMIT: Duration = Duration::from_secs(60);

fn parent(name: &str) {
    let out = run_child(name, LIMIT, false);
    assert!(out.ok(), "child `{name}` failed:\n{}", out.describe());
}

// ---------------------------------------------------------------------------------------
// 1. A host callback panics with a payload whose Drop panics.
// ---------------------------------------------------------------------------------------

#[test]
fn callback_panic_payload_whose_drop_panics() {
    const NAME: &str = "callback_panic_payload_whose_drop_panics";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        stream
            .launch(CallbackMode::Blocking, || {
                std::panic::panic_any(Bomb("callback payload"))
            })
            .unwrap();
        let stream = stream.unsubscribe().unwrap();
        stream.destroy().unwrap();
        let stopped = report.stop();
        assert!(
            matches!(stopped, Err(Error::CallbackPanicked { count: 1, .. })),
            "{stopped:?}"
        );
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

// ---------------------------------------------------------------------------------------
// 2. A simulated kernel's function panics with a payload whose Drop panics.
// ---------------------------------------------------------------------------------------

fn bomb_kernel(_x: u32) -> u32 {
    std::panic::panic_any(Bomb("kernel payload"))
}

#[test]
fn kernel_panic_payload_whose_drop_panics() {
    const NAME: &str = "kernel_panic_payload_whose_drop_panics";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let input = ctx.alloc::<u32>(16, MallocPolicy::HugeFirst).unwrap();
        let mut output = ctx.alloc::<u32>(16, MallocPolicy::HugeFirst).unwrap();
        let r = ctx.async_scope(|scope| {
            scope.simulated_map(
                &stream,
                Duration::from_millis(1),
                &input,
                &mut output,
                bomb_kernel,
            )?;
            Ok(())
        });
        eprintln!("scope: {r:?}");
        drop((input, output));
        stream.destroy().unwrap();
    }
    let _ = session.finish();
}

// ---------------------------------------------------------------------------------------
// 3. The drop-error handler panics with a bomb while an async scope synchronises its
//    streams: the panic escapes `report_drop_error` (its `catch_unwind` catches the handler's
//    panic, but then drops the payload outside it), and the scope unwinds before its third
//    stream is synchronised. The third stream still copies into a `Vec` the caller frees
//    while unwinding: a use after free (M1) from safe code + two injected sync failures.
// ---------------------------------------------------------------------------------------

fn bomb_handler(_what: &'static str, _error: &Error) {
    std::panic::panic_any(Bomb("drop-error handler payload"))
}

fn identity(x: u8) -> u8 {
    x
}

#[test]
fn handler_bomb_cannot_end_async_scope_before_every_stream_is_synchronised() {
    const NAME: &str = "handler_bomb_cannot_end_async_scope_before_every_stream_is_synchronised";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let session = Session::start();
    let sim = session.acl().simulator().unwrap();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        const BIG: usize = 16 << 20;
        let small = vec![1u8; 64];
        let mut d1 = ctx.alloc::<u8>(64, MallocPolicy::HugeFirst).unwrap();
        let mut d2 = ctx.alloc::<u8>(64, MallocPolicy::HugeFirst).unwrap();
        let big_in = ctx.alloc::<u8>(BIG, MallocPolicy::HugeFirst).unwrap();
        let mut big_mid = ctx.alloc::<u8>(BIG, MallocPolicy::HugeFirst).unwrap();
        ascend_typestate::set_drop_error_handler(bomb_handler);
        let escaped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut out = vec![7u8; BIG]; // mmap-backed: freed memory is unmapped
            let r = ctx.async_scope(|scope| {
                scope.copy(&s1, &mut d1, &small)?;
                scope.copy(&s2, &mut d2, &small)?;
                let mid = scope.simulated_map(
                    &s3,
                    Duration::from_millis(400),
                    &big_in,
                    &mut big_mid,
                    identity,
                )?;
                scope.copy(&s3, &mut out, mid)?;
                // The 1st and 3rd synchronisations fail once (the 2nd and 4th, the retries of
                // `second_chance`, succeed): s1's error is returned, s2's is reported.
                sim.inject_fault("aclrtSynchronizeStream", 507000, 0, 1)
                    .unwrap();
                sim.inject_fault("aclrtSynchronizeStream", 507000, 2, 1)
                    .unwrap();
                Ok(())
            });
            eprintln!("scope returned normally: {r:?}");
            out[0]
        }));
        ascend_typestate::set_drop_error_handler(common::collect);
        // If the scope unwound early, `out` is freed and s3 is still copying into it.
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            escaped.is_ok(),
            "a panic escaped async_scope (through report_drop_error) before s3 was synchronised"
        );
        s1.destroy().unwrap();
        s2.destroy().unwrap();
        s3.destroy().unwrap();
        drop((d1, d2, big_in, big_mid));
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

// ---------------------------------------------------------------------------------------
// 4. The same handler while an async scope's body panics (SynchronizeOnUnwind): a panic in a
//    drop during unwinding.
// ---------------------------------------------------------------------------------------

#[test]
fn handler_bomb_while_a_scope_unwinds() {
    const NAME: &str = "handler_bomb_while_a_scope_unwinds";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let session = Session::start();
    let sim = session.acl().simulator().unwrap();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let s1 = ctx.create_stream().unwrap();
        let small = vec![1u8; 64];
        let mut d1 = ctx.alloc::<u8>(64, MallocPolicy::HugeFirst).unwrap();
        ascend_typestate::set_drop_error_handler(bomb_handler);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = ctx.async_scope(|scope| {
                scope.copy(&s1, &mut d1, &small)?;
                sim.inject_fault("aclrtSynchronizeStream", 507000, 0, 1)
                    .unwrap();
                panic!("the body panics");
                #[allow(unreachable_code)]
                Ok(())
            });
        }));
        ascend_typestate::set_drop_error_handler(common::collect);
        assert!(r.is_err());
        s1.destroy().unwrap();
        drop(d1);
    }
    let _ = session.finish();
}

// ---------------------------------------------------------------------------------------
// 5. The handler's bomb from a ReportThread's stop (later aclrtProcessReport failures):
//    does a panic escape `stop`?
// ---------------------------------------------------------------------------------------

#[test]
fn handler_bomb_from_report_thread_stop() {
    const NAME: &str = "handler_bomb_from_report_thread_stop";
    if !is_child(NAME) {
        return parent(NAME);
    }
    let session = Session::start();
    let sim = session.acl().simulator().unwrap();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        sim.inject_fault("aclrtProcessReport", 507000, 0, 3)
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let r2 = Arc::clone(&ran);
        stream
            .launch(CallbackMode::Blocking, move || {
                r2.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        stream.destroy().unwrap();
        ascend_typestate::set_drop_error_handler(bomb_handler);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| report.stop()));
        ascend_typestate::set_drop_error_handler(common::collect);
        assert!(r.is_ok(), "a panic escaped ReportThread::stop");
    }
    let _ = session.finish();
}
