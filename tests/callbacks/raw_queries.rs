//! The raw layer's safe functions are queries (C8). `docs/protocol.md`,
//! "C8 and the raw layer", lists every safe function of `src/result` and every safe method of
//! `sys::loader::Api` (what `Acl::api()` returns), with its kind and source (the table is
//! parsed and checked against the source in `raw_query_table`). Here:
//!
//! * each one is called from a host callback, a host function, a simulated kernel and a
//!   thread without a current context, through the `Api` of `Acl::api()`: no checker finding,
//!   no crash, and each answers as a query does there (a value, or "no current context" for
//!   the three that need one);
//! * each function the table says refuses inside callbacks returns
//!   `CallError::InsideCallback` there without reaching the runtime, and works outside.

use crate::support;

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

use ascend_typestate::result::CallError;
use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::sys::loader::{Api, LoadOptions};
use ascend_typestate::{AclError, CallbackMode, Error, MallocPolicy, ReportThread};
use support::sim::{Session, assert_no_findings};

use super::raw_query_table::{Row, table};

// ---------------------------------------------------------------------------------------
// Every safe function, called where C8 applies.
// ---------------------------------------------------------------------------------------

/// What a call gave.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok,
    Failed(CallError),
    /// Not a `CallError` (the loader's error, or an unexpected answer), described.
    Other(String),
}

impl<T> From<Result<T, CallError>> for Outcome {
    fn from(result: Result<T, CallError>) -> Outcome {
        match result {
            Ok(_) => Outcome::Ok,
            Err(e) => Outcome::Failed(e),
        }
    }
}

/// Calls every function of the table through `api` (the `Api` of `Acl::api()`), in the
/// table's order, with `model` a model file and `library` the loaded runtime's path.
fn call_every_safe_function(
    api: &Api,
    model: &CStr,
    library: &Path,
) -> Vec<(&'static str, Outcome)> {
    let failed = api.get_device_capability(u32::MAX, 0);
    // Read at once: the next failed call on this thread replaces it.
    let failed_message = failed.as_ref().err().map(|e| e.message());
    vec![
        ("Api::get_device", api.get_device().into()),
        ("Api::get_device_count", api.get_device_count().into()),
        ("Api::get_run_mode", api.get_run_mode().into()),
        ("Api::get_soc_name", api.get_soc_name().into()),
        ("Api::get_mem_info", api.get_mem_info(0).into()),
        (
            "Api::get_device_capability",
            api.get_device_capability(0, 0).into(),
        ),
        ("Api::get_current_context", api.get_current_context().into()),
        (
            "Api::get_op_execute_timeout_ms",
            api.get_op_execute_timeout_ms().into(),
        ),
        (
            "Api::get_op_timeout_interval_us",
            api.get_op_timeout_interval_us().into(),
        ),
        (
            "Api::get_version_str",
            api.get_version_str(c"runtime").into(),
        ),
        (
            "Api::get_version_num",
            api.get_version_num(c"runtime").into(),
        ),
        ("Api::get_version", api.get_version().into()),
        // `None` too is an answer (no message kept): the call cannot fail.
        ("Api::recent_error_message", {
            let _ = api.recent_error_message();
            Outcome::Ok
        }),
        ("Api::model_query_size", api.model_query_size(model).into()),
        (
            "CallError::code",
            match &failed {
                Err(e) if e.code() == Some(AclError::RtInvalidDeviceId) => Outcome::Ok,
                other => Outcome::Other(format!("{other:?}")),
            },
        ),
        (
            "CallError::message",
            match &failed_message {
                Some(Some(_)) => Outcome::Ok,
                other => Outcome::Other(format!("{other:?}")),
            },
        ),
        (
            "RuntimeMessage::as_str",
            match failed_message.clone().flatten() {
                Some(message) if !message.as_str().is_empty() => Outcome::Ok,
                other => Outcome::Other(format!("{other:?}")),
            },
        ),
        (
            "RuntimeMessage::last_runtime_error",
            match failed_message.clone().flatten() {
                // Whatever it holds, reading it calls nothing.
                Some(message) => {
                    let _ = message.last_runtime_error();
                    Outcome::Ok
                }
                other => Outcome::Other(format!("{other:?}")),
            },
        ),
        (
            "Api::load",
            match Api::load(&LoadOptions::default().path(library)) {
                Ok(other) if other.has_symbol("aclInit") => Outcome::Ok,
                other => Outcome::Other(format!("{other:?}")),
            },
        ),
        ("Api::path", path_outcome(api.path())),
        ("Api::resolved_path", path_outcome(api.resolved_path())),
        ("Api::source", text_outcome(api.source())),
        (
            "Api::models",
            match api.models() {
                Ok(_) => Outcome::Ok,
                Err(e) => Outcome::Other(e.to_string()),
            },
        ),
        (
            "Api::dvpp",
            if api.dvpp().table.provides("acldvppJpegDecodeAsync") {
                Outcome::Ok
            } else {
                Outcome::Other("the simulator lacks acldvppJpegDecodeAsync".into())
            },
        ),
        (
            "Api::has_symbol",
            if api.has_symbol("aclrtGetSocName") {
                Outcome::Ok
            } else {
                Outcome::Other("the simulator lacks aclrtGetSocName".into())
            },
        ),
        (
            "Api::functions",
            if api.functions().provides("aclrtLaunchHostFunc") {
                Outcome::Ok
            } else {
                Outcome::Other("the simulator lacks aclrtLaunchHostFunc".into())
            },
        ),
    ]
}

fn path_outcome(path: &Path) -> Outcome {
    if path.as_os_str().is_empty() {
        Outcome::Other("an empty path".into())
    } else {
        Outcome::Ok
    }
}

fn text_outcome(text: &str) -> Outcome {
    if text.is_empty() {
        Outcome::Other("an empty text".into())
    } else {
        Outcome::Ok
    }
}

/// The queries that need a current context (D2, D8): without one, the runtime's answer is
/// "no current context", which is still an answer.
const NEED_A_CONTEXT: [&str; 3] = [
    "Api::get_device",
    "Api::get_mem_info",
    "Api::get_current_context",
];

/// Where the calls were made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// A host callback, host function or simulated kernel of the typed API (C8).
    InsideCallback,
    /// A thread the runtime knows nothing of: no context, no callback.
    PlainThread,
}

/// Asserts that each function answered as the table says it does at `place`.
fn assert_answers(place: Place, what: &str, outcomes: &[(&'static str, Outcome)]) {
    let rows = table();
    let called: Vec<&str> = outcomes.iter().map(|(name, _)| *name).collect();
    let listed: Vec<&str> = rows.iter().map(|r| r.function.as_str()).collect();
    assert_eq!(
        called, listed,
        "call every function of the table, in its order"
    );
    for (row, (name, outcome)) in rows.iter().zip(outcomes) {
        let fine = match (row.kind.as_str(), place, outcome) {
            (_, _, Outcome::Ok) => !(row.kind == "refuses" && place == Place::InsideCallback),
            (
                "refuses",
                Place::InsideCallback,
                Outcome::Failed(CallError::InsideCallback { call }),
            ) => row.c_function.as_deref() == Some(*call),
            (
                "query",
                _,
                Outcome::Failed(CallError::Failed {
                    code: AclError::RtContextNull,
                    ..
                }),
            ) => NEED_A_CONTEXT.contains(name),
            _ => false,
        };
        assert!(fine, "{name} ({}) in {what}: {outcome:?}", row.kind);
    }
}

/// A model file for `aclmdlQuerySize`, in the simulator's text format.
fn model_file(name: &str) -> CString {
    let path = support::scratch_dir(&format!("raw_queries_{name}")).join("m.model");
    SimModel::new(SimDtype::F32, &[1, 4], SimDtype::F32, &[1, 4])
        .scale(2.0)
        .write(&path)
        .expect("write the model file");
    CString::new(path.into_os_string().into_encoded_bytes()).expect("no NUL in the path")
}

/// The `Api` of `Acl::api()`, as `'static` (it is the process-wide one), for closures the
/// runtime runs.
fn static_api(session: &Session) -> &'static Api {
    let api = ascend_typestate::sys::loader::global().expect("loaded by the session");
    assert!(std::ptr::eq(api, session.acl().api()), "Acl::api()");
    api
}

/// Ends a session: nothing left alive, no checker finding (so no `aclsim:` line either).
fn end_clean(session: Session) {
    assert_eq!(session.sim.live_objects(), 0, "everything released");
    assert_no_findings(&session.finish());
}

#[test]
fn c8_every_safe_raw_function_from_a_host_callback() {
    let session = Session::start();
    let api = static_api(&session);
    let model = model_file("callback");
    let library = support::simulator_path();
    let queries_before = session.sim.call_count("aclmdlQuerySize");
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let (tx, rx) = mpsc::channel();
        stream
            .launch(CallbackMode::Blocking, move || {
                let _ = tx.send(call_every_safe_function(api, &model, &library));
            })
            .unwrap();
        let outcomes = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the callback ran");
        assert_answers(Place::InsideCallback, "a host callback", &outcomes);
        let stream = stream.unsubscribe().unwrap();
        stream.destroy().unwrap();
        report.stop().unwrap();
    }
    assert_eq!(
        session.sim.call_count("aclmdlQuerySize"),
        queries_before,
        "the refused query never reached the runtime"
    );
    end_clean(session);
}

#[test]
fn c8_every_safe_raw_function_from_a_host_function() {
    let session = Session::start();
    let api = static_api(&session);
    let model = model_file("host_fn");
    let library = support::simulator_path();
    let queries_before = session.sim.call_count("aclmdlQuerySize");
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        let (tx, rx) = mpsc::channel();
        stream
            .launch(move || {
                let _ = tx.send(call_every_safe_function(api, &model, &library));
            })
            .unwrap();
        stream.synchronize().unwrap();
        let outcomes = rx.try_recv().expect("the host function ran");
        assert_answers(Place::InsideCallback, "a host function", &outcomes);
        stream.destroy().unwrap();
    }
    assert_eq!(session.sim.call_count("aclmdlQuerySize"), queries_before);
    end_clean(session);
}

/// What the kernel function reaches (a plain `fn` captures nothing), and what it found.
struct KernelEnv {
    api: &'static Api,
    model: CString,
    library: PathBuf,
}

static KERNEL_ENV: OnceLock<KernelEnv> = OnceLock::new();

static KERNEL_OUTCOMES: Mutex<Vec<(&'static str, Outcome)>> = Mutex::new(Vec::new());

fn querying_kernel(x: u32) -> u32 {
    if let Some(env) = KERNEL_ENV.get() {
        let outcomes = call_every_safe_function(env.api, &env.model, &env.library);
        *KERNEL_OUTCOMES.lock().unwrap_or_else(|p| p.into_inner()) = outcomes;
    }
    x
}

#[test]
fn c8_every_safe_raw_function_from_a_simulated_kernel() {
    let session = Session::start();
    let env = KernelEnv {
        api: static_api(&session),
        model: model_file("kernel"),
        library: support::simulator_path(),
    };
    assert!(KERNEL_ENV.set(env).is_ok(), "one kernel test");
    let queries_before = session.sim.call_count("aclmdlQuerySize");
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut input = ctx.alloc::<u32>(1, MallocPolicy::default()).unwrap();
        ctx.copy(&mut input, &[21u32][..]).unwrap();
        let mut output = ctx.alloc::<u32>(1, MallocPolicy::default()).unwrap();
        ctx.async_scope(|scope| {
            scope.simulated_map(
                &stream,
                Duration::from_millis(1),
                &input,
                &mut output,
                querying_kernel,
            )?;
            Ok(())
        })
        .unwrap();
        let mut result = [0u32];
        ctx.copy(&mut result[..], &output).unwrap();
        assert_eq!(result, [21], "the kernel ran to its end");
        input.free().unwrap();
        output.free().unwrap();
        stream.destroy().unwrap();
    }
    let outcomes = std::mem::take(&mut *KERNEL_OUTCOMES.lock().unwrap());
    assert_answers(Place::InsideCallback, "a simulated kernel", &outcomes);
    assert_eq!(session.sim.call_count("aclmdlQuerySize"), queries_before);
    end_clean(session);
}

#[test]
fn every_safe_raw_function_from_a_thread_without_a_context() {
    let session = Session::start();
    let api = static_api(&session);
    let model = model_file("plain");
    let library = support::simulator_path();
    {
        // A device in use elsewhere, so that the queries have something to report.
        let device = session.acl().set_device(0).unwrap();
        let _ctx = device.create_context().unwrap();
        let outcomes = std::thread::spawn(move || {
            let outcomes = call_every_safe_function(api, &model, &library);
            // No context here: the three that need one say so.
            for name in NEED_A_CONTEXT {
                let found = outcomes.iter().find(|(n, _)| *n == name);
                assert!(
                    matches!(
                        found,
                        Some((
                            _,
                            Outcome::Failed(CallError::Failed {
                                code: AclError::RtContextNull,
                                ..
                            })
                        ))
                    ),
                    "{name} without a context: {found:?}"
                );
            }
            outcomes
        })
        .join()
        .expect("no panic");
        assert_answers(Place::PlainThread, "a thread without a context", &outcomes);
    }
    end_clean(session);
}

// ---------------------------------------------------------------------------------------
// The refusing functions.
// ---------------------------------------------------------------------------------------

/// Each refusing function of the table, called with what it needs.
fn call_each_refusing_function(api: &Api, model: &CStr) -> Vec<(&'static str, Outcome)> {
    vec![("Api::model_query_size", api.model_query_size(model).into())]
}

fn refusing_rows() -> Vec<Row> {
    table()
        .into_iter()
        .filter(|r| r.kind == "refuses")
        .collect()
}

#[test]
fn c8_each_refusing_function_returns_inside_callback_in_a_callback_and_works_outside() {
    let session = Session::start();
    let api = static_api(&session);
    let model = model_file("refusing");
    let rows = refusing_rows();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();

        // Outside any callback: an answer, the typed API's one.
        let outside = call_each_refusing_function(api, &model);
        let names: Vec<&str> = outside.iter().map(|(n, _)| *n).collect();
        let listed: Vec<&str> = rows.iter().map(|r| r.function.as_str()).collect();
        assert_eq!(names, listed, "call every refusing function of the table");
        for (name, outcome) in &outside {
            assert_eq!(*outcome, Outcome::Ok, "{name} outside callbacks");
        }
        let path = Path::new(model.to_str().unwrap());
        assert_eq!(
            api.model_query_size(&model).unwrap(),
            ctx.model_memory_size(path).unwrap()
        );

        // Inside: refused, and the runtime is never called.
        let counts = |session: &Session| -> Vec<u64> {
            rows.iter()
                .map(|r| session.sim.call_count(r.c_function.as_deref().unwrap()))
                .collect()
        };
        let before = counts(&session);
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let (tx, rx) = mpsc::channel();
        let in_callback = model.clone();
        stream
            .launch(CallbackMode::Blocking, move || {
                let typed = Error::from(
                    api.model_query_size(&in_callback)
                        .expect_err("refused inside a callback"),
                );
                let _ = tx.send((call_each_refusing_function(api, &in_callback), typed));
            })
            .unwrap();
        let (inside, typed) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the callback ran");
        let stream = stream.unsubscribe().unwrap();
        stream.destroy().unwrap();
        report.stop().unwrap();
        assert!(matches!(typed, Error::InsideCallback), "{typed:?}");
        for (row, (name, outcome)) in rows.iter().zip(&inside) {
            match outcome {
                Outcome::Failed(e @ CallError::InsideCallback { call }) => {
                    assert_eq!(Some(call.to_string()), row.c_function, "{name}");
                    assert_eq!(
                        e.code(),
                        None,
                        "no runtime code: the runtime was not called"
                    );
                    assert!(e.to_string().contains("C8"), "{e}");
                }
                other => panic!("{name} inside a callback: {other:?}"),
            }
        }
        assert_eq!(counts(&session), before, "the runtime was never called");

        // The same in a host function.
        let stream = ctx.create_stream().unwrap().with_host_functions();
        let (tx, rx) = mpsc::channel();
        let in_host_fn = model.clone();
        stream
            .launch(move || {
                let _ = tx.send(call_each_refusing_function(api, &in_host_fn));
            })
            .unwrap();
        stream.synchronize().unwrap();
        let inside = rx.try_recv().expect("the host function ran");
        stream.destroy().unwrap();
        for (row, (name, outcome)) in rows.iter().zip(&inside) {
            assert!(
                matches!(outcome, Outcome::Failed(CallError::InsideCallback { call })
                    if Some(call.to_string()) == row.c_function),
                "{name} inside a host function: {outcome:?}"
            );
        }
        assert_eq!(counts(&session), before, "the runtime was never called");
    }
    end_clean(session);
}
