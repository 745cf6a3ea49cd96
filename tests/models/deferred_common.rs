//! What the tests of the deferred release share (`deferred_unloads`,
//! `deferred_resets`, `deferred_plain_forms`): the child process each test runs in, a small
//! model and its file, the runtime's configuration, findings by rule.

use crate::support;

use std::path::PathBuf;
use std::time::Duration;

use ascend_typestate::PipelineConfig;
use ascend_typestate::simulator::{SimDtype, SimModel};
use support::sim::Finding;

pub(crate) const ROWS: usize = 2;

pub(crate) const FEATURES: usize = 8;

pub(crate) const CLASSES: usize = 4;

pub(crate) const CODE: i32 = 507_000;

/// Runs `test` in a child process (the child's body runs when `RT23_CHILD` is set) and
/// asserts that it printed `RT23-OK`. Returns `true` in the child.
pub(crate) fn in_child(test: &str) -> bool {
    const VAR: &str = "RT23_CHILD";
    if std::env::var_os(VAR).is_some() {
        return true;
    }
    let (status, out, err) = support::child::in_child(test, VAR, Duration::from_secs(300));
    assert!(
        status.is_some_and(|s| s.success()) && out.contains("RT23-OK"),
        "child {test} failed ({status:?}):\n--- stdout\n{out}\n--- stderr\n{err}"
    );
    false
}

/// The child's end: prints the marker and leaves without finalizing (a test may have
/// left the runtime with objects it kept on purpose).
pub(crate) fn child_ok() -> ! {
    println!("RT23-OK");
    std::process::exit(0);
}

pub(crate) fn sim_model(gears: &[u64], item: Duration) -> SimModel {
    let rows = gears.iter().copied().max().map_or(ROWS, |g| g as usize);
    SimModel::new(
        SimDtype::F32,
        &[rows, FEATURES],
        SimDtype::F32,
        &[rows, CLASSES],
    )
    .batch_gears(gears)
    .time_per_item(item)
    .matmul(FEATURES, CLASSES, &[0.25; FEATURES * CLASSES])
}

pub(crate) fn model_file(name: &str, model: &SimModel) -> PathBuf {
    let path = support::scratch_dir(&format!("rt23_{name}")).join("m.model");
    model.write(&path).expect("write the model file");
    path
}

pub(crate) fn config() -> PipelineConfig {
    PipelineConfig::new(ROWS * FEATURES, ROWS * CLASSES)
}

pub(crate) fn infer(x: f32) -> f32 {
    x + 1.0
}

/// Findings about the rules under attack (leak reports, P2, are judged separately).
pub(crate) fn rule_findings(findings: &[Finding]) -> Vec<&Finding> {
    findings.iter().filter(|f| f.rule != "P2").collect()
}
