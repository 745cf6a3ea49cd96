//! P2 (class 2): the runtime library is never unloaded while its code may run.

use std::time::Duration;

use ascend_typestate::sys::loader::{Api, LoadOptions};

use crate::support::isolated::{Child, is_child, spawn_self};
use crate::support::{self, sim::Sim};

/// The dangerous part, in the child: a raw session whose stream has a worker thread
/// running the library's code, then the `Api` dropped.
#[allow(unused_unsafe)]
fn drop_a_loaded_api_while_its_workers_run() {
    let path = support::simulator_path();
    let api = Api::load(&LoadOptions::default().path(&path)).unwrap();
    // SAFETY: a fresh process: nothing else uses the runtime; the stream is never destroyed
    // (the point is a worker thread that stays alive).
    unsafe {
        api.init(None).unwrap();
        api.set_device(0).unwrap();
        let _stream = api.create_stream().unwrap();
    }
    drop(api);
    // The stream's worker keeps running the library's code meanwhile.
    std::thread::sleep(Duration::from_millis(200));
    // Still the same, initialised runtime (a library unloaded and opened again would be a
    // fresh, uninitialised one, with no live object).
    let sim = Sim::open(&path);
    assert_eq!(
        sim.live_objects(),
        1,
        "the runtime was unloaded and reloaded"
    );
    support::sim::assert_no_findings(&sim.findings());
}

/// Hole: `Api::load` gave safe code a value owning the runtime library, and dropping it
/// `dlclose`d the library while the simulator's worker threads still ran its code: a crash
/// (SIGSEGV, most runs) after a plain `drop`. The library must never be unloaded. The drop
/// runs in a child process, five times, so that a crash fails the test.
#[test]
fn p2_dropping_a_raw_api_never_unloads_the_runtime() {
    if is_child() {
        drop_a_loaded_api_while_its_workers_run();
        return;
    }
    for run in 1..=5 {
        let outcome = spawn_self(&Child::default().timeout(Duration::from_secs(30)));
        let passed = outcome.status.is_some_and(|s| s.success());
        assert!(passed, "run {run} of 5: {}", outcome.describe());
        outcome.assert_passed();
    }
}
