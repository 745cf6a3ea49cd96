//! A wait scope whose reset cannot be issued and one of whose waiting
//! streams cannot be synchronised. Returning an error from the body leaks the event (E9
//! respected); a panicking body once went through `ResetOnUnwind`, which dropped `quiesced`,
//! and the scope's event was destroyed after synchronising only the first stream (E9). The
//! unwind guard now leaks it too.

use crate::support;

use std::time::Duration;

use ascend_typestate::{Error, WaitError};
use support::sim::Session;

fn run(panic_in_body: bool) -> (Vec<support::sim::Finding>, Vec<String>) {
    let session = Session::start();
    let reports = support::DropErrors::capture();
    let findings;
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        session.sim.sleep_kernel(s1.as_raw(), 2_000);
        session.sim.sleep_kernel(s3.as_raw(), 300_000); // s3's wait runs late
        let e = ctx.create_event().unwrap().record(&s1).unwrap();
        let sim = &session.sim;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let r = e.try_wait(&s2, |mut w| {
                w.also_wait(&s3)?;
                // The reset cannot be issued, twice (wait's own two tries); synchronising s2 works, s3
                // fails twice (it cannot be seen done).
                // Both tries fail at their first step, the wait of the join from s3 (two
                // faults in a row), so nothing orders s2 after s3.
                sim.inject_fault("aclrtStreamWaitEvent", 507000, 2);
                sim.inject_fault_at("aclrtSynchronizeStream", 507000, 1, 2);
                if panic_in_body {
                    panic!("red: panic in the scope");
                }
                Err(Error::InvalidArgument("red: the body's error"))
            });
            match r {
                Err(WaitError::Unreset(err)) => format!("Unreset({err})"),
                Err(other) => format!("other: {other}"),
                Ok(_) => "Ok".into(),
            }
        }));
        println!("outcome (panic={panic_in_body}): {outcome:?}");
        findings = session.sim.findings();
        std::thread::sleep(Duration::from_millis(350));
        session.sim.clear_faults();
        for s in [s1, s2, s3] {
            let _ = s.destroy();
        }
        // A leaked event keeps the context: forget it (and everything above) if so.
        let destroyed = match ctx.try_destroy() {
            Ok(()) => true,
            Err(f) => {
                println!("ctx: {}", f.error);
                std::mem::forget(f.value);
                false
            }
        };
        if destroyed {
            device.reset().unwrap();
        } else {
            std::mem::forget(device);
        }
    }
    let r = reports.take();
    // Leave the runtime as it is (a leaked event may keep it initialised).
    std::mem::forget(session);
    (findings, r)
}

const CHILD_ENV: &str = "RED_UNWIND_CHILD";

/// Runs `test` alone in a child process (a case may leave the runtime initialised).
fn in_child(test: &str) -> String {
    let out = support::child::run(
        test,
        &[
            (CHILD_ENV, std::ffi::OsStr::new("1")),
            ("ACLSIM_QUIET", std::ffi::OsStr::new("1")),
        ],
        std::time::Duration::from_secs(600),
        support::child::Stderr::Piped,
    );
    let text = format!("{}\n{}", out.stdout, out.stderr);
    println!("{text}");
    assert!(out.success(), "child failed: {:?}", out.status);
    text
}

#[test]
fn early_error_path_no_e9() {
    in_child("early_error_path_leaks_rather_than_destroying_under_a_pending_wait");
}

#[test]
fn panic_path_no_e9() {
    in_child("panic_path_never_destroys_the_event_under_a_pending_wait_e9");
}

#[test]
fn early_error_path_leaks_rather_than_destroying_under_a_pending_wait() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let (findings, reports) = run(false);
    println!("findings: {findings:#?}\nreports: {reports:#?}");
    assert!(
        findings.iter().all(|f| f.rule != "E9"),
        "E9 on the early-error path: {findings:#?}"
    );
}

#[test]
fn panic_path_never_destroys_the_event_under_a_pending_wait_e9() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let (findings, reports) = run(true);
    println!("findings: {findings:#?}\nreports: {reports:#?}");
    assert!(
        findings.iter().all(|f| f.rule != "E9"),
        "E9 on the panic path: {findings:#?}"
    );
}
