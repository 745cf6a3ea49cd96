//! What the tests of model execution share (`synchronous`, `pipelined`, `execution_faults`,
//! `bounds`, `element_types`, and the `scoped_*` modules): a linear classifier in the simulator's text format
//! (`simulator::SimModel`) and what it computes, model files, frame inputs, and the clean end
//! of a session (zero checker findings, no live runtime object).

use crate::support;

use std::path::PathBuf;

use ascend_typestate::simulator::{SimDtype, SimModel};
use support::sim::Session;

pub(crate) const FEATURES: usize = 8;

pub(crate) const CLASSES: usize = 4;

pub(crate) fn weights() -> Vec<f32> {
    (0..FEATURES * CLASSES)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) / 4.0)
        .collect()
}

pub(crate) const BIAS: [f32; CLASSES] = [0.5, -0.25, 0.0, 1.0];

/// A linear classifier over `FEATURES` values, `rows` items (the largest gear's batch for a
/// dynamic model).
pub(crate) fn classifier(rows: usize, gears: &[u64]) -> SimModel {
    SimModel::new(
        SimDtype::F32,
        &[rows, FEATURES],
        SimDtype::F32,
        &[rows, CLASSES],
    )
    .batch_gears(gears)
    .matmul(FEATURES, CLASSES, &weights())
    .bias(&BIAS)
}

/// What the classifier computes for `input` (rows of `FEATURES`).
pub(crate) fn expected(input: &[f32]) -> Vec<f32> {
    let w = weights();
    input
        .chunks(FEATURES)
        .flat_map(|row| {
            (0..CLASSES).map(|c| {
                let mut sum = 0.0f32;
                for (r, x) in row.iter().enumerate() {
                    sum += x * w[r * CLASSES + c];
                }
                sum + BIAS[c]
            })
        })
        .collect()
}

pub(crate) fn assert_close(found: &[f32], want: &[f32], what: &str) {
    assert_eq!(found.len(), want.len(), "{what}");
    for (i, (a, b)) in found.iter().zip(want).enumerate() {
        assert!((a - b).abs() < 1e-3, "{what}: element {i}: {a} != {b}");
    }
}

pub(crate) fn model_file(name: &str, model: &SimModel) -> PathBuf {
    // A directory per file: tests run in parallel, and `scratch_dir` empties its directory.
    let path = support::scratch_dir(&format!("typed_models_{name}")).join("m.model");
    model.write(&path).expect("write the model file");
    path
}

pub(crate) fn frame_input(n: u64, rows: usize) -> Vec<f32> {
    (0..rows * FEATURES)
        .map(|i| ((n as usize * 31 + i) % 17) as f32 / 8.0 - 1.0)
        .collect()
}

pub(crate) fn ends_clean(session: Session) {
    assert_eq!(session.sim.live_objects(), 0, "everything released");
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}
