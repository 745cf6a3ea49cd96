//! Feature `log`: what no caller can receive goes to the `log` facade when a logger
//! takes it. Run with `cargo test --features log --test logging` (`.ci/run` does).
#![cfg(feature = "log")]

mod support;

use std::sync::Mutex;

use support::sim::Session;

static RECORDS: Mutex<Vec<(log::Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Error
    }
    fn log(&self, record: &log::Record<'_>) {
        RECORDS.lock().unwrap_or_else(|p| p.into_inner()).push((
            record.level(),
            record.target().to_owned(),
            record.args().to_string(),
        ));
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture;

/// A stream dropped while every try of its destroy fails: the default drop-error handler
/// logs each failure at level `error`, target `ascend_typestate`, and prints nothing.
#[test]
fn drop_errors_go_to_the_logger() {
    const CHILD: &str = "ASCEND_TYPESTATE_LOGGING_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let (status, out, err) = support::child::in_child(
            "drop_errors_go_to_the_logger",
            CHILD,
            std::time::Duration::from_secs(60),
        );
        assert!(status.is_some_and(|s| s.success()), "{out}\n{err}");
        assert!(out.contains("logged as expected"), "{out}\n{err}");
        assert!(
            !err.contains("ascend-typestate:"),
            "nothing on stderr: {err}"
        );
        return;
    }
    log::set_logger(&CAPTURE).expect("the only logger of this binary");
    log::set_max_level(log::LevelFilter::Error);
    let session = Session::start();
    session.expect_findings();
    let device = session.default_device(0);
    let stream = device.create_stream().unwrap();
    session.sim.inject_fault("aclrtDestroyStream", 507_000, 4);
    drop(stream);
    session.sim.clear_faults();
    let records = std::mem::take(&mut *RECORDS.lock().unwrap());
    assert_eq!(records.len(), 4, "every failed try: {records:?}");
    for (level, target, message) in &records {
        assert_eq!(*level, log::Level::Error);
        assert_eq!(target, "ascend_typestate");
        assert!(
            message.contains("error while dropping Stream")
                && message.contains("aclrtDestroyStream"),
            "{message}"
        );
    }
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:?}");
    println!("logged as expected");
    // The stream was kept, so its device and runtime are too (D3): end the process here.
    std::process::exit(0);
}
