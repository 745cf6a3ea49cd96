//! A double-buffered inference loop with [`Pipeline`]: for each frame, a host-to-device copy
//! and a (simulated) kernel on one stream, the device-to-host copy on another, joined by an
//! event (record, wait, reset: E2-E4). While frame *n* is copied back, frame *n + 1* is
//! already uploaded and computed; nothing drains between frames.
//!
//! The application's pattern for a long-running program: the runtime and the device are
//! initialised once ([`Acl::shared`], a `'static` device), the worker owns its pipeline (two
//! streams, and per slot two events and four buffers, all created at start-up) in a struct of
//! its own, and runs on a thread started with `std::thread::spawn`. The loop creates and
//! allocates nothing. Each slot's buffers are handed back to the host only once its previous
//! frame is proven done (M3).
//!
//! ```sh
//! cargo run --example pipeline
//! ACLSIM_TRACE=pipeline.trace.json cargo run --example pipeline   # open in Perfetto
//! ```
//!
//! [`Pipeline`]: ascend_typestate::Pipeline
//! [`Acl::shared`]: ascend_typestate::Acl::shared

use std::time::{Duration, Instant};

use ascend_typestate::{Acl, DefaultContext, Device, Error, Pipeline, PipelineConfig};

const FRAMES: u64 = 1000;
const FRAME_LEN: usize = 1 << 14;
const KERNEL_TIME: Duration = Duration::from_micros(200);

/// The "model": what the kernel computes per element.
fn infer(x: f32) -> f32 {
    x * 2.0 + 1.0
}

/// Frame `n`'s input.
fn fill(n: u64, input: &mut [f32]) {
    for (i, x) in input.iter_mut().enumerate() {
        *x = (n % 1000) as f32 + i as f32 / FRAME_LEN as f32;
    }
}

/// The worker: everything its loop uses, created once.
struct Worker {
    pipeline: Pipeline<'static, f32, f32>,
    checked: u64,
}

impl Worker {
    fn new(device: &'static Device<'static, DefaultContext>) -> Result<Worker, Error> {
        let config = PipelineConfig::new(FRAME_LEN, FRAME_LEN).slots(2);
        Ok(Worker {
            pipeline: device.create_pipeline(config)?,
            checked: 0,
        })
    }

    /// One frame: take the oldest slot (its previous frame is done), check that frame's
    /// output, write the new input, submit.
    fn frame(&mut self) -> Result<(), Error> {
        let mut slot = self.pipeline.next_slot()?;
        if let Some((n, output)) = slot.output() {
            check(n, output);
            self.checked += 1;
        }
        fill(slot.frame(), slot.input_mut());
        slot.submit(|launch| launch.simulated_map(KERNEL_TIME, infer))?;
        Ok(())
    }

    /// The last frames, then everything released.
    fn finish(mut self) -> Result<u64, Error> {
        self.pipeline.wait_all()?;
        for (n, output) in self.pipeline.outputs() {
            check(n, output);
            self.checked += 1;
        }
        self.pipeline.destroy()?;
        Ok(self.checked)
    }
}

fn check(n: u64, output: &[f32]) {
    let mut expected = vec![0.0; output.len()];
    fill(n, &mut expected);
    for (i, (y, x)) in output.iter().zip(&expected).enumerate() {
        assert_eq!(*y, infer(*x), "frame {n}, element {i}");
    }
}

fn main() -> Result<(), Error> {
    let acl = Acl::shared()?;
    println!("runtime library: {}", acl.library());
    if acl.simulator().is_none() {
        println!("the kernel of this example is simulated: run it without an Ascend runtime");
        return Ok(());
    }
    // Initialised once, kept for the program's life.
    let device: &'static Device<'static, DefaultContext> =
        Box::leak(Box::new(acl.set_device(0)?.into_default_context()?));
    let mut worker = Worker::new(device)?;

    let started = Instant::now();
    let checked = std::thread::spawn(move || -> Result<u64, Error> {
        for _ in 0..FRAMES {
            worker.frame()?;
        }
        worker.finish()
    })
    .join()
    .expect("the worker thread")?;
    let elapsed = started.elapsed();
    assert_eq!(checked, FRAMES);

    let serial = KERNEL_TIME * FRAMES as u32;
    println!(
        "{FRAMES} frames of {} KiB in {:.1} ms ({:.0} frames/s; kernels alone: {:.1} ms); \
         every output checked",
        FRAME_LEN * 4 / 1024,
        elapsed.as_secs_f64() * 1e3,
        FRAMES as f64 / elapsed.as_secs_f64(),
        serial.as_secs_f64() * 1e3
    );
    if let Some(sim) = acl.simulator() {
        println!("simulator findings: {}", sim.findings().len());
    }
    Ok(())
}
