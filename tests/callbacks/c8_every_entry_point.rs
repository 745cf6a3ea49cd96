//! C8: every typed entry point reachable from inside a host callback and from
//! inside a simulated kernel's function (through leaked `'static` handles, `static` cells and
//! owned handles moved in) must return `Error::InsideCallback` or be harmless, never reach
//! the runtime (no simulator finding), never hang. Handles refused inside are sent back and
//! must work normally afterwards. Its own binary: the `Acl` is leaked, never finalized.

use crate::support;
use crate::support::callbacks as common;

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use ascend_typestate::{
    Acl, Context, Device, DeviceBuffer, Error, Event, HostBuffer, InitOptions, MallocPolicy,
    Recorded, Stream, timeout,
};
use ascend_typestate::{CallbackMode, ReportThread, Subscribed};

struct Kit {
    stream: Stream<'static>,
    created: Event<'static, ascend_typestate::Created>,
    recorded: Event<'static, Recorded>,
    dbuf: DeviceBuffer<'static, u32>,
    hbuf: HostBuffer<'static, u32>,
    idle_report: Option<ReportThread<'static>>,
    ctx2: Context<'static>,
    device2: Device<'static>,
    to_drop: Option<Stream<'static>>,
}

struct Statics {
    acl: &'static Acl,
    device: &'static Device<'static>,
    ctx: &'static Context<'static>,
    report: &'static ReportThread<'static>,
}

static STATICS: OnceLock<Statics> = OnceLock::new();
/// A second subscription on the leaked report thread, reached from inside through a static.
static SUB: Mutex<Option<Subscribed<'static, 'static>>> = Mutex::new(None);
/// What the simulated kernel runs.
static KERNEL_JOB: Mutex<Option<Box<dyn FnOnce() + Send>>> = Mutex::new(None);

type Log = Vec<(&'static str, String)>;

fn show<T: std::fmt::Debug>(r: &T) -> String {
    format!("{r:?}")
}

fn is_refused<T>(r: &Result<T, Error>) -> bool {
    matches!(r, Err(Error::InsideCallback))
}

/// Calls every entry point; returns the log of (name, outcome) that were neither refused
/// nor on the harmless list, and the kit (for the caller to release).
fn probe(mut kit: Kit) -> (Log, Log, Kit) {
    let s = STATICS.get().unwrap();
    let mut bad: Log = Vec::new();
    let mut harmless: Log = Vec::new();
    macro_rules! refused {
        ($name:expr, $e:expr) => {{
            let r = $e;
            if !is_refused(&r) {
                bad.push(($name, show(&r.as_ref().map(|_| ()))));
            }
        }};
    }
    macro_rules! refused_failed {
        ($name:expr, $e:expr, $slot:expr) => {{
            match $e {
                Ok(_) => panic!("{} released inside a callback", $name),
                Err(f) => {
                    if !matches!(f.error, Error::InsideCallback) {
                        bad.push(($name, format!("{:?}", f.error)));
                    }
                    $slot = f.value;
                }
            }
        }};
    }
    // Process token.
    harmless.push(("Acl::init", show(&Acl::init().map(|_| ()))));
    refused!("Acl::set_device", s.acl.set_device(0));
    refused!("Acl::set_device(1)", s.acl.set_device(1));
    harmless.push(("Acl::device_count", show(&s.acl.device_count())));
    harmless.push(("Acl::runs_on_device", show(&s.acl.runs_on_device())));
    harmless.push((
        "Simulator::findings",
        show(&s.acl.simulator().map(|sim| sim.findings().len())),
    ));
    // Device and context.
    refused!("Device::create_context", s.device.create_context());
    refused!("Device2::create_context", kit.device2.create_context());
    refused!("Context::create_stream", s.ctx.create_stream());
    refused!("Context::create_event", s.ctx.create_event());
    refused!(
        "Context::alloc",
        s.ctx.alloc::<u32>(4, MallocPolicy::HugeFirst)
    );
    refused!("Context::alloc_host", s.ctx.alloc_host::<u32>(4));
    refused!("Context::synchronize_device", s.ctx.synchronize_device());
    refused!(
        "Context::synchronize_device_with",
        s.ctx.synchronize_device_with(timeout!(50))
    );
    {
        let mut a = vec![0u32; 4];
        let b = vec![1u32; 4];
        refused!("Context::copy (H2H)", s.ctx.copy(&mut a, &b));
        refused!("Context::copy (H2D)", s.ctx.copy(&mut kit.dbuf, &b));
        refused!("Context::copy (D2H)", s.ctx.copy(&mut a, &kit.dbuf));
        refused!("Context::memset", s.ctx.memset(&mut kit.dbuf, 3));
        let stream = &kit.stream;
        let dbuf = &mut kit.dbuf;
        refused!(
            "Context::async_scope(copy)",
            s.ctx.async_scope(|scope| {
                scope.copy(stream, dbuf, &b)?;
                Ok(())
            })
        );
        let dbuf = &mut kit.dbuf;
        refused!(
            "Context::async_scope(memset)",
            s.ctx.async_scope(|scope| {
                scope.memset(stream, &mut *dbuf, 0)?;
                Ok(())
            })
        );
        refused!(
            "AsyncScope::synchronize",
            s.ctx.async_scope(|scope| scope.synchronize(stream))
        );
        refused!("Context2::create_stream", kit.ctx2.create_stream());
    }
    // Callbacks.
    refused!("ReportThread::spawn", ReportThread::spawn(s.ctx));
    harmless.push(("ReportThread::take_panics", show(&s.report.take_panics())));
    {
        let guard = SUB.lock().unwrap();
        if let Some(sub) = guard.as_ref() {
            refused!(
                "Subscribed::launch",
                sub.launch(CallbackMode::Blocking, || {})
            );
            refused!(
                "Subscribed::launch(NonBlocking)",
                sub.launch(CallbackMode::NonBlocking, || {})
            );
            refused!("Subscribed::synchronize", sub.synchronize());
            harmless.push(("Subscribed::pending", show(&sub.pending_callbacks())));
        } else {
            bad.push(("SUB", "missing".into()));
        }
    }
    {
        let taken = SUB.lock().unwrap().take();
        if let Some(sub) = taken {
            match sub.try_unsubscribe() {
                Ok(stream) => {
                    bad.push(("Subscribed::unsubscribe", "Ok inside a callback".into()));
                    drop(stream);
                }
                Err(f) => {
                    if !matches!(f.error, Error::InsideCallback) {
                        bad.push(("Subscribed::unsubscribe", format!("{:?}", f.error)));
                    }
                    *SUB.lock().unwrap() = Some(f.value);
                }
            }
        }
    }
    {
        // Subscribe a stream on the leaked report thread: refused, stream given back.
        let stream = kit.to_drop.take().unwrap();
        match s.report.try_subscribe(stream) {
            Ok(sub) => {
                bad.push(("ReportThread::subscribe", "Ok inside a callback".into()));
                std::mem::forget(sub);
            }
            Err(f) => {
                if !matches!(f.error, Error::InsideCallback) {
                    bad.push(("ReportThread::subscribe", format!("{:?}", f.error)));
                }
                kit.to_drop = Some(f.value);
            }
        }
    }
    if let Some(idle) = kit.idle_report.take() {
        let stream = kit.to_drop.take().unwrap();
        match idle.try_subscribe(stream) {
            Ok(sub) => {
                bad.push(("idle ReportThread::subscribe", "Ok inside".into()));
                std::mem::forget(sub);
            }
            Err(f) => {
                if !matches!(f.error, Error::InsideCallback) {
                    bad.push(("idle ReportThread::subscribe", format!("{:?}", f.error)));
                }
                kit.to_drop = Some(f.value);
            }
        }
        // Joins another (idle) report thread from inside: allowed, must not hang.
        harmless.push(("idle ReportThread::stop", show(&idle.stop())));
    }
    // Streams.
    refused!("Stream::synchronize", kit.stream.synchronize());
    refused!(
        "Stream::synchronize_with",
        kit.stream.synchronize_with(timeout!(50))
    );
    refused_failed!("Stream::destroy", kit.stream.try_destroy(), kit.stream);
    // Events.
    {
        let created = kit.created;
        match created.try_record(&kit.stream) {
            Ok(ev) => {
                bad.push(("Event::record", "Ok inside".into()));
                std::mem::forget(ev);
                // Put a placeholder back is impossible: abort the probe here.
                panic!("Event::record succeeded inside a callback");
            }
            Err(f) => {
                if !matches!(f.error, Error::InsideCallback) {
                    bad.push(("Event::record", format!("{:?}", f.error)));
                }
                kit.created = f.value;
            }
        }
    }
    refused_failed!(
        "Event<Created>::destroy",
        kit.created.try_destroy(),
        kit.created
    );
    refused!("Event::synchronize", kit.recorded.synchronize());
    refused!(
        "Event::synchronize_with",
        kit.recorded.synchronize_with(timeout!(50))
    );
    refused!("Event::is_complete", kit.recorded.is_complete());
    refused!(
        "Event::elapsed_since",
        kit.recorded.elapsed_since(&kit.recorded)
    );
    refused_failed!(
        "Event<Recorded>::destroy",
        kit.recorded.try_destroy(),
        kit.recorded
    );
    // Memory.
    refused_failed!("DeviceBuffer::free", kit.dbuf.try_free(), kit.dbuf);
    refused_failed!("HostBuffer::free", kit.hbuf.try_free(), kit.hbuf);
    // Context and device.
    refused_failed!("Context::destroy", kit.ctx2.try_destroy(), kit.ctx2);
    refused_failed!("Device::reset", kit.device2.try_reset(), kit.device2);
    (bad, harmless, kit)
}

fn setup() -> &'static Statics {
    STATICS.get_or_init(|| {
        let path = support::simulator_path();
        let acl: &'static Acl = Box::leak(Box::new(
            Acl::init_with(&InitOptions::default().library(&path)).unwrap(),
        ));
        let device: &'static Device<'static> = Box::leak(Box::new(acl.set_device(0).unwrap()));
        let ctx: &'static Context<'static> = Box::leak(Box::new(device.create_context().unwrap()));
        let report: &'static ReportThread<'static> =
            Box::leak(Box::new(ReportThread::spawn(ctx).unwrap()));
        Statics {
            acl,
            device,
            ctx,
            report,
        }
    })
}

fn make_kit(s: &'static Statics) -> Kit {
    let stream = s.ctx.create_stream().unwrap();
    let rec_stream: &'static Stream<'static> = Box::leak(Box::new(s.ctx.create_stream().unwrap()));
    let recorded = s.ctx.create_event().unwrap().record(rec_stream).unwrap();
    let device2 = s.acl.set_device(0).unwrap();
    // `ctx2` borrows `device2`, which moves with it: leak a third Device for it instead.
    let dev3: &'static Device<'static> = Box::leak(Box::new(s.acl.set_device(0).unwrap()));
    Kit {
        created: s.ctx.create_event().unwrap(),
        recorded,
        dbuf: s.ctx.alloc::<u32>(4, MallocPolicy::HugeFirst).unwrap(),
        hbuf: s.ctx.alloc_host::<u32>(4).unwrap(),
        idle_report: Some(ReportThread::spawn(s.ctx).unwrap()),
        ctx2: dev3.create_context().unwrap(),
        device2,
        to_drop: Some(s.ctx.create_stream().unwrap()),
        stream,
    }
}

/// After the probe: every handle given back works normally on the calling thread.
fn release_kit(kit: Kit) -> Vec<String> {
    let mut errors = Vec::new();
    let Kit {
        stream,
        created,
        recorded,
        dbuf,
        hbuf,
        idle_report,
        ctx2,
        device2,
        to_drop,
    } = kit;
    if let Err(e) = recorded.synchronize() {
        errors.push(format!("recorded.synchronize: {e}"));
    }
    {
        match created.try_record(&stream) {
            Ok(r) => {
                if let Err(e) = stream.synchronize() {
                    errors.push(format!("stream.synchronize: {e}"));
                }
                if let Err(f) = r.try_destroy() {
                    errors.push(format!("event destroy: {}", f.error));
                }
            }
            Err(f) => errors.push(format!("record after probe: {}", f.error)),
        }
    }
    if let Err(f) = dbuf.try_free() {
        errors.push(format!("dbuf: {}", f.error));
    }
    if let Err(f) = hbuf.try_free() {
        errors.push(format!("hbuf: {}", f.error));
    }
    if let Err(f) = stream.try_destroy() {
        errors.push(format!("stream: {}", f.error));
    }
    if let Some(r) = idle_report
        && let Err(e) = r.stop()
    {
        errors.push(format!("idle report: {e}"));
    }
    if let Some(s) = to_drop
        && let Err(f) = s.try_destroy()
    {
        errors.push(format!("to_drop: {}", f.error));
    }
    if let Err(f) = ctx2.try_destroy() {
        errors.push(format!("ctx2: {}", f.error));
    }
    if let Err(f) = device2.try_reset() {
        errors.push(format!("device2: {}", f.error));
    }
    errors
}

fn kernel_fn(x: u32) -> u32 {
    if let Some(job) = KERNEL_JOB.lock().unwrap().take() {
        job();
    }
    x
}

#[test]
fn c8_every_entry_point_from_a_callback_and_from_a_kernel() {
    if support::child::own_process("c8_every_entry_point_from_a_callback_and_from_a_kernel") {
        return;
    }
    let outcome = common::watchdog(Duration::from_secs(60), || {
        ascend_typestate::set_drop_error_handler(common::collect);
        let s = setup();
        let sim = s.acl.simulator().unwrap();
        let mut report = String::new();
        for place in ["callback", "kernel"] {
            let _lock = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
            sim.clear_findings();
            common::take_drop_errors();
            let kit = make_kit(s);
            let sub_stream = s.ctx.create_stream().unwrap();
            *SUB.lock().unwrap() = Some(s.report.subscribe(sub_stream).unwrap());
            let launcher = s.report.subscribe(s.ctx.create_stream().unwrap()).unwrap();
            let (tx, rx) = mpsc::channel();
            let job = move || {
                let out = probe(kit);
                let _ = tx.send(out);
            };
            if place == "callback" {
                launcher.launch(CallbackMode::Blocking, job).unwrap();
            } else {
                *KERNEL_JOB.lock().unwrap() = Some(Box::new(job));
                let input = s.ctx.alloc::<u32>(1, MallocPolicy::HugeFirst).unwrap();
                let mut output = s.ctx.alloc::<u32>(1, MallocPolicy::HugeFirst).unwrap();
                s.ctx
                    .async_scope(|scope| {
                        scope.simulated_map(
                            &launcher,
                            Duration::from_millis(1),
                            &input,
                            &mut output,
                            kernel_fn,
                        )?;
                        Ok(())
                    })
                    .unwrap();
                input.free().unwrap();
                output.free().unwrap();
            }
            let (bad, harmless, kit) = match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(v) => v,
                Err(e) => panic!(
                    "the probe did not finish ({e}); panics: {:?}",
                    s.report.take_panics()
                ),
            };
            let launcher = launcher.unsubscribe().unwrap();
            launcher.destroy().unwrap();
            let findings = sim.findings();
            sim.clear_findings();
            let drop_errors = common::take_drop_errors();
            let released = release_kit(kit);
            let sub = SUB.lock().unwrap().take().unwrap();
            let sub_stream = sub.unsubscribe().unwrap();
            sub_stream.destroy().unwrap();
            let after = sim.findings();
            sim.clear_findings();
            report.push_str(&format!(
                "== inside a {place}\nnot refused: {bad:#?}\nharmless: {harmless:#?}\nfindings: {findings:#?}\ndrop errors: {drop_errors:#?}\nreleasing afterwards: {released:#?}\nfindings afterwards: {after:#?}\n"
            ));
            let failed = !bad.is_empty()
                || !findings.is_empty()
                || !released.is_empty()
                || !after.is_empty();
            if failed {
                report.push_str("FAILED\n");
            }
        }
        report
    });
    let report = match outcome {
        None => panic!("the C8 probe hung"),
        Some(Err(p)) => std::panic::resume_unwind(p),
        Some(Ok(report)) => report,
    };
    println!("{report}");
    assert!(!report.contains("FAILED"), "{report}");
    support::child::passed("c8_every_entry_point_from_a_callback_and_from_a_kernel");
}

#[test]
fn c8_dropping_every_handle_inside_a_callback_and_a_kernel() {
    if support::child::own_process("c8_dropping_every_handle_inside_a_callback_and_a_kernel") {
        return;
    }
    let outcome = common::watchdog(Duration::from_secs(60), || {
        ascend_typestate::set_drop_error_handler(common::collect);
        let s = setup();
        let sim = s.acl.simulator().unwrap();
        let mut report = String::new();
        for place in ["callback", "kernel"] {
            let _lock = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
            sim.clear_findings();
            common::take_drop_errors();
            let kit = make_kit(s);
            let sub = s.report.subscribe(s.ctx.create_stream().unwrap()).unwrap();
            let launcher = s.report.subscribe(s.ctx.create_stream().unwrap()).unwrap();
            let (tx, rx) = mpsc::channel();
            let job = move || {
                drop(kit);
                drop(sub);
                let _ = tx.send(());
            };
            if place == "callback" {
                launcher.launch(CallbackMode::Blocking, job).unwrap();
            } else {
                *KERNEL_JOB.lock().unwrap() = Some(Box::new(job));
                let input = s.ctx.alloc::<u32>(1, MallocPolicy::HugeFirst).unwrap();
                let mut output = s.ctx.alloc::<u32>(1, MallocPolicy::HugeFirst).unwrap();
                s.ctx
                    .async_scope(|scope| {
                        scope.simulated_map(
                            &launcher,
                            Duration::from_millis(1),
                            &input,
                            &mut output,
                            kernel_fn,
                        )?;
                        Ok(())
                    })
                    .unwrap();
                input.free().unwrap();
                output.free().unwrap();
            }
            rx.recv_timeout(Duration::from_secs(30))
                .expect("the drops finished");
            let launcher = launcher.unsubscribe().unwrap();
            launcher.destroy().unwrap();
            let findings = sim.findings();
            let drop_errors = common::take_drop_errors();
            let refused = drop_errors.iter().filter(|e| e.contains("C8")).count();
            report.push_str(&format!(
                "== drops inside a {place}: findings {findings:#?}\ndrop errors ({refused} C8): {drop_errors:#?}\npanics: {:?}\n",
                s.report.take_panics()
            ));
            if !findings.is_empty() || drop_errors.iter().any(|e| !e.contains("C8")) {
                report.push_str("FAILED\n");
            }
        }
        report
    });
    let report = match outcome {
        None => panic!("the drop probe hung"),
        Some(Err(p)) => std::panic::resume_unwind(p),
        Some(Ok(report)) => report,
    };
    println!("{report}");
    assert!(!report.contains("FAILED"), "{report}");
    support::child::passed("c8_dropping_every_handle_inside_a_callback_and_a_kernel");
}

static SERIAL: Mutex<()> = Mutex::new(());
