//! Host-function threads (C12) when `Drop` does not run or cannot finish: a leaked
//! (`mem::forget`) subscription or thread, an unsubscription that keeps failing, a thread
//! left running whose later failures must still be told, calls from inside a callback, and
//! a runtime without the host-function functions (`Error::Unsupported`).
//!
//! Each test in a child process of its own (`support::isolated`): the handles are leaked on
//! purpose, the drop-error handler is set, or another runtime library is loaded.

use crate::support;

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ascend_typestate::{
    Acl, AclError, CallbackMode, Error, HostFuncThread, InitOptions, ReportThread,
};
use support::isolated::{Reports, isolated};
use support::sim::{Sim, assert_no_findings, leaked_runtime};

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// Waits until `sim` has counted `more` further calls of `aclrtProcessHostFunc`: the loop of
/// a host-function thread still runs.
fn still_processing(sim: &Sim, more: u64) {
    let from = sim.call_count("aclrtProcessHostFunc");
    let deadline = Instant::now() + Duration::from_secs(5);
    while sim.call_count("aclrtProcessHostFunc") < from + more {
        assert!(
            Instant::now() < deadline,
            "no host-function thread processes any more"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `stop` after `mem::forget` of a subscription (which ends the borrow that makes `stop`
/// not compile, `ui-tests/fail/c12_stop_host_func_thread_while_subscribed.rs`) is refused
/// with `Error::LiveChildren`; the thread keeps running and keeps its id (a new thread gets
/// another), and the runtime still has the stream's slot taken (107011).
#[test]
fn c12_stop_with_a_forgotten_subscription_is_refused_and_keeps_the_thread() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let host = HostFuncThread::spawn(ctx).unwrap();
        let old_id = host.thread_id();
        let subscribed = host.subscribe(ctx.create_stream().unwrap()).unwrap();
        let raw = subscribed.as_raw();
        std::mem::forget(subscribed);
        match host.stop() {
            Err(Error::LiveChildren { count: 1 }) => {}
            other => panic!("expected LiveChildren {{ count: 1 }}, got {other:?}"),
        }
        still_processing(&sim, 3);
        let probe = HostFuncThread::spawn(ctx).unwrap();
        assert_ne!(
            probe.thread_id(),
            old_id,
            "the thread exited: its id was reused"
        );
        // SAFETY: `raw` is a live stream (leaked, never destroyed); a refused subscription
        // changes nothing.
        let second = unsafe { acl.api().subscribe_host_func(probe.thread_id(), raw) };
        assert_eq!(
            second.unwrap_err().code(),
            Some(AclError::RtStreamSubscribe),
            "the forgotten subscription is gone"
        );
        // A new stream on the new thread works.
        let stream = probe.subscribe(ctx.create_stream().unwrap()).unwrap();
        stream.unsubscribe().unwrap().destroy().unwrap();
        probe.stop().unwrap();
        assert_no_findings(&sim.findings());
    });
}

/// The same by `Drop`: the refusal goes to the drop-error handler, and the thread's later
/// `aclrtProcessHostFunc` failures are reported as they happen (nobody will call `stop`).
#[test]
fn c12_a_thread_left_running_reports_its_failures_as_they_happen() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let reports = Reports::capture();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        {
            let host = HostFuncThread::spawn(ctx).unwrap();
            std::mem::forget(host.subscribe(ctx.create_stream().unwrap()).unwrap());
        }
        let reported = reports.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert!(
            reported[0].0 == "HostFuncThread" && reported[0].1.starts_with("LiveChildren"),
            "{reported:?}"
        );
        sim.inject_fault("aclrtProcessHostFunc", 507_000, 1);
        let deadline = Instant::now() + Duration::from_secs(5);
        let reported = loop {
            let reported = reports.take();
            if !reported.is_empty() {
                break reported;
            }
            assert!(Instant::now() < deadline, "the failure was not reported");
            std::thread::sleep(Duration::from_millis(2));
        };
        assert_eq!(
            reported[0].0, "HostFuncThread (left running: aclrtProcessHostFunc)",
            "{reported:?}"
        );
        assert!(reported[0].1.contains("507000"), "{reported:?}");
        assert_no_findings(&sim.findings());
    });
}

/// A leaked thread keeps its context: destroying the context is refused with
/// `Error::LiveChildren` (D3), never done under the running thread.
#[test]
fn c12_a_forgotten_thread_keeps_its_context() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = device.create_context().unwrap();
        std::mem::forget(HostFuncThread::spawn(&ctx).unwrap());
        let (error, ctx) = ctx.try_destroy().unwrap_err().into_parts();
        assert!(
            matches!(error, Error::LiveChildren { count: 1 }),
            "{error:?}"
        );
        std::mem::forget(ctx);
        still_processing(&sim, 3);
        assert_no_findings(&sim.findings());
    });
}

/// An unsubscription that fails at every try (the explicit one, then each of the `Drop`
/// fallback's): the stream is leaked, never destroyed while subscribed (no C12 finding),
/// every failure is told, and the thread, still named by the stream's slot, keeps running.
#[test]
fn c12_an_unsubscription_that_keeps_failing_leaks_the_stream_and_keeps_the_thread() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let reports = Reports::capture();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let host = HostFuncThread::spawn(ctx).unwrap();
        let stream = host.subscribe(ctx.create_stream().unwrap()).unwrap();
        sim.inject_fault("aclrtUnSubscribeHostFunc", 507_000, 100);
        let error = stream.unsubscribe().unwrap_err();
        assert_eq!(error.code(), Some(AclError::RtInternalError), "{error:?}");
        let reported = reports.take();
        assert_eq!(reported.len(), 4, "each try of the fallback: {reported:?}");
        assert!(
            reported
                .iter()
                .all(|(what, e)| what.starts_with("HostFuncSubscribed") && e.contains("507000")),
            "{reported:?}"
        );
        assert_eq!(
            reported[3].0,
            "HostFuncSubscribed (stream leaked: still subscribed)"
        );
        sim.clear_faults();
        match host.stop() {
            Err(Error::LiveChildren { count: 1 }) => {}
            other => panic!("expected LiveChildren {{ count: 1 }}, got {other:?}"),
        }
        still_processing(&sim, 3);
        assert_no_findings(&sim.findings());
    });
}

/// C8: a host-function thread is not started, a stream not subscribed or unsubscribed, from
/// inside a host callback (reached through leaked `'static` handles): `Error::InsideCallback`
/// before any runtime call.
#[test]
fn c12_c8_host_func_calls_inside_a_callback_are_refused() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let host = leak(HostFuncThread::spawn(ctx).unwrap());
        let spare = host.subscribe(ctx.create_stream().unwrap()).unwrap();
        let fresh = ctx.create_stream().unwrap();
        let report = ReportThread::spawn(ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let (tx, rx) = mpsc::channel();
        sim.reset_call_counts();
        stream
            .launch(CallbackMode::Blocking, move || {
                let spawned = HostFuncThread::spawn(ctx).map(drop);
                let subscribed = host.try_subscribe(fresh).map(drop).map_err(|f| {
                    let (error, stream) = f.into_parts();
                    std::mem::forget(stream);
                    error
                });
                let unsubscribed = spare.try_unsubscribe().map(drop).map_err(|f| {
                    let (error, subscription) = f.into_parts();
                    std::mem::forget(subscription);
                    error
                });
                tx.send((spawned, subscribed, unsubscribed)).unwrap();
            })
            .unwrap();
        let (spawned, subscribed, unsubscribed) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        for outcome in [spawned, subscribed, unsubscribed] {
            assert!(matches!(outcome, Err(Error::InsideCallback)), "{outcome:?}");
        }
        for call in [
            "aclrtSubscribeHostFunc",
            "aclrtUnSubscribeHostFunc",
            "aclrtSetCurrentContext",
        ] {
            assert_eq!(sim.call_count(call), 0, "{call} was called");
        }
        stream.unsubscribe().unwrap().destroy().unwrap();
        report.stop().unwrap();
        assert_no_findings(&sim.findings());
    });
}

/// The simulator with the three host-function symbols renamed in its dynamic string table
/// (same length, so the file stays valid): a runtime that lacks them, as every main library
/// does (C12: the compact library only).
fn simulator_without_host_func_symbols() -> PathBuf {
    let mut bytes = std::fs::read(support::simulator_path()).unwrap();
    assert_eq!(
        bytes[..6],
        *b"\x7fELF\x02\x01",
        "a 64-bit little-endian ELF"
    );
    let u16_at = |b: &[u8], at: usize| usize::from(u16::from_le_bytes([b[at], b[at + 1]]));
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| {
        usize::try_from(u64::from_le_bytes(b[at..at + 8].try_into().unwrap())).unwrap()
    };
    let (shoff, shentsize, shnum) = (
        u64_at(&bytes, 0x28),
        u16_at(&bytes, 0x3a),
        u16_at(&bytes, 0x3c),
    );
    // The dynamic symbol table (SHT_DYNSYM) names its string table in `sh_link`.
    let dynsym = (0..shnum)
        .map(|i| shoff + i * shentsize)
        .find(|&h| u32_at(&bytes, h + 4) == 11)
        .expect("a dynamic symbol table");
    let dynstr = shoff + u32_at(&bytes, dynsym + 40) as usize * shentsize;
    let (start, size) = (u64_at(&bytes, dynstr + 24), u64_at(&bytes, dynstr + 32));
    for name in [
        "aclrtSubscribeHostFunc",
        "aclrtProcessHostFunc",
        "aclrtUnSubscribeHostFunc",
    ] {
        let needle = format!("\0{name}\0");
        let table = &bytes[start..start + size];
        let at = table
            .windows(needle.len())
            .position(|w| w == needle.as_bytes())
            .unwrap_or_else(|| panic!("{name} is not in the dynamic string table"));
        // The last letter: `...HostFunX`.
        bytes[start + at + name.len()] = b'X';
    }
    let path = support::scratch_dir("simulator_without_host_func")
        .join(ascend_typestate::sys::loader::LIBRARY_NAME);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// On a runtime without host-function subscription, `HostFuncThread::spawn` is
/// `Error::Unsupported` naming the first missing function, and starts nothing; everything
/// else works, and the runtime finalizes with nothing left.
#[test]
fn c12_spawn_is_unsupported_without_the_host_func_functions() {
    isolated(|| {
        let path = simulator_without_host_func_symbols();
        let acl = Acl::init_with(&InitOptions::default().library(&path)).unwrap();
        for symbol in [
            "aclrtSubscribeHostFunc",
            "aclrtProcessHostFunc",
            "aclrtUnSubscribeHostFunc",
        ] {
            assert!(!acl.api().has_symbol(symbol), "{symbol} is still exported");
        }
        let sim = acl
            .simulator()
            .expect("the simulator, renamed symbols aside");
        {
            let device = acl.set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            sim.reset_call_counts();
            let threads_before = thread_count();
            match HostFuncThread::spawn(&ctx) {
                Err(Error::Unsupported {
                    symbol: "aclrtSubscribeHostFunc",
                }) => {}
                other => panic!("expected Unsupported, got {other:?}"),
            }
            assert_eq!(thread_count(), threads_before, "a thread was started");
            assert_eq!(sim.call_count("aclrtSetCurrentContext"), 0);
            let stream = ctx.create_stream().unwrap();
            stream.synchronize().unwrap();
            stream.destroy().unwrap();
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_eq!(sim.live_objects(), 0);
        let findings = sim.findings();
        acl.finalize().unwrap();
        assert!(findings.is_empty(), "{findings:?}");
    });
}

/// This process's threads (Linux: `/proc/self/task`).
fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}
