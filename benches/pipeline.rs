//! Wall time of the double-buffered inference loop: 1,000 frames of H2D, a
//! simulated kernel and D2H on two streams joined by events, with [`Pipeline`] in a struct
//! on a `std::thread::spawn`ed thread, against the same loop in raw calls on another
//! spawned thread, alternately, in one process (`benches/common/pipeline.rs` has both).
//!
//! ```sh
//! # 31 rounds of each, 1,000 frames, 20 µs kernels
//! cargo bench -p ascend-typestate-benches --bench pipeline
//! # rounds, frames, kernel µs
//! cargo bench -p ascend-typestate-benches --bench pipeline -- 11 1000 0
//! ```
//!
//! Prints each variant's median (ms per 1,000 frames) and the typed/raw ratio of the medians;
//! `scripts/benchmarks.sh` puts them in `docs/benchmarks.md`.
//!
//! [`Pipeline`]: ascend_typestate::Pipeline

use std::time::{Duration, Instant};

use ascend_typestate::{Acl, Context, DefaultContext, Device, Error};

#[path = "common/mod.rs"]
mod common;
use common::pipeline::{RawLoop, TypedLoop};

/// The application's worker, as a user would write it: the pipeline in its own struct,
/// moved to its own thread.
struct Worker {
    frames: TypedLoop<'static>,
}

fn typed_round(ctx: &'static Context<'static>, frames: u64, kernel: Duration) -> Duration {
    let worker = Worker {
        frames: TypedLoop::new(ctx, kernel).expect("create the pipeline"),
    };
    std::thread::spawn(move || {
        let mut worker = worker;
        let start = Instant::now();
        for n in 0..frames {
            worker.frames.frame(n).expect("a typed frame");
        }
        let checksum = worker.frames.finish().expect("finish");
        let elapsed = start.elapsed();
        assert_eq!(checksum, checksum_of(frames));
        elapsed
    })
    .join()
    .expect("the typed thread")
}

fn raw_round(ctx: &'static Context<'static>, acl: &Acl, frames: u64, kernel: Duration) -> Duration {
    let library = acl.library().path().to_owned();
    let raw_ctx = ctx.as_raw() as usize;
    std::thread::spawn(move || {
        let api = ascend_typestate::sys::loader::global().expect("loaded");
        // SAFETY: a live context (the device's default one, held for the process).
        unsafe { api.set_current_context(raw_ctx as _) }.expect("bind");
        let mut frames_loop = RawLoop::new(api, &library, kernel).expect("raw setup");
        let start = Instant::now();
        for n in 0..frames {
            frames_loop.frame(n).expect("a raw frame");
        }
        let checksum = frames_loop.finish().expect("finish");
        let elapsed = start.elapsed();
        assert_eq!(checksum, checksum_of(frames));
        elapsed
    })
    .join()
    .expect("the raw thread")
}

/// The sum of every frame's first output element: `infer(n)` for each frame `n`.
fn checksum_of(frames: u64) -> f64 {
    (0..frames)
        .map(|n| f64::from(common::pipeline::infer(n as f32)))
        .sum()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> Result<(), Error> {
    // `cargo bench` passes `--bench`: ignore flags.
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let rounds: usize = args.next().map_or(31, |s| s.parse().expect("rounds"));
    let frames: u64 = args.next().map_or(1000, |s| s.parse().expect("frames"));
    let kernel = Duration::from_micros(args.next().map_or(20, |s| s.parse().expect("µs")));
    let acl = Acl::shared()?;
    let device: &'static Device<'static, DefaultContext> =
        Box::leak(Box::new(acl.set_device(0)?.into_default_context()?));
    let ctx: &'static Context<'static> = device;
    // Warm-up: one round of each.
    typed_round(ctx, frames / 10 + 2, kernel);
    raw_round(ctx, acl, frames / 10 + 2, kernel);
    let (mut typed, mut raw) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Alternate which goes first, so that a slow phase of the machine hits both.
        if round % 2 == 0 {
            typed.push(typed_round(ctx, frames, kernel));
            raw.push(raw_round(ctx, acl, frames, kernel));
        } else {
            raw.push(raw_round(ctx, acl, frames, kernel));
            typed.push(typed_round(ctx, frames, kernel));
        }
    }
    // Each round's pair ran back to back: the median of their ratios is less sensitive to a
    // slow phase of the machine than the ratio of the medians.
    let mut paired: Vec<f64> = typed
        .iter()
        .zip(&raw)
        .map(|(t, r)| t.as_secs_f64() / r.as_secs_f64())
        .collect();
    paired.sort_by(f64::total_cmp);
    let (t, r) = (median(typed), median(raw));
    println!(
        "pipeline: {frames} frames, {} µs kernels, {rounds} rounds: typed {:.2} ms, raw {:.2} ms \
         (medians), typed/raw {:.4} (medians), {:.4} (median of the rounds' ratios; \
         {:.4} to {:.4})",
        kernel.as_micros(),
        t.as_secs_f64() * 1e3,
        r.as_secs_f64() * 1e3,
        t.as_secs_f64() / r.as_secs_f64(),
        paired[paired.len() / 2],
        paired[0],
        paired[paired.len() - 1],
    );
    Ok(())
}
