//! Leaks (`mem::forget`) cannot make a parent be destroyed under its child (D3, P2): a
//! context with a leaked stream is not destroyed, a device with a leaked context is not
//! reset, and the runtime is not finalized while a device is leaked. Each refusal is
//! `Error::LiveChildren`, and the parent is given back. Its own test binary: once a device
//! is leaked, this process can never finalize the runtime (that is the point).

use crate::support;

use ascend_typestate::{Acl, Error, InitOptions};

#[test]
fn leaked_children_keep_their_parents_d3_p2() {
    if support::child::own_process("leaked_children_keep_their_parents_d3_p2") {
        return;
    }
    let path = support::simulator_path();
    let sim = support::sim::Sim::open(&path);
    sim.clear_findings();
    let acl = Acl::init_with(&InitOptions::default().library(&path)).unwrap();

    // A context with a leaked stream is kept, not destroyed.
    let device = acl.set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    std::mem::forget(ctx.create_stream().unwrap());
    let Err(failed) = ctx.try_destroy() else {
        panic!("destroyed a context with a live stream")
    };
    let (error, ctx) = failed.into_parts();
    assert!(matches!(error, Error::LiveChildren { count: 1 }), "{error}");
    std::mem::forget(ctx); // the leak, continued

    // So its device is kept, not reset: it has a live (leaked) context.
    let Err(failed) = device.try_reset() else {
        panic!("reset a device with a live context")
    };
    let (error, device) = failed.into_parts();
    assert!(matches!(error, Error::LiveChildren { count: 1 }), "{error}");
    assert_eq!(device.id(), 0, "the device is given back");

    // Its `Drop` keeps it too, and reports.
    let reports = support::DropErrors::capture();
    drop(device);
    let reported = reports.take();
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(reported[0].starts_with("Device: "), "{reported:?}");

    // A device of its own, leaked: two devices are now alive, and the runtime is not
    // finalized under them.
    let other = acl.set_device(1).unwrap();
    std::mem::forget(other);
    let Err(failed) = acl.try_finalize() else {
        panic!("finalized the runtime with live devices")
    };
    let (error, acl) = failed.into_parts();
    assert!(matches!(error, Error::LiveChildren { count: 2 }), "{error}");
    // The runtime was not finalized: it still answers.
    assert!(acl.device_count().unwrap() >= 2);
    drop(acl);
    let reported = reports.take();
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(reported[0].starts_with("Acl: "), "{reported:?}");
    drop(reports);
    // Nothing was destroyed under a leaked handle: the simulator still holds them.
    assert!(sim.live_objects() >= 2);
    assert!(sim.findings().is_empty(), "{:#?}", sim.findings());
    support::child::passed("leaked_children_keep_their_parents_d3_p2");
}
