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

/// An owned `Acl::init` that fails (here: asks for another library) must never make a
/// concurrent `Acl::shared()` fail: no `Acl` is alive while it runs.
#[test]
fn p2_a_failing_owned_init_never_fails_a_concurrent_shared_call() {
    run_child("child_failing_owned_init_never_fails_a_concurrent_shared_call");
}

#[test]
fn child_failing_owned_init_never_fails_a_concurrent_shared_call() {
    if !in_child() {
        return;
    }
    let bogus = support::scratch_dir("shared-bogus").join("libascendcl.so");
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..2000 {
                let err = Acl::init_with(&InitOptions::default().library(&bogus))
                    .expect_err("another library, or the shared runtime is alive");
                assert!(
                    matches!(err, Error::Load(_) | Error::AlreadyInitialized),
                    "{err:?}"
                );
            }
        });
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..2000 {
                    acl();
                }
            });
        }
    });
}

/// The runtime functions the typed start and finish call, in a stub: `aclInit` counts its
/// calls, `aclrtSetOpWaitTimeout` fails once, `aclFinalize` fails twice; every other
/// function succeeds (none is called).
fn flaky_start_stub() -> std::path::PathBuf {
    use ascend_typestate::sys::REQUIRED_SYMBOLS;
    let mut source = String::from(
        "static int inits, timeouts, finalizes;\n\
         int stub_init_calls(void) { return inits; }\n\
         int aclInit(const char *config) { (void)config; return inits++ ? 100002 : 0; }\n\
         int aclrtSetOpWaitTimeout(unsigned int s) { (void)s; return timeouts++ ? 0 : 500001; }\n\
         int aclFinalize(void) { return finalizes++ < 2 ? 500001 : 0; }\n",
    );
    for name in REQUIRED_SYMBOLS {
        if !["aclInit", "aclrtSetOpWaitTimeout", "aclFinalize"].contains(name) {
            source.push_str(&format!("int {name}(void) {{ return 0; }}\n"));
        }
    }
    support::compile_shared_library("flaky_start", &source)
}

/// A start whose timeout call fails and whose clean-up `aclFinalize` fails twice leaves the
/// runtime initialised: the errors reach the drop-error handler with no lock held (a handler
/// that calls `Acl::shared` does not deadlock), and the next initialisation continues from
/// there instead of failing with 100002 forever.
#[test]
fn p2_a_start_whose_cleanup_fails_is_recovered_by_the_next_one() {
    run_child("child_start_whose_cleanup_fails_is_recovered_by_the_next_one");
}

static STUB: OnceLock<std::path::PathBuf> = OnceLock::new();
static HANDLER_SAW: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn handler_calling_shared(what: &'static str, error: &Error) {
    let again = Acl::shared_with(&InitOptions::default().library(STUB.get().unwrap()))
        .map(|_| ())
        .map_err(|e| e.to_string());
    HANDLER_SAW.lock().unwrap().push(format!(
        "{what}: {error} / shared from the handler: {again:?}"
    ));
}

#[test]
fn child_start_whose_cleanup_fails_is_recovered_by_the_next_one() {
    if !in_child() {
        return;
    }
    let stub = STUB.get_or_init(flaky_start_stub);
    ascend_typestate::set_drop_error_handler(handler_calling_shared);
    let err = Acl::shared_with(&InitOptions::default().library(stub)).expect_err("first start");
    assert!(
        matches!(
            err,
            Error::Runtime {
                call: "aclrtSetOpWaitTimeout",
                ..
            }
        ),
        "{err:?}"
    );
    let saw = HANDLER_SAW.lock().unwrap().clone();
    assert_eq!(saw.len(), 2, "both failed finalizes reported: {saw:#?}");
    // The handler's own `Acl::shared` ran (no deadlock) and, continuing from the initialised
    // runtime, succeeded: the shared runtime exists now, with one `aclInit` in all.
    assert!(
        saw[0].contains("shared from the handler: Ok(())"),
        "{saw:#?}"
    );
    let acl = Acl::shared_with(&InitOptions::default().library(stub)).expect("recovered");
    // SAFETY: the stub's own counter, `int stub_init_calls(void)`.
    let inits = unsafe {
        let lib = libloading::Library::new(stub).unwrap();
        let f: libloading::Symbol<unsafe extern "C" fn() -> i32> =
            lib.get(b"stub_init_calls").unwrap();
        f()
    };
    assert_eq!(
        inits, 1,
        "aclInit is not called again on an initialised runtime"
    );
    assert!(std::ptr::eq(acl, Acl::shared().unwrap()));
}

/// A later `shared_with` asking for another configuration file is refused, not ignored.
#[test]
fn p2_a_later_shared_call_with_another_configuration_is_refused() {
    if in_child() {
        return;
    }
    let _ = acl();
    let dir = support::scratch_dir("shared-config");
    let config = dir.join("acl.json");
    std::fs::write(&config, "{}").unwrap();
    let options = InitOptions::default()
        .library(support::simulator_path())
        .config(&config)
        .unwrap();
    assert!(matches!(
        Acl::shared_with(&options),
        Err(Error::InvalidArgument(_))
    ));
}

/// The embedded pattern of the crate docs ("Long-lived handles"): the runtime and the
/// device in statics, initialised once; a worker thread (`std::thread::spawn`) that keeps its
/// stream and its events in a struct of its own for as long as it runs, every event
/// recorded and re-used in place (E10), nothing created in its loop.
#[test]
fn the_embedded_pattern_static_device_worker_struct_and_reused_events() {
    if in_child() {
        return;
    }
    use ascend_typestate::{DefaultContext, Event, Recorded, Stream};
    static DEVICE: OnceLock<Device<'static, DefaultContext>> = OnceLock::new();
    let device: &'static Device<'static, DefaultContext> = DEVICE.get_or_init(|| {
        acl()
            .set_device(1)
            .and_then(|d| d.into_default_context())
            .expect("device 1 in its default context")
    });

    /// What the worker owns: its stream (created once, kept for the program's life) and
    /// the event that marks each frame done.
    struct Worker {
        stream: &'static Stream<'static>,
        frame_done: Event<'static, Recorded>,
    }

    impl Worker {
        fn new(
            device: &'static Device<'static, DefaultContext>,
        ) -> ascend_typestate::Result<Worker> {
            // Kept for the program's life: never destroyed (D3 holds trivially), so events
            // recorded on it are `'static` and live beside it in this struct.
            let stream: &'static Stream<'static> = Box::leak(Box::new(device.create_stream()?));
            let frame_done = device.create_event()?.record(stream)?;
            Ok(Worker { stream, frame_done })
        }

        fn frame(self) -> ascend_typestate::Result<Worker> {
            self.frame_done.synchronize()?;
            let frame_done = self
                .frame_done
                .reset_completed(self.stream)?
                .record(self.stream)?;
            Ok(Worker { frame_done, ..self })
        }
    }

    // The worker lives on its thread (a stream is not `Sync`, so `&Stream` stays there).
    let worker = std::thread::spawn(move || {
        let mut worker = Worker::new(device).unwrap();
        for _ in 0..200 {
            worker = worker.frame().unwrap();
        }
        worker.frame_done.synchronize().unwrap();
        worker.frame_done.is_complete().unwrap()
    });
    assert!(worker.join().unwrap());
    assert_no_findings(acl());
}

/// The double-buffered pipeline in an application's own struct, on a `std::thread::spawn`ed thread:
/// the pipeline (streams, events, buffers) is created on the main thread from a `'static`
/// device and moved into the worker; every output checked (M3, D6).
#[test]
fn a_pipeline_in_a_worker_struct_runs_on_a_spawned_thread() {
    if in_child() {
        return;
    }
    use ascend_typestate::{DefaultContext, Pipeline, PipelineConfig};
    static DEVICE: OnceLock<Device<'static, DefaultContext>> = OnceLock::new();
    let device: &'static Device<'static, DefaultContext> = DEVICE.get_or_init(|| {
        acl()
            .set_device(0)
            .and_then(|d| d.into_default_context())
            .expect("device 0 in its default context")
    });
    fn plus_one(x: f32) -> f32 {
        x + 1.0
    }

    struct Worker {
        pipeline: Pipeline<'static, f32, f32>,
        checked: u64,
    }

    impl Worker {
        fn frame(&mut self) -> ascend_typestate::Result<()> {
            let mut slot = self.pipeline.next_slot()?;
            if let Some((n, output)) = slot.output() {
                assert!(output.iter().all(|&y| y == n as f32 + 1.0), "frame {n}");
                self.checked += 1;
            }
            let n = slot.frame();
            slot.input_mut().fill(n as f32);
            slot.submit(|launch| {
                launch.simulated_map(std::time::Duration::from_micros(20), plus_one)
            })?;
            Ok(())
        }
    }

    let mut worker = Worker {
        pipeline: device
            .create_pipeline(PipelineConfig::new(512, 512))
            .unwrap(),
        checked: 0,
    };
    let worker = std::thread::spawn(move || {
        for _ in 0..300 {
            worker.frame().unwrap();
        }
        worker.pipeline.wait_all().unwrap();
        let last = worker.pipeline.outputs().count() as u64;
        let checked = worker.checked + last;
        worker.pipeline.destroy().unwrap();
        checked
    });
    assert_eq!(worker.join().unwrap(), 300);
    assert_no_findings(acl());
}
