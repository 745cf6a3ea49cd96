//! Wall time of the classification loop of `examples/classify.rs`: 1,000 frames of
//! H2D, `aclmdlExecuteAsync` of a simulated classifier and D2H on two streams joined by
//! events, double-buffered, with [`Pipeline`] and a [`Model`] on a spawned thread, against the
//! same runtime work in raw calls (a C program's loop, through the result layer) on another
//! spawned thread, alternately, in one process.
//!
//! ```sh
//! # 31 rounds of each, 1,000 frames, 20 µs per execution
//! cargo bench -p ascend-typestate-benches --bench classify
//! # rounds, frames, execution µs
//! cargo bench -p ascend-typestate-benches --bench classify -- 11 1000 0
//! ```
//!
//! Prints each variant's median (ms per 1,000 frames) and the typed/raw ratios;
//! `scripts/benchmarks.sh` puts them in `docs/benchmarks.md`.
//!
//! [`Pipeline`]: ascend_typestate::Pipeline
//! [`Model`]: ascend_typestate::Model

use std::ffi::{CString, c_void};
use std::path::Path;
use std::time::{Duration, Instant};

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::sys::bindings::{
    ACL_EVENT_SYNC, ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE, aclDataBuffer, aclmdlDataset, aclrtEvent, aclrtStream,
};
use ascend_typestate::sys::loader::Api;
use ascend_typestate::{
    Acl, Context, DefaultContext, Device, Error, Model, Pipeline, PipelineConfig,
};

const FEATURES: usize = 64;
const CLASSES: usize = 10;
const SLOTS: usize = 2;

fn weights() -> Vec<f32> {
    (0..FEATURES * CLASSES)
        .map(|k| (k % 7) as f32 / 7.0)
        .collect()
}

/// The typed loop: a model and a pipeline in a struct, moved to its own thread.
struct Typed {
    model: Model<'static>,
    pipeline: Pipeline<'static, f32, f32>,
    checksum: f64,
}

impl Typed {
    fn new(ctx: &'static Context<'static>, path: &Path) -> Result<Typed, Error> {
        let config = PipelineConfig::new(FEATURES, CLASSES).slots(SLOTS);
        Ok(Typed {
            model: ctx.load_model(path)?,
            pipeline: ctx.create_pipeline(config)?,
            checksum: 0.0,
        })
    }

    #[inline(always)]
    fn frame(&mut self, n: u64) -> Result<(), Error> {
        let mut slot = self.pipeline.next_slot()?;
        if let Some((_, output)) = slot.output() {
            self.checksum += f64::from(output[0]);
        }
        slot.input_mut()[0] = (n % 100) as f32;
        let model = &mut self.model;
        slot.submit(|launch| launch.execute(model))?;
        Ok(())
    }

    fn finish(mut self) -> Result<f64, Error> {
        self.pipeline.wait_all()?;
        for (_, output) in self.pipeline.outputs() {
            self.checksum += f64::from(output[0]);
        }
        self.pipeline.destroy()?;
        self.model.unload()?;
        Ok(self.checksum)
    }
}

struct RawSlot {
    host_in: *mut c_void,
    dev_in: *mut c_void,
    dev_out: *mut c_void,
    host_out: *mut c_void,
    input: (*mut aclmdlDataset, *mut aclDataBuffer),
    output: (*mut aclmdlDataset, *mut aclDataBuffer),
    ready: aclrtEvent,
    done: aclrtEvent,
    in_flight: bool,
}

/// A dataset of one data buffer over `size` bytes at `data`, as the samples build it.
///
/// # Safety
/// The context is current; the memory outlives the dataset.
unsafe fn dataset(
    api: &Api,
    data: *mut c_void,
    size: usize,
) -> Result<(*mut aclmdlDataset, *mut aclDataBuffer), Error> {
    // SAFETY: the caller's contract; both released by `Raw::finish`.
    unsafe {
        let dataset = api.create_dataset()?;
        let buffer = api.create_data_buffer(data, size)?;
        api.add_dataset_buffer(dataset, buffer)?;
        Ok((dataset, buffer))
    }
}

/// The raw loop: the same runtime calls per frame as the typed one.
struct Raw {
    api: &'static Api,
    id: u32,
    compute: aclrtStream,
    download: aclrtStream,
    slots: Vec<RawSlot>,
    next: usize,
    checksum: f64,
}

// SAFETY: raw handles of one context, used by the one thread that owns the loop, which binds
// the context first.
unsafe impl Send for Raw {}

impl Raw {
    fn new(api: &'static Api, path: &Path) -> Result<Raw, Error> {
        let path = CString::new(path.to_str().expect("a UTF-8 path")).expect("no NUL");
        let (in_bytes, out_bytes) = (FEATURES * 4, CLASSES * 4);
        // SAFETY: raw handles of the current context, released by `finish`.
        unsafe {
            let id = api.model_load_from_file(&path)?;
            let compute = api.create_stream()?;
            let download = api.create_stream()?;
            let mut slots = Vec::new();
            for _ in 0..SLOTS {
                let dev_in = api.malloc(in_bytes, ACL_MEM_MALLOC_HUGE_FIRST)?;
                let dev_out = api.malloc(out_bytes, ACL_MEM_MALLOC_HUGE_FIRST)?;
                slots.push(RawSlot {
                    host_in: api.malloc_host(in_bytes)?,
                    dev_in,
                    dev_out,
                    host_out: api.malloc_host(out_bytes)?,
                    input: dataset(api, dev_in, in_bytes)?,
                    output: dataset(api, dev_out, out_bytes)?,
                    ready: api.create_event_with_flag(ACL_EVENT_SYNC)?,
                    done: api.create_event_with_flag(ACL_EVENT_SYNC)?,
                    in_flight: false,
                });
            }
            Ok(Raw {
                api,
                id,
                compute,
                download,
                slots,
                next: 0,
                checksum: 0.0,
            })
        }
    }

    #[inline(always)]
    fn frame(&mut self, n: u64) -> Result<(), Error> {
        let api = self.api;
        let (in_bytes, out_bytes) = (FEATURES * 4, CLASSES * 4);
        let i = self.next;
        let slot = &mut self.slots[i];
        // SAFETY: every buffer is the slot's, touched by the host only after the slot's
        // completion event is synchronised; the datasets describe them.
        unsafe {
            if slot.in_flight {
                api.synchronize_event(slot.done)?;
                api.reset_event(slot.done, self.download)?;
                self.checksum += f64::from(*slot.host_out.cast::<f32>());
            }
            *slot.host_in.cast::<f32>() = (n % 100) as f32;
            api.memcpy_async(
                slot.dev_in,
                in_bytes,
                slot.host_in,
                in_bytes,
                ACL_MEMCPY_HOST_TO_DEVICE,
                self.compute,
            )?;
            api.model_execute_async(self.id, slot.input.0, slot.output.0, self.compute)?;
            api.record_event(slot.ready, self.compute)?;
            api.stream_wait_event(self.download, slot.ready)?;
            api.reset_event(slot.ready, self.download)?;
            api.memcpy_async(
                slot.host_out,
                out_bytes,
                slot.dev_out,
                out_bytes,
                ACL_MEMCPY_DEVICE_TO_HOST,
                self.download,
            )?;
            api.record_event(slot.done, self.download)?;
        }
        slot.in_flight = true;
        self.next = if i + 1 == SLOTS { 0 } else { i + 1 };
        Ok(())
    }

    fn finish(mut self) -> Result<f64, Error> {
        let api = self.api;
        // SAFETY: every handle is this loop's; released once, after both streams are done.
        unsafe {
            api.synchronize_stream(self.compute)?;
            api.synchronize_stream(self.download)?;
            for slot in self.slots.drain(..) {
                if slot.in_flight {
                    self.checksum += f64::from(*slot.host_out.cast::<f32>());
                }
                for (dataset, buffer) in [slot.input, slot.output] {
                    api.destroy_data_buffer(buffer)?;
                    api.destroy_dataset(dataset)?;
                }
                api.destroy_event(slot.ready)?;
                api.destroy_event(slot.done)?;
                api.free_host(slot.host_in)?;
                api.free(slot.dev_in)?;
                api.free(slot.dev_out)?;
                api.free_host(slot.host_out)?;
            }
            api.destroy_stream(self.compute)?;
            api.destroy_stream(self.download)?;
            api.model_unload(self.id)?;
        }
        Ok(self.checksum)
    }
}

fn typed_round(ctx: &'static Context<'static>, path: &Path, frames: u64) -> (Duration, f64) {
    let mut typed = Typed::new(ctx, path).expect("typed setup");
    std::thread::spawn(move || {
        let start = Instant::now();
        for n in 0..frames {
            typed.frame(n).expect("a typed frame");
        }
        let checksum = typed.finish().expect("finish");
        (start.elapsed(), checksum)
    })
    .join()
    .expect("the typed thread")
}

fn raw_round(ctx: &'static Context<'static>, path: &Path, frames: u64) -> (Duration, f64) {
    let raw_ctx = ctx.as_raw() as usize;
    let path = path.to_owned();
    std::thread::spawn(move || {
        let api = ascend_typestate::sys::loader::global().expect("loaded");
        // SAFETY: a live context (the device's default one, held for the process).
        unsafe { api.set_current_context(raw_ctx as _) }.expect("bind");
        let mut raw = Raw::new(api, &path).expect("raw setup");
        let start = Instant::now();
        for n in 0..frames {
            raw.frame(n).expect("a raw frame");
        }
        let checksum = raw.finish().expect("finish");
        (start.elapsed(), checksum)
    })
    .join()
    .expect("the raw thread")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let rounds: usize = args.next().map_or(31, |s| s.parse().expect("rounds"));
    let frames: u64 = args.next().map_or(1000, |s| s.parse().expect("frames"));
    let micros: u64 = args.next().map_or(20, |s| s.parse().expect("µs"));
    let acl = Acl::shared()?;
    if acl.simulator().is_none() {
        println!("classify: this benchmark runs a simulated model; skipped");
        return Ok(());
    }
    let path = std::env::temp_dir().join(format!("bench-classify-{}.model", std::process::id()));
    SimModel::new(SimDtype::F32, &[1, FEATURES], SimDtype::F32, &[1, CLASSES])
        .matmul(FEATURES, CLASSES, &weights())
        .time_per_item(Duration::from_micros(micros))
        .write(&path)
        .expect("write the model");
    let device: &'static Device<'static, DefaultContext> =
        Box::leak(Box::new(acl.set_device(0)?.into_default_context()?));
    let ctx: &'static Context<'static> = device;
    typed_round(ctx, &path, frames / 10 + 2);
    raw_round(ctx, &path, frames / 10 + 2);
    let (mut typed, mut raw) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let (t, r) = if round % 2 == 0 {
            let t = typed_round(ctx, &path, frames);
            (t, raw_round(ctx, &path, frames))
        } else {
            let r = raw_round(ctx, &path, frames);
            (typed_round(ctx, &path, frames), r)
        };
        assert_eq!(t.1, r.1, "both loops compute the same outputs");
        typed.push(t.0);
        raw.push(r.0);
    }
    let _ = std::fs::remove_file(&path);
    let mut paired: Vec<f64> = typed
        .iter()
        .zip(&raw)
        .map(|(t, r)| t.as_secs_f64() / r.as_secs_f64())
        .collect();
    paired.sort_by(f64::total_cmp);
    let (t, r) = (median(typed), median(raw));
    println!(
        "classify: {frames} frames, {micros} µs executions, {rounds} rounds: typed {:.2} ms \
         ({:.0} frames/s), raw {:.2} ms ({:.0} frames/s) (medians), typed/raw {:.4} (medians), \
         {:.4} (median of the rounds' ratios; {:.4} to {:.4})",
        t.as_secs_f64() * 1e3,
        frames as f64 / t.as_secs_f64(),
        r.as_secs_f64() * 1e3,
        frames as f64 / r.as_secs_f64(),
        t.as_secs_f64() / r.as_secs_f64(),
        paired[paired.len() / 2],
        paired[0],
        paired[paired.len() - 1],
    );
    Ok(())
}
