//! `Acl::shared()`: one runtime for every test of a process, run in parallel by cargo's
//! default test runner (P2), and `'static` handles for threads and statics. The tests that
//! need a fresh process (the first initialisation, an owned `Acl` beside the shared one)
//! run in a child process of their own.

mod support;

use std::sync::{Barrier, OnceLock};
use std::time::Duration;

use ascend_typestate::{Acl, Device, Error, InitOptions, LoadError};

/// Set in the child processes: only then do the `child_*` tests run their bodies.
const CHILD_ENV: &str = "ASCEND_TYPESTATE_SHARED_CHILD";

fn in_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// Runs `child_<name>` in a child process and asserts it passed.
fn run_child(test: &str) {
    let (status, out, err) = support::child::in_child(test, CHILD_ENV, Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "{test}: {status:?}\n{out}\n{err}"
    );
    assert!(out.contains("1 passed"), "{test} did not run:\n{out}");
}

/// The shared runtime, on the simulator beside this test executable.
fn acl() -> &'static Acl {
    Acl::shared_with(&InitOptions::default().library(support::simulator_path()))
        .expect("the shared runtime")
}

fn assert_no_findings(acl: &Acl) {
    let findings = acl.simulator().expect("the simulator").findings();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Record on one stream, wait and reset on another, then tear down: each test does this on
/// its own device/context while the others run (E2-E4, D3).
fn event_ping(acl: &'static Acl, device: i32, cycles: usize) {
    let device = acl.set_device(device).unwrap();
    let ctx = device.create_context().unwrap();
    let (a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
    let mut event = ctx.create_event().unwrap().record(&a).unwrap();
    for _ in 0..cycles {
        let reset = event.wait_and_reset(&b).unwrap();
        event = reset.record(&a).unwrap();
    }
    b.synchronize().unwrap();
    let reset = event.wait_and_reset(&b).unwrap();
    b.synchronize().unwrap();
    reset.destroy().unwrap();
    a.destroy().unwrap();
    b.destroy().unwrap();
    ctx.destroy().unwrap();
    device.reset().unwrap();
}

macro_rules! parallel_tests {
    ($($name:ident: $device:expr;)*) => {$(
        #[test]
        fn $name() {
            if in_child() {
                return;
            }
            let acl = acl();
            event_ping(acl, $device, 200);
            assert_no_findings(acl);
        }
    )*};
}

parallel_tests! {
    p2_parallel_test_1_on_device_0: 0;
    p2_parallel_test_2_on_device_0: 0;
    p2_parallel_test_3_on_device_1: 1;
    p2_parallel_test_4_on_device_1: 1;
    p2_parallel_test_5_on_device_0: 0;
    p2_parallel_test_6_on_device_1: 1;
}

/// The embedded pattern: a device in a `static`, set once; contexts from it are
/// `Context<'static>`, moved into threads that `std::thread::spawn` starts.
#[test]
fn static_device_and_spawned_threads_with_static_contexts() {
    if in_child() {
        return;
    }
    static DEVICE: OnceLock<Device<'static>> = OnceLock::new();
    let device = DEVICE.get_or_init(|| acl().set_device(0).unwrap());
    let workers: Vec<_> = (0..3)
        .map(|i| {
            let ctx = device.create_context().unwrap();
            std::thread::spawn(move || {
                let stream = ctx.create_stream().unwrap();
                let event = ctx.create_event().unwrap().record(&stream).unwrap();
                event.synchronize().unwrap();
                event.destroy().unwrap();
                stream.destroy().unwrap();
                ctx.destroy().unwrap();
                i
            })
        })
        .collect();
    let done: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert_eq!(done, [0, 1, 2]);
    assert_no_findings(acl());
}

#[test]
fn p2_concurrent_first_calls_initialise_once() {
    run_child("child_concurrent_first_calls_initialise_once");
}

#[test]
fn child_concurrent_first_calls_initialise_once() {
    if !in_child() {
        return;
    }
    let barrier = Barrier::new(8);
    let seen: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    acl() as *const Acl as usize
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
    let sim = acl().simulator().unwrap();
    assert_eq!(sim.call_count("aclInit"), 1, "aclInit ran once");
    assert_eq!(sim.call_count("aclFinalize"), 0, "and is never finalized");
}

#[test]
fn p2_an_owned_runtime_and_the_shared_one_exclude_each_other() {
    run_child("child_owned_and_shared_exclude_each_other");
}

#[test]
fn child_owned_and_shared_exclude_each_other() {
    if !in_child() {
        return;
    }
    let options = InitOptions::default().library(support::simulator_path());
    let owned = Acl::init_with(&options).unwrap();
    assert!(matches!(
        Acl::shared_with(&options),
        Err(Error::AlreadyInitialized)
    ));
    owned.finalize().unwrap();
    let shared = Acl::shared_with(&options).unwrap();
    let err = Acl::init_with(&options).expect_err("the shared runtime is alive");
    assert!(matches!(err, Error::AlreadyInitialized));
    assert!(err.to_string().contains("Acl::shared()"), "{err}");
    // Later calls get the same runtime; asking them for another library is refused.
    assert!(std::ptr::eq(shared, Acl::shared().unwrap()));
    let other = support::scratch_dir("shared-other").join("libascendcl.so");
    match Acl::shared_with(&InitOptions::default().library(&other)) {
        Err(Error::Load(e)) => assert!(matches!(*e, LoadError::AlreadyLoaded { .. }), "{e}"),
        other => panic!("expected AlreadyLoaded, got {other:?}"),
    }
}

#[test]
fn p2_a_failed_first_initialisation_is_tried_again() {
    run_child("child_failed_first_initialisation_is_tried_again");
}

#[test]
fn child_failed_first_initialisation_is_tried_again() {
    if !in_child() {
        return;
    }
    let missing = support::scratch_dir("shared-missing").join("libascendcl.so");
    let err = Acl::shared_with(&InitOptions::default().strict_library(&missing))
        .expect_err("nothing to load");
    assert!(matches!(&err, Error::Load(e) if matches!(**e, LoadError::NotFound { .. })));
    // The failure left nothing behind: the next call initialises.
    let acl = acl();
    event_ping(acl, 0, 3);
    assert_no_findings(acl);
}
