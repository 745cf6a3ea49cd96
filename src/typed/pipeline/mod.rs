//! Pipelines (M1, M2, M3, E2-E5, E10): frames in flight on two streams, each slot with buffers
//! and events of its own, handed back to the host only once its work is proven done.

use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use bytemuck::Pod;

use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::memory::MallocPolicy;
use crate::typed::stream::Stream;

mod input;
mod jpeg;
mod release;
mod slot;

use release::{PipelineEvent, Resources};

pub use input::{FrameInput, Tensors};
pub use jpeg::{JpegConfig, JpegPipeline, Jpegs};
pub(crate) use release::KernelJob;
pub use slot::{Launch, Slot};

/// The most slots a pipeline may have.
pub const MAX_PIPELINE_SLOTS: usize = 64;

/// The shape of a [`Pipeline`]: the elements of one frame's input and output, how many frames
/// may be in flight (slots), and how device memory is allocated.
///
/// ```
/// use ascend_typestate::{MallocPolicy, PipelineConfig};
/// let config = PipelineConfig::new(224 * 224 * 3, 1000)   // input, output elements
///     .slots(3)                                            // default 2: double buffering
///     .policy(MallocPolicy::HugeFirst);
/// assert_eq!(config.slot_count(), 3);
/// assert_eq!((config.input_len(), config.output_len()), (224 * 224 * 3, 1000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PipelineConfig {
    input_len: usize,
    output_len: usize,
    slots: usize,
    policy: MallocPolicy,
}

impl PipelineConfig {
    /// `input_len` elements in, `output_len` elements out per frame; two slots (double
    /// buffering); [`MallocPolicy::HugeFirst`].
    pub const fn new(input_len: usize, output_len: usize) -> PipelineConfig {
        PipelineConfig {
            input_len,
            output_len,
            slots: 2,
            policy: MallocPolicy::HugeFirst,
        }
    }

    /// How many frames may be in flight at once, 1 to [`MAX_PIPELINE_SLOTS`] (others are
    /// [`Error::InvalidArgument`] at creation). Each slot has its own four buffers.
    pub const fn slots(mut self, slots: usize) -> PipelineConfig {
        self.slots = slots;
        self
    }

    /// How the slots' device memory is allocated.
    pub const fn policy(mut self, policy: MallocPolicy) -> PipelineConfig {
        self.policy = policy;
        self
    }

    /// The number of slots.
    pub const fn slot_count(&self) -> usize {
        self.slots
    }

    /// The elements of one frame's input; for a [`JpegPipeline`], the bytes of the longest
    /// JPEG file a slot takes.
    pub const fn input_len(&self) -> usize {
        self.input_len
    }

    /// The elements of one frame's output.
    pub const fn output_len(&self) -> usize {
        self.output_len
    }

    /// How the slots' device memory is allocated.
    pub const fn malloc_policy(&self) -> MallocPolicy {
        self.policy
    }
}

/// Where a slot stands. Kept in the pipeline, never in the [`Slot`] guard, so that forgetting
/// a guard (or a panic anywhere) cannot skip the step that proves its work done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No task of the typed API uses the slot's buffers or events.
    Free,
    /// Frame `n` was submitted completely: its `done` event is recorded after its last task.
    InFlight(u64),
    /// Something was issued that nothing proves done yet (a submission that failed or
    /// panicked half-way, or a completion whose reset failed): both streams must be
    /// synchronised before the slot's buffers are touched again.
    Unsettled,
}

/// The error of a frame whose simulated kernel's function panicked (the panic itself went to
/// the drop-error handler when it happened).
#[cold]
#[inline(never)]
fn kernel_panicked(frame: u64) -> Error {
    Error::CallbackPanicked {
        count: 1,
        first: format!("the simulated kernel of frame {frame} panicked: its output is incomplete")
            .into(),
    }
}

/// A double-buffered (or deeper) inference loop: host-to-device copy, kernel and
/// device-to-host copy for each frame, on two streams joined by events, with every buffer
/// and event allocated once, at creation.
///
/// `S` says where the frames start: [`Tensors`] (the default, described here) or
/// [`Jpegs`], whose frames are JPEG files decoded and resized by the media engine before the
/// kernel ([`JpegPipeline`]).
///
/// Each slot owns four buffers (host input, device input, device output, host output) and two
/// events. [`next_slot`](Self::next_slot) hands out the oldest slot once its previous frame
/// is **proven done** (its completion event synchronised, M3): only then can the host write
/// its input or read its output, through the [`Slot`] guard. [`Slot::submit`] consumes the
/// guard and issues the frame:
///
/// ```text
///  compute:  H2D(host_in → dev_in) ─ kernel(dev_in → dev_out) ─ record(ready)
///  download:                              wait(ready) ─ reset(ready) ─ D2H(dev_out → host_out) ─ record(done)
///  host:     next_slot(): synchronize(done), reset(done)  ─► input_mut() / output()
/// ```
///
/// While `download` copies frame *n* back, `compute` already uploads and runs frame *n + 1*:
/// nothing drains between frames. Every event of a slot is created once and reused (E4, E10:
/// `ready` is reset by the stream that waits on it, `done` once the host has seen it
/// complete), so the steady state creates nothing and allocates nothing.
///
/// # States of a slot
///
/// | state | allows | leaves by |
/// |---|---|---|
/// | free (in [`Slot`]) | `input_mut`, `output`, `submit` | `submit` → in flight |
/// | in flight | nothing from the host | `next_slot` / `wait_all`: its `done` event synchronised → free |
/// | unsettled (a submission failed half-way) | nothing from the host | `next_slot` / `wait_all`: both streams synchronised → free |
///
/// What does not compile: writing the input or reading the output of a submitted frame (the
/// guard is consumed, M1), holding two slots at once or destroying the pipeline while a guard
/// lives (the guard borrows the pipeline mutably, M2).
///
/// **Leak-safe.** The state of every slot lives in the pipeline, not in the guard: a
/// forgotten [`Slot`] changes nothing, and a submission that fails, panics or is cut short
/// leaves its slot *unsettled*, so that both streams are synchronised before its buffers are
/// handed out again. Forgetting the pipeline itself leaks its buffers, events and streams:
/// nothing is ever freed or handed out while a task uses it (M2). A pipeline cannot outlive
/// its context, and a forgotten one keeps it alive (D3: `Error::LiveChildren`).
///
/// `Send`: it can be moved into a [`std::thread::spawn`]ed thread when its context is
/// `'static` (see [`Acl::shared`](crate::Acl::shared)); every call binds the context (D6). A
/// [`JpegPipeline`] moved with frames in flight waits for them at its first submission from
/// the new thread (DV4).
///
/// ```no_run
/// # use ascend_typestate::{Acl, PipelineConfig};
/// # fn infer(x: f32) -> f32 { x * 2.0 }
/// # let acl = Acl::init()?;
/// # let device = acl.set_device(0)?.into_default_context()?;
/// let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(1024, 1024))?;
/// for frame in 0..1000 {
///     let mut slot = pipeline.next_slot()?;               // its previous frame is done
///     if let Some((n, output)) = slot.output() {          // frame `n`, complete
///         assert_eq!(n + 2, frame);
///         let _ = output;
///     }
///     slot.input_mut().fill(frame as f32);               // the host writes the input
///     slot.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, infer))?;
/// }
/// pipeline.wait_all()?;                                    // the last frames
/// for (n, output) in pipeline.outputs() { let _ = (n, output); }
/// pipeline.destroy()?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
pub struct Pipeline<'ctx, I: Pod, O: Pod, S: FrameInput<I> = Tensors> {
    ctx: &'ctx Context<'ctx>,
    /// The streams, slots and jobs are released by hand (`release`), in that order's reverse,
    /// only once both streams were seen done; else they are leaked (M2, E9).
    compute: ManuallyDrop<Stream<'ctx>>,
    download: ManuallyDrop<Stream<'ctx>>,
    /// Released by hand: only once both streams were seen done, else leaked (M2, E9).
    slots: ManuallyDrop<Box<[Resources<'ctx, I, O, S>]>>,
    /// What the slots' input stages share (a media channel); released with the slots.
    shared: ManuallyDrop<S::Shared<'ctx>>,
    /// One [`KernelJob`] per slot (`slots.len()` of them), freed with the slots.
    jobs: NonNull<KernelJob<I, O>>,
    /// The slot `next_slot` hands out: the oldest.
    next: usize,
    /// Frames submitted so far: the next frame's number.
    submitted: u64,
    config: PipelineConfig,
}

// SAFETY: the streams, buffers and events are handles any thread may use once their context
// is current there, which every call ensures (D6); `jobs` is owned memory written only by
// the thread holding `&mut self`, and read by a kernel only between its launch and the
// completion the host waits for before writing it again (M3).
// The shared input resources (a media channel) are `Send` and used only through `&mut self`.
unsafe impl<I: Pod, O: Pod, S: FrameInput<I>> Send for Pipeline<'_, I, O, S> {}

impl<'ctx> Context<'ctx> {
    /// Creates a [`Pipeline`] in this context: two streams, and for each slot two events, two
    /// device and two page-locked host buffers (all zeroed). Everything the loop uses is
    /// created here; on failure, what was created is released.
    pub fn create_pipeline<I: Pod, O: Pod>(
        &self,
        config: PipelineConfig,
    ) -> Result<Pipeline<'_, I, O>> {
        Pipeline::create(self, config, (), |ctx| {
            Ok((
                ctx.alloc_host::<I>(config.input_len)?,
                ctx.alloc::<I>(config.input_len, config.policy)?,
            ))
        })
    }
}

impl<'ctx, I: Pod, O: Pod, S: FrameInput<I>> Pipeline<'ctx, I, O, S> {
    /// Creates the streams, then each slot with its input resources from `input`.
    fn create(
        ctx: &'ctx Context<'ctx>,
        config: PipelineConfig,
        shared: S::Shared<'ctx>,
        mut input: impl FnMut(&'ctx Context<'ctx>) -> Result<S::Slot<'ctx>>,
    ) -> Result<Self> {
        if config.slots == 0 || config.slots > MAX_PIPELINE_SLOTS {
            return Err(Error::InvalidArgument(
                "a pipeline has 1 to MAX_PIPELINE_SLOTS slots",
            ));
        }
        ctx.bind()?;
        let compute = ctx.create_stream()?;
        let download = ctx.create_stream()?;
        let mut slots = Vec::with_capacity(config.slots);
        for _ in 0..config.slots {
            slots.push(Resources {
                input: input(ctx)?,
                dev_out: ctx.alloc::<O>(config.output_len, config.policy)?,
                host_out: ctx.alloc_host::<O>(config.output_len)?,
                ready: PipelineEvent::create(ctx)?,
                done: PipelineEvent::create(ctx)?,
                phase: Phase::Free,
                output: None,
                model: RefCell::new(None),
            });
        }
        let jobs: Box<[KernelJob<I, O>]> = (0..config.slots)
            .map(|_| KernelJob {
                input: std::ptr::null(),
                output: std::ptr::null_mut(),
                len: 0,
                f: |_| O::zeroed(),
                panicked: false,
            })
            .collect();
        let jobs = NonNull::from(Box::leak(jobs)).cast::<KernelJob<I, O>>();
        Ok(Pipeline {
            ctx,
            compute: ManuallyDrop::new(compute),
            download: ManuallyDrop::new(download),
            slots: ManuallyDrop::new(slots.into_boxed_slice()),
            shared: ManuallyDrop::new(shared),
            jobs,
            next: 0,
            submitted: 0,
            config,
        })
    }

    /// Slot `index`'s kernel job, `index < slots.len()` (the caller looked the slot up).
    #[inline(always)]
    fn job(&self, index: usize) -> *mut KernelJob<I, O> {
        // `wrapping_add` keeps this safe; an index past the jobs is never dereferenced.
        self.jobs.as_ptr().wrapping_add(index)
    }

    /// The context the pipeline was created in.
    pub fn context(&self) -> &'ctx Context<'ctx> {
        self.ctx
    }

    /// The shape it was created with.
    pub fn config(&self) -> PipelineConfig {
        self.config
    }

    /// Frames submitted so far (the next frame's number).
    pub fn submitted(&self) -> u64 {
        self.submitted
    }

    /// The oldest slot, once its previous frame is proven done: `aclrtSynchronizeEvent` on the
    /// slot's completion event, then `aclrtResetEvent` so that it can be recorded again (E10).
    /// A slot left unsettled by a failed submission is settled first (both streams
    /// synchronised). On error the slot stays where it was, and the next call tries again.
    ///
    /// A failure of the slot's frame on the device is returned here: a task error captured
    /// by its completion event (P3: a kernel fault or timeout, a failed copy, on either
    /// stream), or a panic of its simulated kernel's function. That frame's output is then
    /// not available ([`Slot::output`] is `None`), and the slot is free again once settled
    /// (the next call). Frames already in flight behind it may report the same error: they
    /// are dropped too rather than handed out unproven.
    #[inline]
    pub fn next_slot(&mut self) -> Result<Slot<'_, 'ctx, I, O, S>> {
        if !self.ctx.is_bound() {
            self.ctx.bind()?;
        }
        let index = self.next;
        self.make_free(index)?;
        Ok(Slot {
            pipeline: self,
            index,
        })
    }

    /// Brings slot `index` to *free*, proving its work done.
    #[inline(always)]
    fn make_free(&mut self, index: usize) -> Result<()> {
        let Some(slot) = self.slots.get(index) else {
            return Err(Error::InvalidArgument("no such pipeline slot"));
        };
        match slot.phase {
            Phase::Free => Ok(()),
            Phase::InFlight(frame) => self.complete(index, frame),
            Phase::Unsettled => self.settle(index),
        }
    }

    /// Slot `index` holds frame `frame`, submitted completely: wait for its `done` event (M3),
    /// then reset it (E10: its record is complete).
    #[inline(always)]
    fn complete(&mut self, index: usize, frame: u64) -> Result<()> {
        let api = self.ctx.api();
        let download = self.download.as_raw();
        let job = self.job(index);
        let Some(slot) = self.slots.get_mut(index) else {
            return Err(Error::InvalidArgument("no such pipeline slot"));
        };
        // SAFETY: the event is live (owned by the slot), recorded after the frame's last task.
        if let Err(error) = unsafe { api.synchronize_event(slot.done.raw) } {
            // A task of the frame failed (P3), or the wait did: nothing is proven done.
            slot.phase = Phase::Unsettled;
            return Err(error.into());
        }
        // The frame is done: so is its model execution (MD7).
        if let Some(datasets) = slot.model.get_mut() {
            datasets.finish();
        }
        // The frame is done; its output is complete unless its simulated kernel panicked.
        // SAFETY: the slot's job (the slot exists); the kernel that may write the flag ran
        // before `done` completed (synchronised above), and no reference to it exists.
        let panicked = unsafe { (*job).panicked };
        if !panicked {
            slot.output = Some(frame);
        }
        // SAFETY: both handles are live, the context is current (bound by the caller), and the
        // event's record is complete (synchronised above), so it cannot set the flag again
        // after this reset (E10). No wait refers to it.
        match unsafe { api.reset_event(slot.done.raw, download) } {
            Ok(()) => {
                slot.done.set = false;
                slot.phase = Phase::Free;
                if panicked {
                    return Err(kernel_panicked(frame));
                }
                Ok(())
            }
            Err(error) => {
                slot.phase = Phase::Unsettled;
                Err(error.into())
            }
        }
    }

    /// Slot `index` may have work nothing proves done: synchronise both streams (each until
    /// the runtime reports success: an asynchronous error is reported once), then reset any
    /// event whose flag may be set, and wait for those resets.
    #[cold]
    #[inline(never)]
    fn settle(&mut self, index: usize) -> Result<()> {
        self.compute
            .settle("Pipeline (a failed frame's compute stream)")?;
        self.download
            .settle("Pipeline (a failed frame's download stream)")?;
        let api = self.ctx.api();
        let download = self.download.as_raw();
        let Some(slot) = self.slots.get_mut(index) else {
            return Err(Error::InvalidArgument("no such pipeline slot"));
        };
        // Both streams are done: so is any model execution of the slot (MD7).
        if let Some(datasets) = slot.model.get_mut() {
            datasets.finish();
        }
        let mut reset_any = false;
        for event in [&mut slot.ready, &mut slot.done] {
            if event.set {
                // SAFETY: both handles are live, the context current; both streams are done,
                // so the event's record is complete and every wait on it has passed (E4, E10).
                unsafe { api.reset_event(event.raw, download)? };
                event.set = false;
                reset_any = true;
            }
        }
        if reset_any {
            // `ready` is recorded next on the other stream: its reset must be done first.
            self.download
                .settle("Pipeline (the resets of a failed frame)")?;
        }
        if let Some(slot) = self.slots.get_mut(index) {
            slot.phase = Phase::Free;
        }
        Ok(())
    }

    /// Before a frame is issued from another thread than the last one, for an input stage
    /// that serves one thread at a time (DV4): every frame in flight proven done, then the
    /// thread recorded. On error nothing changes (the frame is not issued).
    #[cold]
    #[inline(never)]
    fn change_issuing_thread(&mut self) -> Result<()> {
        self.wait_all()?;
        S::adopt_thread(&mut self.shared);
        Ok(())
    }

    /// Waits for every frame in flight (M3), oldest first; afterwards every slot is free and
    /// [`outputs`](Self::outputs) lists their results. Stops at the first error (the slots
    /// after it stay in flight; call again).
    pub fn wait_all(&mut self) -> Result<()> {
        self.ctx.bind()?;
        let count = self.slots.len();
        for step in 0..count {
            self.make_free((self.next + step) % count)?;
        }
        Ok(())
    }

    /// The output of the last completed frame of each free slot, oldest first, as `(frame,
    /// output)`. Slots in flight are skipped: call [`wait_all`](Self::wait_all) first to see
    /// the last frames.
    ///
    /// A slot holds one frame's output, so this is at most one frame per slot: the last
    /// ones. Every earlier frame's output is read when its slot comes round again, through
    /// [`Slot::output`] after [`next_slot`](Self::next_slot), before the slot's next
    /// submission overwrites it (the loop in the type's docs reads every frame that way).
    pub fn outputs(&self) -> impl Iterator<Item = (u64, &[O])> + '_ {
        let mut done: Vec<(u64, &[O])> = self
            .slots
            .iter()
            .filter(|slot| slot.phase == Phase::Free)
            .filter_map(|slot| slot.output.map(|frame| (frame, &slot.host_out[..])))
            .collect();
        done.sort_by_key(|(frame, _)| *frame);
        done.into_iter()
    }
}

impl<I: Pod, O: Pod, S: FrameInput<I>> std::fmt::Debug for Pipeline<'_, I, O, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("config", &self.config)
            .field("submitted", &self.submitted)
            .field("next", &self.next)
            .finish()
    }
}
