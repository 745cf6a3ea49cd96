//! The double-buffered inference loop (H2D, kernel, D2H on two streams joined by
//! events, per-slot completion events, 1,000 frames), once with [`Pipeline`] and once with
//! raw calls that issue exactly the same runtime work: per frame, the slot's completion
//! event synchronised and reset (E10), the input copy and a simulated kernel on `compute`,
//! record / wait / reset of the hand-off event (E2-E4), the output copy and the completion
//! record on `download`.
//!
//! The host's own work per frame is the same on both sides and deliberately small (one
//! element written, one read), so that the comparison measures the API, not the host loop.

use std::ffi::c_void;
use std::time::Duration;

use ascend_typestate::sys::bindings::{
    ACL_EVENT_SYNC, ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE, aclrtEvent, aclrtStream,
};
use ascend_typestate::sys::loader::Api;
use ascend_typestate::{Context, Error, Pipeline, PipelineConfig};

/// Elements per frame, in and out.
pub const FRAME_LEN: usize = 4096;
/// Frames in flight.
pub const SLOTS: usize = 2;

/// The model: what the simulated kernel computes per element.
pub fn infer(x: f32) -> f32 {
    x * 2.0 + 1.0
}

/// The typed loop's state: the pipeline, and what the host has seen.
pub struct TypedLoop<'ctx> {
    pub pipeline: Pipeline<'ctx, f32, f32>,
    pub kernel_time: Duration,
    pub checksum: f64,
}

impl<'ctx> TypedLoop<'ctx> {
    pub fn new(ctx: &'ctx Context<'ctx>, kernel_time: Duration) -> Result<Self, Error> {
        let config = PipelineConfig::new(FRAME_LEN, FRAME_LEN).slots(SLOTS);
        Ok(TypedLoop {
            pipeline: ctx.create_pipeline(config)?,
            kernel_time,
            checksum: 0.0,
        })
    }

    /// One frame.
    #[inline(always)]
    pub fn frame(&mut self, n: u64) -> Result<(), Error> {
        let mut slot = self.pipeline.next_slot()?;
        if let Some((_, output)) = slot.output() {
            self.checksum += f64::from(output[0]);
        }
        slot.input_mut()[0] = n as f32;
        let kernel_time = self.kernel_time;
        slot.submit(|launch| launch.simulated_map(kernel_time, infer))?;
        Ok(())
    }

    /// Waits for the last frames and counts their outputs too.
    pub fn finish(mut self) -> Result<f64, Error> {
        self.pipeline.wait_all()?;
        for (_, output) in self.pipeline.outputs() {
            self.checksum += f64::from(output[0]);
        }
        self.pipeline.destroy()?;
        Ok(self.checksum)
    }
}

/// A raw slot: four buffers, two events, and the simulated kernel's job.
struct RawSlot {
    host_in: *mut c_void,
    dev_in: *mut c_void,
    dev_out: *mut c_void,
    host_out: *mut c_void,
    ready: aclrtEvent,
    done: aclrtEvent,
    in_flight: bool,
}

/// What the raw kernel reads: the slot's buffers and the function.
pub struct RawJob {
    input: *const f32,
    output: *mut f32,
    len: usize,
    f: fn(f32) -> f32,
}

type LaunchKernel = unsafe extern "C" fn(
    aclrtStream,
    u64,
    Option<unsafe extern "C" fn(*mut c_void, *const *mut c_void, usize)>,
    *mut c_void,
    *const *mut c_void,
    usize,
) -> i32;

/// The raw loop: what a C programmer writes, in Rust, through the result layer.
pub struct RawLoop {
    api: &'static Api,
    compute: aclrtStream,
    download: aclrtStream,
    slots: Vec<RawSlot>,
    jobs: Box<[RawJob]>,
    launch: LaunchKernel,
    next: usize,
    kernel_micros: u64,
    pub checksum: f64,
}

// SAFETY: raw handles of one context, used by one thread at a time (the one that owns it),
// which binds the context first.
unsafe impl Send for RawLoop {}

/// The raw kernel: `output[i] = f(input[i])`, on the simulator's thread. The same device
/// work as the typed side's simulated kernel (a function pointer per element, unaligned
/// access), so that whole-program counts compare the APIs, not two kernels.
unsafe extern "C" fn raw_kernel(user_data: *mut c_void, _b: *const *mut c_void, _n: usize) {
    // SAFETY: the slot's job, written before the launch and not again before the frame's
    // completion event is synchronised.
    let job = unsafe { user_data.cast::<RawJob>().read() };
    for i in 0..job.len {
        // SAFETY: both buffers hold `len` elements, untouched by the host until the frame is
        // done.
        unsafe {
            let x = job.input.add(i).read_unaligned();
            job.output.add(i).write_unaligned((job.f)(x));
        }
    }
}

impl RawLoop {
    /// Streams, buffers and events, in the current context (the caller's); the simulator's
    /// kernel launch from `library`, the runtime library already loaded.
    pub fn new(
        api: &'static Api,
        library: &std::path::Path,
        kernel_time: Duration,
    ) -> Result<Self, Error> {
        let bytes = FRAME_LEN * size_of::<f32>();
        // SAFETY: raw handles of the current context, released by `finish`.
        unsafe {
            let compute = api.create_stream()?;
            let download = api.create_stream()?;
            let mut slots = Vec::new();
            for _ in 0..SLOTS {
                slots.push(RawSlot {
                    host_in: api.malloc_host(bytes)?,
                    dev_in: api.malloc(bytes, ACL_MEM_MALLOC_HUGE_FIRST)?,
                    dev_out: api.malloc(bytes, ACL_MEM_MALLOC_HUGE_FIRST)?,
                    host_out: api.malloc_host(bytes)?,
                    ready: api.create_event_with_flag(ACL_EVENT_SYNC)?,
                    done: api.create_event_with_flag(ACL_EVENT_SYNC)?,
                    in_flight: false,
                });
            }
            let unsupported = |_| Error::Unsupported {
                symbol: "aclsimLaunchKernel",
            };
            // Already loaded: this only finds it; never unloaded (leaked), as the runtime.
            let library: &'static libloading::Library = Box::leak(Box::new(
                libloading::Library::new(library).map_err(unsupported)?,
            ));
            let launch: libloading::Symbol<'static, LaunchKernel> =
                library.get(b"aclsimLaunchKernel\0").map_err(unsupported)?;
            let jobs = (0..SLOTS)
                .map(|_| RawJob {
                    input: std::ptr::null(),
                    output: std::ptr::null_mut(),
                    len: 0,
                    f: infer,
                })
                .collect();
            Ok(RawLoop {
                api,
                compute,
                download,
                slots,
                jobs,
                launch: *launch,
                next: 0,
                kernel_micros: kernel_time.as_micros() as u64,
                checksum: 0.0,
            })
        }
    }

    /// One frame, the same runtime calls as [`TypedLoop::frame`].
    #[inline(always)]
    pub fn frame(&mut self, n: u64) -> Result<(), Error> {
        let api = self.api;
        let bytes = FRAME_LEN * size_of::<f32>();
        let i = self.next;
        let slot = &mut self.slots[i];
        // SAFETY: the protocol of the module's docs: every buffer is the slot's, touched by
        // the host only after the slot's completion event is synchronised.
        unsafe {
            if slot.in_flight {
                api.synchronize_event(slot.done)?;
                api.reset_event(slot.done, self.download)?;
                self.checksum += f64::from(*slot.host_out.cast::<f32>());
            }
            *slot.host_in.cast::<f32>() = n as f32;
            api.memcpy_async(
                slot.dev_in,
                bytes,
                slot.host_in,
                bytes,
                ACL_MEMCPY_HOST_TO_DEVICE,
                self.compute,
            )?;
            let job = self.jobs.as_mut_ptr().add(i);
            job.write(RawJob {
                input: slot.dev_in.cast(),
                output: slot.dev_out.cast(),
                len: FRAME_LEN,
                f: infer,
            });
            let buffers = [slot.dev_in, slot.dev_out];
            let code = (self.launch)(
                self.compute,
                self.kernel_micros,
                Some(raw_kernel),
                job.cast(),
                buffers.as_ptr(),
                buffers.len(),
            );
            if code != 0 {
                return Err(Error::Runtime {
                    call: "aclsimLaunchKernel",
                    code: ascend_typestate::AclError::from_code(code),
                    message: None,
                });
            }
            api.record_event(slot.ready, self.compute)?;
            api.stream_wait_event(self.download, slot.ready)?;
            api.reset_event(slot.ready, self.download)?;
            api.memcpy_async(
                slot.host_out,
                bytes,
                slot.dev_out,
                bytes,
                ACL_MEMCPY_DEVICE_TO_HOST,
                self.download,
            )?;
            api.record_event(slot.done, self.download)?;
        }
        slot.in_flight = true;
        self.next = if i + 1 == SLOTS { 0 } else { i + 1 };
        Ok(())
    }

    /// Waits for the last frames, counts their outputs, releases everything.
    pub fn finish(mut self) -> Result<f64, Error> {
        let api = self.api;
        // SAFETY: every handle is this loop's; released once, after both streams are done.
        unsafe {
            api.synchronize_stream(self.compute)?;
            api.synchronize_stream(self.download)?;
            for slot in &self.slots {
                if slot.in_flight {
                    self.checksum += f64::from(*slot.host_out.cast::<f32>());
                }
            }
            for slot in self.slots.drain(..) {
                api.destroy_event(slot.ready)?;
                api.destroy_event(slot.done)?;
                api.free_host(slot.host_in)?;
                api.free(slot.dev_in)?;
                api.free(slot.dev_out)?;
                api.free_host(slot.host_out)?;
            }
            api.destroy_stream(self.compute)?;
            api.destroy_stream(self.download)?;
        }
        Ok(self.checksum)
    }
}
