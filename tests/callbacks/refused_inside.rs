//! C8 through the typed API: a callback that reaches a runtime handle anyway (only possible
//! with `'static` handles, here leaked on purpose) gets `Error::InsideCallback` before the
//! call reaches the runtime. Its own test binary: the leaked `Acl` is never finalized.

use crate::support;

use std::sync::mpsc;

use ascend_typestate::{Acl, Context, Error, InitOptions};
use ascend_typestate::{CallbackMode, ReportThread};

#[test]
fn a_runtime_call_from_inside_a_callback_is_refused_c8() {
    if support::child::own_process("a_runtime_call_from_inside_a_callback_is_refused_c8") {
        return;
    }
    let path = support::simulator_path();
    let sim = support::sim::Sim::open(&path);
    sim.clear_findings();
    let acl: &'static Acl = Box::leak(Box::new(
        Acl::init_with(&InitOptions::default().library(&path)).unwrap(),
    ));
    let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
    let ctx: &'static Context<'static> = Box::leak(Box::new(device.create_context().unwrap()));
    let report = ReportThread::spawn(ctx).unwrap();
    let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
    let (tx, rx) = mpsc::channel();
    stream
        .launch(CallbackMode::Blocking, move || {
            // C8: creating a stream (or synchronising, allocating...) inside a callback.
            let outcome = ctx.create_stream().map(drop);
            tx.send(outcome).unwrap();
        })
        .unwrap();
    let stream = stream.unsubscribe().unwrap();
    let outcome = rx.recv().unwrap();
    assert!(matches!(outcome, Err(Error::InsideCallback)), "{outcome:?}");
    // After the callback, the same context works again on this thread and on the report one.
    stream.destroy().unwrap();
    report.stop().unwrap();
    assert!(sim.findings().is_empty(), "{:#?}", sim.findings());
    support::child::passed("a_runtime_call_from_inside_a_callback_is_refused_c8");
}
