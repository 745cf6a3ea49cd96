//! What the media tests share: JPEG fixtures and the end-of-test checks.

use crate::support;

use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
use support::sim::Session;

/// The colour of the fixtures, and its luma (BT.601, full range: 0.299 R + 0.587 G + 0.114 B).
pub(crate) const RGB: [u8; 3] = [200, 100, 50];
pub(crate) const LUMA: u8 = 124;

/// A `width` x `height` JPEG of one colour ([`RGB`]), sampled 4:2:0 (or progressive).
pub(crate) fn jpeg(width: u16, height: u16, progressive: bool) -> Vec<u8> {
    let pixels: Vec<u8> = (0..usize::from(width) * usize::from(height))
        .flat_map(|_| RGB)
        .collect();
    let mut out = Vec::new();
    let mut encoder = Encoder::new(&mut out, 95);
    encoder.set_progressive(progressive);
    encoder.set_sampling_factor(SamplingFactor::R_4_2_0);
    encoder
        .encode(&pixels, width, height, ColorType::Rgb)
        .expect("encode the fixture");
    out
}

/// Every visible luma byte of an NV12 picture read back, near [`LUMA`].
pub(crate) fn assert_luma(bytes: &[u8], width: u32, height: u32, stride: u32) {
    for row in 0..height as usize {
        for col in 0..width as usize {
            let y = bytes[row * stride as usize + col];
            assert!(
                y.abs_diff(LUMA) <= 3,
                "luma {y} at ({col}, {row}), expected about {LUMA}"
            );
        }
    }
}

/// Nothing alive, no finding.
pub(crate) fn ends_clean(session: Session) {
    assert_eq!(session.sim.live_objects(), 0, "everything released");
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}
