//! Attacks on host functions (C10: the trampoline's queue of closures, failed launches,
//! streams moved or forgotten with host functions pending; C8: runtime handles reached from
//! inside a host function), kept as regression tests. Safe code only in the attacking parts.
//! Risky ones arm a watchdog that exits the process (code 99) if the test hangs.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ascend_typestate::ReportThread;
use support::sim::{Session, assert_no_findings};

const CHILD_ENV: &str = "STREAM_EXTRAS_CHILD";

// ---------------------------------------------------------------------------------------
// C10: FIFO assumption of the host-function trampoline.
// ---------------------------------------------------------------------------------------

/// A host-function task that fails asynchronously (here injected; on a board: any task
/// failure the runtime reports for that task without calling it) leaves its closure at the
/// front of the queue, so the NEXT host function's trampoline runs the WRONG closure: "A"
/// runs in the slot of "B", B's closure is later dropped as if its task had been dropped.
#[test]
fn c10_failed_host_function_task_makes_the_next_trampoline_run_the_wrong_closure() {
    let session = Session::start();
    let ran = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        // The next executable task of the stream (host function A) fails without running.
        session.sim.inject_task_failure(stream.as_raw(), 507_899);
        let (r1, r2) = (Arc::clone(&ran), Arc::clone(&ran));
        stream.launch(move || r1.lock().unwrap().push("A")).unwrap();
        stream.launch(move || r2.lock().unwrap().push("B")).unwrap();
        let first = stream.synchronize();
        println!("first synchronize: {first:?}");
        println!(
            "ran after the failed A and the successful B: {:?}",
            ran.lock().unwrap()
        );
        println!("pending after first sync: {}", stream.pending());
        let second = stream.synchronize();
        println!(
            "second synchronize: {second:?}; pending {}",
            stream.pending()
        );
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    println!("findings: {findings:#?}");
    // The task of A failed (its closure must not run); the task of B ran (its closure must).
    assert_eq!(*ran.lock().unwrap(), vec!["B"], "the wrong closure ran");
}

/// Same hole without an error being visible to the owner at the time: the first
/// synchronize's error is consumed; later launches keep running the closure one behind.
#[test]
fn c10_failed_host_function_shifts_every_later_closure_by_one() {
    let session = Session::start();
    let ran = Arc::new(Mutex::new(Vec::<u32>::new()));
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        session.sim.inject_task_failure(stream.as_raw(), 507_899);
        let r = Arc::clone(&ran);
        stream.launch(move || r.lock().unwrap().push(0)).unwrap();
        // The owner sees the error, and goes on with the stream (continue-on-failure).
        assert!(stream.synchronize().is_err());
        for i in 1..=3 {
            let r = Arc::clone(&ran);
            stream.launch(move || r.lock().unwrap().push(i)).unwrap();
            // Between launches the owner waits for its previous closure using a plain
            // Stream synchronisation (through Deref), as any code holding &Stream does.
            ascend_typestate::Stream::synchronize(&stream).unwrap();
            println!("after launching {i}: ran {:?}", ran.lock().unwrap());
        }
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
    assert_eq!(
        *ran.lock().unwrap(),
        vec![1, 2, 3],
        "closures ran one behind their task"
    );
}

/// Launch failures interleaved with running trampolines: the failed launch must take back
/// its own closure, never one a trampoline is about to run.
#[test]
fn c10_failed_launches_race_with_running_trampolines() {
    let session = Session::start();
    let ran = Arc::new(Mutex::new(Vec::<u32>::new()));
    let owned = Arc::new(());
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        let mut expected = Vec::new();
        for i in 0..200u32 {
            if i % 3 == 1 {
                session.sim.inject_fault("aclrtLaunchHostFunc", 107_000, 1);
            }
            let r = Arc::clone(&ran);
            let o = Arc::clone(&owned);
            let res = stream.launch(move || {
                let _o = o;
                std::thread::sleep(Duration::from_micros(50));
                r.lock().unwrap().push(i);
            });
            if res.is_ok() {
                expected.push(i);
            }
        }
        stream.synchronize().unwrap();
        assert_eq!(*ran.lock().unwrap(), expected);
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(Arc::strong_count(&owned), 1);
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

/// Moving a HostFnStream to another thread mid-flight, launching there, and dropping it
/// there with closures pending.
#[test]
fn c10_move_mid_flight_and_drop_with_pending() {
    let session = Session::start();
    let owned = Arc::new(());
    let ran = Arc::new(Mutex::new(Vec::<u32>::new()));
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        session.sim.sleep_kernel(stream.as_raw(), 20_000);
        for i in 0..3 {
            let (r, o) = (Arc::clone(&ran), Arc::clone(&owned));
            stream
                .launch(move || {
                    let _o = o;
                    r.lock().unwrap().push(i)
                })
                .unwrap();
        }
        std::thread::scope(|s| {
            s.spawn(|| {
                let stream = stream;
                for i in 3..6 {
                    let (r, o) = (Arc::clone(&ran), Arc::clone(&owned));
                    stream
                        .launch(move || {
                            let _o = o;
                            r.lock().unwrap().push(i)
                        })
                        .unwrap();
                }
                // Dropped here with closures pending.
            });
        });
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(*ran.lock().unwrap(), (0..6).collect::<Vec<_>>());
    assert_eq!(Arc::strong_count(&owned), 1);
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

/// mem::forget of a HostFnStream with closures pending: no UB, the closures still run
/// (they own their Shared through the counts); only the forgotten value leaks.
#[test]
fn c10_forgotten_host_fn_stream_is_not_ub() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    // In a child process: the forgotten stream keeps its context, so the runtime cannot be
    // finalized afterwards (D3), which would poison this process's other tests.
    let (status, out, err) = support::child::in_child(
        "c10_forgotten_host_fn_stream_child",
        CHILD_ENV,
        Duration::from_secs(30),
    );
    assert!(
        status.is_some_and(|s| s.success())
            && out.contains("ran: 3")
            && out.contains("LiveChildren"),
        "status {status:?}\n{out}\n{err}"
    );
}

/// The child of `c10_forgotten_host_fn_stream_is_not_ub`: `mem::forget` of a stream with
/// host functions pending. No UB: they all run; the context refuses to be destroyed under
/// the leaked stream (D3).
#[test]
fn c10_forgotten_host_fn_stream_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let session = Session::start();
    let ran = Arc::new(AtomicUsize::new(0));
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let stream = ctx.create_stream().unwrap().with_host_functions();
    session.sim.sleep_kernel(stream.as_raw(), 20_000);
    for _ in 0..3 {
        let r = Arc::clone(&ran);
        stream
            .launch(move || _ = r.fetch_add(1, Ordering::SeqCst))
            .unwrap();
    }
    std::mem::forget(stream);
    std::thread::sleep(Duration::from_millis(200));
    println!("ran: {}", ran.load(Ordering::SeqCst));
    let destroyed = ctx.try_destroy();
    println!(
        "ctx.destroy: {:?}",
        destroyed.as_ref().err().map(|f| &f.error)
    );
    std::mem::forget(destroyed);
    std::mem::forget(device);
    std::mem::forget(session);
}

// ---------------------------------------------------------------------------------------
// C8: handles smuggled into host functions by 'static means.
// ---------------------------------------------------------------------------------------

#[test]
fn c8_leaked_context_and_stream_inside_host_function_are_refused() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    // In a child process: the handles are leaked on purpose ('static), so the runtime is
    // never finalized.
    let (status, out, err) =
        support::child::in_child("c8_host_function_child", CHILD_ENV, Duration::from_secs(30));
    assert!(
        status.is_some_and(|s| s.success()),
        "status {status:?}\n{out}\n{err}"
    );
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("op ")).collect();
    assert!(lines.len() >= 14, "{out}");
    for line in lines {
        let query = line.contains("(query)") || line.contains("dropped inside");
        assert!(
            query || line.contains("InsideCallback"),
            "a runtime call inside a host function was not refused: {line}"
        );
    }
    assert!(out.contains("findings: []"), "{out}");
}

/// The child of `c8_leaked_context_and_stream_inside_host_function_are_refused`.
#[test]
fn c8_host_function_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let mut session = Session::start();
    let outcomes = Arc::new(Mutex::new(Vec::<String>::new()));
    // Box::leak in safe code: a 'static Acl, Device, Context, so 'static handles exist.
    let acl: &'static ascend_typestate::Acl = Box::leak(Box::new(session.acl.take().unwrap()));
    let device: &'static _ = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx: &'static _ = Box::leak(Box::new(device.create_context().unwrap()));
    let outcomes2 = Arc::new(Mutex::new(Vec::<String>::new()));
    let o2 = Arc::clone(&outcomes2);
    let stream = ctx.create_stream().unwrap().with_host_functions();
    let other = ctx.create_stream().unwrap(); // moved into the closure (Stream is Send)
    let event = ctx.create_event().unwrap();
    let host_fn_inner: Arc<Mutex<Option<ascend_typestate::HostFnStream<'static>>>> = Arc::new(
        Mutex::new(Some(ctx.create_stream().unwrap().with_host_functions())),
    );
    let hfi = Arc::clone(&host_fn_inner);
    static GLOBAL: Mutex<Option<ascend_typestate::Stream<'static>>> = Mutex::new(None);
    *GLOBAL.lock().unwrap() = Some(ctx.create_stream().unwrap());
    stream
        .launch(move || {
            let mut o = o2.lock().unwrap();
            o.push(format!(
                "create_stream: {:?}",
                ctx.create_stream().map(|_| ())
            ));
            o.push(format!("other.synchronize: {:?}", other.synchronize()));
            o.push(format!("other.is_complete: {:?}", other.is_complete()));
            o.push(format!(
                "ctx.synchronize_device: {:?}",
                ctx.synchronize_device()
            ));
            o.push(format!(
                "ctx.memory_info: {:?}",
                ctx.memory_info(ascend_typestate::MemoryKind::Ddr)
                    .map(|_| ())
            ));
            o.push(format!(
                "alloc: {:?}",
                ctx.alloc::<u8>(16, ascend_typestate::MallocPolicy::HugeFirst)
                    .map(|_| ())
            ));
            o.push(format!(
                "create_event: {:?}",
                ctx.create_event().map(|_| ())
            ));
            o.push(format!(
                "acl.set_op_execute_timeout: {:?}",
                acl.set_op_execute_timeout(Duration::from_millis(1))
            ));
            o.push(format!(
                "acl.op_execute_timeout (query): {:?}",
                acl.op_execute_timeout()
            ));
            o.push(format!(
                "device.create_context: {:?}",
                device.create_context().map(|_| ())
            ));
            o.push(format!(
                "ReportThread::spawn: {:?}",
                ReportThread::spawn(ctx).map(|_| ())
            ));
            match event.try_record(&other) {
                Ok(r) => {
                    o.push("record: Ok".into());
                    std::mem::forget(r);
                }
                Err(f) => {
                    o.push(format!("record: {:?}", f.error));
                    std::mem::forget(f.value);
                }
            }
            let inner = hfi.lock().unwrap().take().unwrap();
            o.push(format!(
                "inner HostFnStream.launch: {:?}",
                inner.launch(|| {})
            ));
            o.push(format!(
                "inner HostFnStream.destroy_force: {:?}",
                inner.try_destroy_force().err().map(|f| {
                    let e = format!("{:?}", f.error);
                    std::mem::forget(f.value);
                    e
                })
            ));
            let g = GLOBAL.lock().unwrap().take().unwrap();
            o.push(format!(
                "static stream destroy: {:?}",
                g.try_destroy().err().map(|f| {
                    let e = format!("{:?}", f.error);
                    std::mem::forget(f.value);
                    e
                })
            ));
            // `other` dropped here, inside the host function: its Drop must not call the runtime.
            drop(other);
            o.push("other dropped inside the host function".into());
        })
        .unwrap();
    stream.synchronize().unwrap();
    for line in outcomes2.lock().unwrap().iter() {
        println!("op {line}");
    }
    let _ = outcomes;
    drop(stream);
    let findings = session.sim.findings();
    println!("findings: {findings:?}");
    std::mem::forget(session);
}
