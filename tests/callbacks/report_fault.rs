//! C6 (class 8): one failed `aclrtProcessReport` does not stop the report thread.

use std::sync::mpsc;
use std::time::Duration;

use ascend_typestate::{AclError, CallbackMode, Error, ReportThread};

use crate::support::isolated::{Child, isolated_with};
use crate::support::sim::{Session, assert_no_findings};

/// Hole: the report thread's loop ended at the first failed `aclrtProcessReport` (here one
/// injected 507000). A blocking callback already launched then never ran, so the stream's
/// synchronisation, `unsubscribe` and every later teardown hung forever. The thread must
/// keep serving, and `stop` must return the failure (nothing lost). Every wait is bounded:
/// the child is killed by a watchdog after 30 s, and the callback is awaited for 10 s.
#[test]
fn c6_c1_one_failed_process_report_does_not_stop_the_report_thread() {
    let child = Child::default().timeout(Duration::from_secs(30));
    isolated_with(child, || {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let report = ReportThread::spawn(&ctx).unwrap();
            let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
            // The callback is delivered after this kernel, well after the fault below.
            session.sim.sleep_kernel(stream.as_raw(), 200_000);
            let (ran, callback_ran) = mpsc::channel();
            stream
                .launch(CallbackMode::Blocking, move || ran.send(()).unwrap())
                .unwrap();
            session.sim.inject_fault("aclrtProcessReport", 507000, 1);
            callback_ran
                .recv_timeout(Duration::from_secs(10))
                .expect("the callback launched before the fault never ran");
            stream.synchronize().unwrap();
            let stream = stream.unsubscribe().unwrap();
            stream.destroy().unwrap();
            match report.stop() {
                Err(Error::Runtime {
                    call: "aclrtProcessReport",
                    code: AclError::RtInternalError,
                    ..
                }) => {}
                other => panic!("expected the injected aclrtProcessReport error, got {other:?}"),
            }
            ctx.destroy().unwrap();
            device.reset().unwrap();
            assert_eq!(session.sim.live_objects(), 0);
        }
        assert_no_findings(&session.finish());
    });
}
