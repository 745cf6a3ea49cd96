//! C4: at most 1024 subscribed threads per process on Atlas 200/500 A2. The 1025th report
//! thread is a typed error before anything reaches the runtime; stopping one frees a slot.
//! Its own test binary, so that no other test's report threads count.

use crate::support;

use ascend_typestate::Error;
use ascend_typestate::{MAX_REPORT_THREADS, ReportThread};
use support::sim::{Session, assert_no_findings};

#[test]
fn the_1025th_report_thread_is_a_typed_error_c4() {
    if support::child::own_process("the_1025th_report_thread_is_a_typed_error_c4") {
        return;
    }
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let mut threads: Vec<_> = (0..MAX_REPORT_THREADS)
            .map(|_| ReportThread::spawn(&ctx).unwrap())
            .collect();
        let err = ReportThread::spawn(&ctx).unwrap_err();
        assert!(
            matches!(err, Error::TooManyReportThreads { limit: 1024 }),
            "{err}"
        );
        threads.pop().unwrap().stop().unwrap();
        threads.push(ReportThread::spawn(&ctx).unwrap());
        for thread in threads {
            thread.stop().unwrap();
        }
    }
    assert_no_findings(&session.finish());
    support::child::passed("the_1025th_report_thread_is_a_typed_error_c4");
}
