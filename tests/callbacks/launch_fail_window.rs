//! Review (closed): `serve` once decided whether "not subscribed" (107012) was a failure from
//! `outstanding`, which a launch whose `aclrtLaunchCallback` fails (injected) raises for a
//! moment. The report thread could read it then, start its call (blocking: the stream is
//! subscribed), and see the user unsubscribe the last stream: 107012 was kept as a failure
//! and `stop` returned it, although no callback was ever queued. It now reads `enqueued`,
//! counted only once the runtime accepted a callback.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ascend_typestate::Error;
use ascend_typestate::{CallbackMode, ReportThread};
use support::sim::Session;

static REPORTED: AtomicUsize = AtomicUsize::new(0);

fn handler(what: &'static str, error: &Error) {
    REPORTED.fetch_add(1, Ordering::SeqCst);
    eprintln!("drop-error: {what}: {error}");
}

#[test]
fn failed_launch_then_unsubscribe_gives_no_spurious_107012() {
    if support::child::own_process("failed_launch_then_unsubscribe_gives_no_spurious_107012") {
        return;
    }
    let cycles: usize = std::env::var("REVIEW_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let session = Session::start();
    let sim = session.acl().simulator().unwrap();
    ascend_typestate::set_drop_error_handler(handler);
    let mut spurious = 0usize;
    let mut stops = 0usize;
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let mut stream = Some(ctx.create_stream().unwrap());
        // One report thread per batch of cycles so that each error is attributed.
        let per_thread = 10;
        let mut c = 0;
        while c < cycles {
            let report = ReportThread::spawn(&ctx).unwrap();
            for _ in 0..per_thread {
                c += 1;
                let s = report.subscribe(stream.take().unwrap()).unwrap();
                sim.inject_fault("aclrtLaunchCallback", 507000, 0, u32::MAX)
                    .unwrap();
                // Spin failing launches for longer than one POLL_MS, so that the report
                // thread starts at least one call while a failing launch is in flight.
                let until = Instant::now() + Duration::from_millis(15);
                while Instant::now() < until {
                    let r = s.launch(CallbackMode::NonBlocking, || {});
                    assert!(matches!(r, Err(Error::Runtime { .. })), "{r:?}");
                }
                sim.clear_faults();
                stream = Some(s.unsubscribe().map_err(|f| f.to_string()).unwrap());
                // Give the report thread's in-progress call time to answer 107012.
                std::thread::sleep(Duration::from_millis(1));
            }
            let before = REPORTED.load(Ordering::SeqCst);
            stops += 1;
            match report.stop() {
                Ok(()) => {}
                Err(e) => {
                    let extra = REPORTED.load(Ordering::SeqCst) - before;
                    eprintln!("stop #{stops}: {e} (+{extra} reported)");
                    spurious += 1 + extra;
                }
            }
        }
        stream.unwrap().destroy().unwrap();
    }
    let findings = session.finish();
    eprintln!("cycles={cycles} spurious failures={spurious} findings={findings:?}");
    assert_eq!(spurious, 0, "stop returned spurious 107012 failures");
    support::child::passed("failed_launch_then_unsubscribe_gives_no_spurious_107012");
}
