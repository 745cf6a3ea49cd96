//! Attacks on the cleanup fixes (kept unreset events, retry_cleanup /
//! retry_or_keep, the runtime's message beside the error, `Pipeline::release`, the model
//! path checks). Each test asserts the documented behaviour, so it fails when the library is
//! wrong. The dangerous ones run in a child process.

use crate::support;

use std::time::{Duration, Instant};

use ascend_typestate::{AclError, Error, StreamConfig, WaitError};
use support::sim::Session;

/// Runs `name` again in a child with `var` set; asserts it exited successfully and printed
/// `marker`.
fn run_in_child(name: &str, var: &str, marker: &str) {
    let (status, out, err) = support::child::in_child(name, var, Duration::from_secs(90));
    assert!(
        status.is_some_and(|s| s.success()),
        "child {name} failed: status {status:?}\n--- stdout\n{out}\n--- stderr\n{err}"
    );
    assert!(out.contains(marker), "{out}\n{err}");
}

fn is_child(var: &str) -> bool {
    std::env::var_os(var).is_some()
}

// ---------------------------------------------------------------------------------------
// 1. Kept unreset events, and the S6 exception.
// ---------------------------------------------------------------------------------------

/// Control: a wait scope whose body stops the context (S6) and returns an error: every
/// reset `wait` then tries is refused with 107023, so the event is destroyed (the runtime
/// allows it after a stop), nothing is kept, and the context can be destroyed.
#[test]
fn s6_wait_scope_after_a_stop_destroys_the_event() {
    const CHILD: &str = "RT2_S6_CONTROL_CHILD";
    if !is_child(CHILD) {
        return run_in_child(
            "s6_wait_scope_after_a_stop_destroys_the_event",
            CHILD,
            "s6 ok",
        );
    }
    s6_scenario(0);
}

/// Attack: the same, but the first two resets `wait` tries fail with another (transient)
/// code, and only then does the runtime answer 107023 (the real stop) to every later try
/// (the reset issued alone, four times). The last word of the runtime is "stopped", so the
/// event must be destroyed as after any stop (S6). `finish_unreset` decides on the error of
/// the *second* try (kept in `ResetFailed`), not on the last one: the event is kept, counted,
/// and the context refuses to be destroyed.
#[test]
fn s6_wait_scope_after_a_stop_destroys_the_event_even_if_early_tries_failed_otherwise() {
    const CHILD: &str = "RT2_S6_MISFIRE_CHILD";
    if !is_child(CHILD) {
        return run_in_child(
            "s6_wait_scope_after_a_stop_destroys_the_event_even_if_early_tries_failed_otherwise",
            CHILD,
            "s6 ok",
        );
    }
    s6_scenario(2);
}

/// The same misfire on the unwind path: the body stops the context, then panics; the first
/// two resets fail transiently, every later one with 107023. `reset_on_unwind` decides on
/// `ResetFailed::error` (the second try's) too: the event is kept after a stop.
#[test]
fn s6_unwinding_scope_after_a_stop_destroys_the_event_even_if_early_tries_failed_otherwise() {
    const CHILD: &str = "RT2_S6_UNWIND_CHILD";
    if !is_child(CHILD) {
        return run_in_child(
            "s6_unwinding_scope_after_a_stop_destroys_the_event_even_if_early_tries_failed_otherwise",
            CHILD,
            "s6 unwind ok",
        );
    }
    support::quiet_panics(&["rt2 stopped body panics"]);
    let session = Session::start();
    let reports = support::DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let s1 = ctx
        .create_stream_with(StreamConfig::new().stop_on_failure())
        .unwrap();
    let s2 = ctx.create_stream().unwrap();
    let baseline = session.sim.live_objects();
    let event = ctx.create_event().unwrap().record(&s1).unwrap();
    event.synchronize().unwrap();
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = event.try_wait(&s2, |_waited| -> ascend_typestate::Result<_> {
            session.sim.inject_task_failure(s1.as_raw(), 507_899);
            session.sim.sleep_kernel(s1.as_raw(), 1_000);
            std::thread::sleep(Duration::from_millis(100));
            session.sim.inject_fault("aclrtResetEvent", 507_000, 2);
            panic!("rt2 stopped body panics")
        });
    }));
    session.sim.clear_faults();
    assert!(unwound.is_err());
    assert_eq!(
        session.sim.live_objects(),
        baseline,
        "the event was kept after a stop (S6): reports {:#?}",
        reports.take()
    );
    drop(s1);
    drop(s2);
    if let Err(failed) = ctx.try_destroy() {
        let e = failed.error.to_string();
        std::mem::forget(failed.value);
        panic!("the context refused to be destroyed after a stop: {e}");
    }
    device.reset().unwrap();
    support::sim::assert_no_findings(&session.finish());
    println!("s6 unwind ok");
}

fn s6_scenario(transient_reset_faults: u32) {
    let session = Session::start();
    let reports = support::DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let s1 = ctx
        .create_stream_with(StreamConfig::new().stop_on_failure())
        .unwrap();
    let s2 = ctx.create_stream().unwrap();
    let baseline = session.sim.live_objects();
    let event = ctx.create_event().unwrap().record(&s1).unwrap();
    event.synchronize().unwrap();
    let outcome = event.try_wait(&s2, |_waited| {
        // The context stops (S6) while the scope is open.
        session.sim.inject_task_failure(s1.as_raw(), 507_899);
        session.sim.sleep_kernel(s1.as_raw(), 1_000);
        std::thread::sleep(Duration::from_millis(100));
        if transient_reset_faults > 0 {
            session
                .sim
                .inject_fault("aclrtResetEvent", 507_000, transient_reset_faults);
        }
        Err(Error::InvalidArgument("the body's error"))
    });
    session.sim.clear_faults();
    match std::convert::identity(outcome) {
        Err(WaitError::Unreset(e)) => {
            assert!(
                matches!(e, Error::InvalidArgument("the body's error")),
                "{e}"
            )
        }
        Err(other) => panic!("expected Unreset: {other}"),
        Ok(event) => {
            std::mem::forget(event);
            panic!("a reset was issued after a stop")
        }
    }
    // After a stop the event is destroyed: nothing of it remains.
    assert_eq!(
        session.sim.live_objects(),
        baseline,
        "the event was kept after a stop (S6): reports {:#?}",
        reports.take()
    );
    drop(s1);
    drop(s2);
    if let Err(failed) = ctx.try_destroy() {
        let e = failed.error.to_string();
        std::mem::forget(failed.value);
        panic!("the context refused to be destroyed after a stop: {e}");
    }
    device.reset().unwrap();
    let findings = session.finish();
    support::sim::assert_no_findings(&findings);
    println!("s6 ok");
}

/// A body that panics while every reset fails (not a stop): the event is kept (never
/// destroyed unreset, E4), counted in its context (which then refuses to be destroyed),
/// and every reset error is reported exactly once.
#[test]
fn unwinding_scope_with_failing_resets_keeps_and_counts_the_event() {
    const CHILD: &str = "RT2_UNWIND_CHILD";
    if !is_child(CHILD) {
        return run_in_child(
            "unwinding_scope_with_failing_resets_keeps_and_counts_the_event",
            CHILD,
            "kept ok",
        );
    }
    support::quiet_panics(&["rt2 body panics"]);
    let session = Session::start();
    session.expect_findings();
    let reports = support::DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let baseline = session.sim.live_objects();
    let event = ctx.create_event().unwrap().record(&s1).unwrap();
    session.sim.inject_fault("aclrtResetEvent", 507_000, 1_000);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = event.try_wait(&s2, |_waited| -> ascend_typestate::Result<_> {
            panic!("rt2 body panics")
        });
    }));
    session.sim.clear_faults();
    assert!(unwound.is_err());
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    let reported = reports.take();
    // 1 (failed once) + 3 (tried again) + 1 (issued alone) + 1 (reset on unwind).
    assert_eq!(reported.len(), 6, "{reported:#?}");
    assert_eq!(session.sim.live_objects(), baseline + 1, "{reported:#?}");
    s1.destroy().unwrap();
    s2.destroy().unwrap();
    let failed = ctx
        .try_destroy()
        .expect_err("a kept event keeps its context");
    assert!(
        matches!(failed.error, Error::LiveChildren { count: 1 }),
        "{}",
        failed.error
    );
    std::mem::forget(failed.value);
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    println!("kept ok");
    std::process::exit(0);
}

/// A scope with a second waiting stream (its reset needs a join) while every reset fails:
/// the join events whose resets keep failing are kept too. Everything kept must be counted
/// in the context: its refusal (LiveChildren) must count every object the runtime still has
/// beyond the baseline, and no waited event may be destroyed unreset (E4).
#[test]
fn also_wait_scope_with_failing_resets_counts_every_kept_object() {
    const CHILD: &str = "RT2_ALSO_WAIT_CHILD";
    if !is_child(CHILD) {
        return run_in_child(
            "also_wait_scope_with_failing_resets_counts_every_kept_object",
            CHILD,
            "counted ok",
        );
    }
    let session = Session::start();
    session.expect_findings();
    let reports = support::DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    // Streams are destroyed before the count: the baseline is the context alone.
    let baseline = session.sim.live_objects();
    let (s1, s2, s3) = (
        ctx.create_stream().unwrap(),
        ctx.create_stream().unwrap(),
        ctx.create_stream().unwrap(),
    );
    let event = ctx.create_event().unwrap().record(&s1).unwrap();
    session.sim.inject_fault("aclrtResetEvent", 507_000, 1_000);
    let outcome = event.try_wait(&s2, |mut waited| {
        waited.also_wait(&s3)?;
        Err(Error::InvalidArgument("the body's error"))
    });
    session.sim.clear_faults();
    match std::convert::identity(outcome) {
        Err(WaitError::Unreset(_)) => {}
        Err(other) => panic!("expected Unreset: {other}"),
        Ok(event) => {
            std::mem::forget(event);
            panic!("a reset was issued")
        }
    }
    let _ = reports.take();
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    s1.destroy().unwrap();
    s2.destroy().unwrap();
    s3.destroy().unwrap();
    let kept = session.sim.live_objects() - baseline;
    assert!(kept >= 1);
    match ctx.try_destroy() {
        Ok(()) => panic!("the context was destroyed over {kept} kept objects"),
        Err(failed) => {
            assert!(
                matches!(failed.error, Error::LiveChildren { count } if count == kept),
                "{} (runtime objects kept: {kept})",
                failed.error
            );
            std::mem::forget(failed.value);
        }
    }
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    println!("counted ok (kept {kept})");
    std::process::exit(0);
}

/// A join event (an event re-recorded on another stream after a pending reset) whose reset
/// keeps failing: kept and counted, the context refuses to be destroyed, no E4.
#[test]
fn failing_join_reset_keeps_and_counts_the_join() {
    const CHILD: &str = "RT2_JOIN_CHILD";
    if !is_child(CHILD) {
        return run_in_child(
            "failing_join_reset_keeps_and_counts_the_join",
            CHILD,
            "join ok",
        );
    }
    let session = Session::start();
    session.expect_findings();
    let reports = support::DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let baseline = session.sim.live_objects();
    let (producer, consumer) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    {
        let event = ctx.create_event().unwrap().record(&producer).unwrap();
        let event = event.wait(&consumer, |w| w.reset()).unwrap();
        session.sim.sleep_kernel(consumer.as_raw(), 20_000);
        // Re-recording on the producer joins it after the pending reset on the consumer.
        session.sim.inject_fault("aclrtResetEvent", 507_000, 1_000);
        let recorded = event.try_record(&producer);
        session.sim.clear_faults();
        let event = match recorded {
            Err(failed) => failed.into_parts().1,
            Ok(_) => panic!("the join's reset was meant to fail"),
        };
        producer.synchronize().unwrap();
        consumer.synchronize().unwrap();
        event.destroy().unwrap();
    }
    let _ = reports.take();
    producer.destroy().unwrap();
    consumer.destroy().unwrap();
    let kept = session.sim.live_objects() - baseline;
    match ctx.try_destroy() {
        Ok(()) => assert_eq!(kept, 0, "destroyed over kept objects"),
        Err(failed) => {
            assert!(
                matches!(failed.error, Error::LiveChildren { count } if count == kept),
                "{} (kept {kept})",
                failed.error
            );
            std::mem::forget(failed.value);
        }
    }
    let findings = session.sim.findings();
    assert!(findings.iter().all(|f| f.rule != "E4"), "{findings:#?}");
    println!("join ok (kept {kept})");
    std::process::exit(0);
}

// ---------------------------------------------------------------------------------------
// 2. retry_or_keep: a forced destroy never falls back on the waiting Drop.
// ---------------------------------------------------------------------------------------

/// `destroy_force` on a stream stuck behind a long kernel, whose forced destroy keeps
/// failing: it must return quickly (never the synchronising `Drop`), keep the stream,
/// count it (the context refuses), and report each further failure once.
#[test]
fn destroy_force_that_keeps_failing_neither_waits_nor_loses_the_stream() {
    const CHILD: &str = "RT2_FORCE_CHILD";
    if !is_child(CHILD) {
        return run_in_child(
            "destroy_force_that_keeps_failing_neither_waits_nor_loses_the_stream",
            CHILD,
            "force ok",
        );
    }
    let session = Session::start();
    session.expect_findings();
    let reports = support::DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let stream = ctx.create_stream().unwrap();
    let host_fns = ctx.create_stream().unwrap().with_host_functions();
    let baseline = session.sim.live_objects();
    session.sim.sleep_kernel(stream.as_raw(), 3_000_000);
    session.sim.sleep_kernel(host_fns.as_raw(), 3_000_000);
    session.sim.reset_call_counts();
    session
        .sim
        .inject_fault("aclrtDestroyStreamForce", 507_000, 1_000);
    let started = Instant::now();
    let e1 = stream.destroy_force().unwrap_err();
    let e2 = host_fns.destroy_force().unwrap_err();
    let took = started.elapsed();
    session.sim.clear_faults();
    assert_eq!(e1.code(), Some(AclError::RtInternalError), "{e1}");
    assert_eq!(e2.code(), Some(AclError::RtInternalError), "{e2}");
    assert!(
        took < Duration::from_secs(1),
        "destroy_force waited {took:?}"
    );
    assert_eq!(session.sim.call_count("aclrtSynchronizeStream"), 0);
    let reported = reports.take();
    assert_eq!(reported.len(), 6, "3 further tries each: {reported:#?}");
    assert_eq!(session.sim.live_objects(), baseline);
    let failed = ctx.try_destroy().expect_err("two kept streams");
    assert!(
        matches!(failed.error, Error::LiveChildren { count: 2 }),
        "{}",
        failed.error
    );
    std::mem::forget(failed.value);
    println!("force ok");
    std::process::exit(0);
}

// ---------------------------------------------------------------------------------------
// 3. The runtime's message kept beside the error.
// ---------------------------------------------------------------------------------------

/// Two failures of the same call with the same code but different explanations (two
/// missing model files). The first error's message must be its own, or `None` ("until its
/// next failed call"), never the second call's explanation.
#[test]
fn a_held_error_never_shows_another_calls_message() {
    let session = Session::start();
    let api = session.acl().api();
    let first = api
        .model_query_size(c"/nonexistent/rt2-first.om")
        .unwrap_err();
    let own = first.message().map(|m| m.as_str().to_owned());
    assert!(
        own.as_deref().is_some_and(|m| m.contains("rt2-first")),
        "{own:?}"
    );
    let second = api
        .model_query_size(c"/nonexistent/rt2-second.om")
        .unwrap_err();
    assert_eq!(
        (first.code(), first.to_string()),
        (second.code(), second.to_string()),
        "same call, same code"
    );
    if let Some(m) = first.message() {
        assert!(
            !m.as_str().contains("rt2-second"),
            "the first error shows the second call's message: {m}"
        );
    }
    let converted: Error = first.into();
    if let Error::Runtime {
        message: Some(m), ..
    } = &converted
    {
        assert!(
            !m.as_str().contains("rt2-second"),
            "Error::Runtime of the first call carries the second call's message: {m}"
        );
    }
    session.finish();
}

/// The message of a typed failure is the failing call's own.
#[test]
fn a_typed_error_carries_its_own_message() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        session
            .sim
            .inject_fault("aclrtCreateEventWithFlag", 507_000, 1);
        let e = ctx.create_event().map(|_| ()).unwrap_err();
        match &e {
            Error::Runtime {
                call,
                message: Some(m),
                ..
            } => {
                assert_eq!(*call, "aclrtCreateEventWithFlag");
                assert!(m.as_str().contains("aclrtCreateEventWithFlag"), "{m}");
            }
            other => panic!("no message: {other:?}"),
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    support::sim::assert_no_findings(&session.finish());
}

/// A handle kept in a thread-local, whose release fails while the thread's thread-locals
/// are destroyed after the message store's (a failed call earlier in the thread registered
/// it last, so it goes first). The failure must be reported; the process must not abort on
/// the message store being gone (`RECENT.with` during TLS destruction).
#[test]
fn a_failing_release_in_a_thread_local_destructor_does_not_abort() {
    const CHILD: &str = "RT2_TLS_CHILD";
    if !is_child(CHILD) {
        return run_in_child(
            "a_failing_release_in_a_thread_local_destructor_does_not_abort",
            CHILD,
            "tls ok",
        );
    }
    use std::cell::RefCell;
    thread_local! {
        static HOLD: RefCell<Option<ascend_typestate::Stream<'static>>> =
            const { RefCell::new(None) };
    }
    let mut session = Session::start();
    session.expect_findings();
    let acl: &'static ascend_typestate::Acl = Box::leak(Box::new(session.acl.take().unwrap()));
    let device: &'static _ = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx: &'static ascend_typestate::Context<'static> =
        Box::leak(Box::new(device.create_context().unwrap()));
    let sim = &session.sim;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // Registered first: destroyed last.
                HOLD.with(|h| *h.borrow_mut() = Some(ctx.create_stream().unwrap()));
                // A failed call: the message store is registered now (destroyed first).
                sim.inject_fault("aclrtCreateEventWithFlag", 507_000, 1);
                assert!(ctx.create_event().is_err());
                // The stream's release fails when the thread ends.
                sim.inject_fault("aclrtDestroyStream", 507_000, 100);
            })
            .join()
            .expect("the thread ended");
    });
    sim.clear_faults();
    println!("tls ok");
    std::process::exit(0);
}

// ---------------------------------------------------------------------------------------
// 4. Pipeline::release.
// ---------------------------------------------------------------------------------------

/// A submission cut short after its wait (the `ready` reset failed), then a destroy whose
/// resets keep failing: the set events are kept (never destroyed unreset, E4) and counted:
/// the context refuses to be destroyed, counting every object still alive.
#[test]
fn pipeline_release_with_failing_resets_keeps_and_counts_its_events() {
    const CHILD: &str = "RT2_PIPELINE_CHILD";
    if !is_child(CHILD) {
        return run_in_child(
            "pipeline_release_with_failing_resets_keeps_and_counts_its_events",
            CHILD,
            "pipeline ok",
        );
    }
    fn id(x: f32) -> f32 {
        x
    }
    let session = Session::start();
    session.expect_findings();
    let reports = support::DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let baseline = session.sim.live_objects();
    let mut pipeline = ctx
        .create_pipeline::<f32, f32>(ascend_typestate::PipelineConfig::new(16, 16).slots(2))
        .unwrap();
    let slot = pipeline.next_slot().unwrap();
    slot.submit(|l| l.simulated_map(Duration::from_micros(200), id))
        .unwrap();
    let slot = pipeline.next_slot().unwrap();
    session.sim.inject_fault("aclrtResetEvent", 507_000, 1);
    let cut = slot.submit(|l| l.simulated_map(Duration::from_micros(200), id));
    assert!(cut.is_err(), "the ready reset was meant to fail");
    session.sim.inject_fault("aclrtResetEvent", 507_000, 1_000);
    let destroyed = pipeline.destroy();
    session.sim.clear_faults();
    assert!(destroyed.is_err());
    let _ = reports.take();
    let findings = session.sim.findings();
    assert!(findings.iter().all(|f| f.rule != "E4"), "{findings:#?}");
    let kept = session.sim.live_objects() - baseline;
    assert!(kept >= 1, "the waited, unreset ready event was destroyed");
    match ctx.try_destroy() {
        Ok(()) => panic!("the context was destroyed over {kept} kept objects"),
        Err(failed) => {
            assert!(
                matches!(failed.error, Error::LiveChildren { count } if count == kept),
                "{} (kept {kept})",
                failed.error
            );
            std::mem::forget(failed.value);
        }
    }
    println!("pipeline ok (kept {kept})");
    std::process::exit(0);
}

// ---------------------------------------------------------------------------------------
// 5. model_path.
// ---------------------------------------------------------------------------------------

/// Files the runtime cannot read as a model are refused before it is called, each with its
/// reason: empty, /proc (size 0), a directory, a device, a FIFO (through a symlink), a NUL
/// byte, a dangling symlink, the empty path.
#[test]
fn model_path_refuses_what_the_runtime_cannot_read() {
    use ascend_typestate::ModelFileProblem as P;
    let dir = support::scratch_dir("rt2-model-path");
    let empty = dir.join("empty.om");
    std::fs::write(&empty, b"").unwrap();
    let fifo = dir.join("fifo.om");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path string.
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = dir.join("link.om");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let dangling = dir.join("dangling.om");
    std::os::unix::fs::symlink(dir.join("nothing"), &dangling).unwrap();
    let nul = std::path::PathBuf::from(std::ffi::OsStr::from_bytes_compat(b"a\0b.om"));
    let cases: Vec<(std::path::PathBuf, P)> = vec![
        (empty, P::Empty),
        ("/proc/self/status".into(), P::Empty),
        (dir.clone(), P::Directory),
        ("/dev/null".into(), P::NotRegularFile),
        (link, P::NotRegularFile),
        (dangling, P::NotFound),
        (nul, P::NulByte),
        ("".into(), P::NotFound),
    ];
    let session = Session::start();
    let reports = support::DropErrors::capture();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        session.sim.reset_call_counts();
        for (path, why) in cases {
            match ctx.load_model(&path) {
                Err(Error::ModelFile { why: got, .. }) => {
                    assert_eq!(got, why, "{}", path.display())
                }
                Err(other) => panic!("{}: {other}", path.display()),
                Ok(_) => panic!("{}: loaded", path.display()),
            }
        }
        assert_eq!(session.sim.call_count("aclmdlLoadFromFile"), 0);
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    support::end_clean(session, 0, &reports);
}

unsafe extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

trait FromBytesCompat {
    fn from_bytes_compat(b: &[u8]) -> &std::ffi::OsStr;
}
impl FromBytesCompat for std::ffi::OsStr {
    fn from_bytes_compat(b: &[u8]) -> &std::ffi::OsStr {
        std::os::unix::ffi::OsStrExt::from_bytes(b)
    }
}
