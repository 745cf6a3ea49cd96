//! P3 (class 1): an asynchronous error pending on an event's reset stream must not leak the
//! event. The timeout itself is armed through the raw layer (`unsafe`): safe code cannot
//! arm it (see `ui-tests/fail/p3_safe_code_cannot_arm_the_op_wait_timeout.rs` and
//! `tests/events/wait_timeout_env.rs`).

use ascend_typestate::Acl;

use crate::support::isolated::{Reports, isolated};
use crate::support::sim::{Session, assert_no_findings};

/// The environment fault: an armed op wait timeout, through the raw layer.
#[allow(unused_unsafe)]
fn arm_op_wait_timeout(acl: &Acl, seconds: u32) {
    // SAFETY: only this test's streams exist; a wait that times out makes their next
    // synchronisation fail, which is what the test is about.
    unsafe { acl.api().set_op_wait_timeout(seconds) }.unwrap();
}

/// Hole: a `Reset` event dropped while its reset stream holds a pending asynchronous error
/// (a timed-out wait, P3) was never destroyed: its release synchronised that stream once,
/// got the stream's error and gave up, so the event leaked, and with it its context (never
/// destroyed: `LiveChildren`), its device and the runtime (never finalized). The release
/// must get past the stream's error, and the error must still be reported.
#[test]
fn p3_e9_reset_event_dropped_with_a_pending_async_error_is_still_released() {
    isolated(|| {
        let session = Session::start();
        {
            let acl = session.acl();
            arm_op_wait_timeout(acl, 1);
            let device = acl.set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            let reports = Reports::capture();
            // The recording stream is busy for longer than the timeout: s2's wait times out.
            session.sim.sleep_kernel(s1.as_raw(), 1_500_000);
            let event = ctx.create_event().unwrap().record(&s1).unwrap();
            let event = event.wait_and_reset(&s2).unwrap();
            drop(event);
            s1.destroy().unwrap();
            s2.destroy().unwrap();
            let reported = reports.take();
            assert!(
                reported.iter().any(|(_, e)| e.contains("RtWaitTimeout")),
                "the timed-out wait's error was lost: {reported:?}"
            );
            drop(reports);
            // The event is gone: nothing keeps the context, the device or the runtime.
            ctx.try_destroy()
                .unwrap_or_else(|f| panic!("the context was kept: {}", f.error));
            device
                .try_reset()
                .unwrap_or_else(|f| panic!("the device was kept: {}", f.error));
            assert_eq!(session.sim.live_objects(), 0);
            arm_op_wait_timeout(acl, 0);
        }
        assert_no_findings(&session.finish());
    });
}
