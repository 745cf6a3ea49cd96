//! Pipelines (M1, M2, M3, E2-E5, E10): frames in flight on two streams, each slot with buffers
//! and events of its own, handed back to the host only once its work is proven done.

use std::cell::RefCell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, size_of};
use std::ptr::NonNull;
use std::sync::Arc;

use bytemuck::Pod;

use crate::sys::bindings::{ACL_EVENT_SYNC, aclrtEvent, aclrtStream};
use crate::typed::context::Context;
use crate::typed::dtype::Element;
use crate::typed::error::{Error, Result};
use crate::typed::handle::{release_on_drop, report_drop_error, retry_cleanup};
use crate::typed::memory::memcpy_kind;
use crate::typed::memory::{DeviceBuffer, HostBuffer, Location, MallocPolicy, Memory, MemoryMut};
use crate::typed::model::{Dynamic, Model, ModelKind, SlotDatasets, Static};
use crate::typed::stream::Stream;

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

    /// The elements of one frame's input.
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

/// One slot's resources.
struct Resources<'ctx, I: Pod, O: Pod> {
    host_in: HostBuffer<'ctx, I>,
    dev_in: DeviceBuffer<'ctx, I>,
    dev_out: DeviceBuffer<'ctx, O>,
    host_out: HostBuffer<'ctx, O>,
    /// Recorded on `compute` after the kernel, waited on and reset by `download` (E2-E4).
    ready: PipelineEvent<'ctx>,
    /// Recorded on `download` after the output copy; the host synchronises it, then resets it
    /// on `download` before it is recorded again (E2, E10).
    done: PipelineEvent<'ctx>,
    phase: Phase,
    /// The frame whose output `host_out` holds, complete.
    output: Option<u64>,
    /// The datasets of the model the slot executes ([`Launch::execute`]), if any.
    model: RefCell<Option<SlotDatasets<'ctx>>>,
}

/// An `ACL_EVENT_SYNC` event owned by a pipeline slot. Destroyed only once the pipeline has
/// seen both streams done (E9); `set` says whether its flag may be set (recorded, not yet
/// reset), so that it is reset before it is recorded again (E4, E10).
struct PipelineEvent<'ctx> {
    raw: aclrtEvent,
    ctx: &'ctx Context<'ctx>,
    set: bool,
}

impl<'ctx> PipelineEvent<'ctx> {
    fn create(ctx: &'ctx Context<'ctx>) -> Result<Self> {
        // SAFETY: the context is current (bound by the caller); destroyed by `Drop`.
        let raw = unsafe { ctx.api().create_event_with_flag(ACL_EVENT_SYNC)? };
        ctx.adopt();
        Ok(PipelineEvent {
            raw,
            ctx,
            set: false,
        })
    }

    fn release(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: dropped only after both streams were seen done (the pipeline's release), or
        // never used (creation failed half-way): no task refers to it (E9).
        unsafe { self.ctx.api().destroy_event(self.raw)? };
        self.ctx.orphan();
        Ok(())
    }
}

impl Drop for PipelineEvent<'_> {
    fn drop(&mut self) {
        if self.set {
            // Never destroyed unreset (E4): leaked, still counted in its context (D3).
            return;
        }
        release_on_drop("Pipeline (an event of a slot)", || self.release());
    }
}

/// The state of a simulated kernel, one per slot, in an allocation of its own that no Rust
/// reference covers while a kernel may read it (see [`Launch::simulated_map`]).
pub(crate) struct KernelJob<I, O> {
    pub(crate) input: *const I,
    pub(crate) output: *mut O,
    pub(crate) len: usize,
    pub(crate) f: fn(I) -> O,
    /// Set by the kernel if `f` panicked: the frame's output is incomplete.
    pub(crate) panicked: bool,
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
/// `'static` (see [`Acl::shared`](crate::Acl::shared)); every call binds the context (D6).
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
pub struct Pipeline<'ctx, I: Pod, O: Pod> {
    ctx: &'ctx Context<'ctx>,
    /// The streams, slots and jobs are released by hand (`release`), in that order's reverse,
    /// only once both streams were seen done; else they are leaked (M2, E9).
    compute: ManuallyDrop<Stream<'ctx>>,
    download: ManuallyDrop<Stream<'ctx>>,
    /// Released by hand: only once both streams were seen done, else leaked (M2, E9).
    slots: ManuallyDrop<Box<[Resources<'ctx, I, O>]>>,
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
unsafe impl<I: Pod, O: Pod> Send for Pipeline<'_, I, O> {}

impl<'ctx> Context<'ctx> {
    /// Creates a [`Pipeline`] in this context: two streams, and for each slot two events, two
    /// device and two page-locked host buffers (all zeroed). Everything the loop uses is
    /// created here; on failure, what was created is released.
    pub fn create_pipeline<I: Pod, O: Pod>(
        &self,
        config: PipelineConfig,
    ) -> Result<Pipeline<'_, I, O>> {
        Pipeline::create(self, config)
    }
}

impl<'ctx, I: Pod, O: Pod> Pipeline<'ctx, I, O> {
    fn create(ctx: &'ctx Context<'ctx>, config: PipelineConfig) -> Result<Self> {
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
                host_in: ctx.alloc_host::<I>(config.input_len)?,
                dev_in: ctx.alloc::<I>(config.input_len, config.policy)?,
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
    pub fn next_slot(&mut self) -> Result<Slot<'_, 'ctx, I, O>> {
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

    /// Synchronises both streams (S2, each until the runtime reports success: an asynchronous
    /// error is reported once), then releases every slot's events and buffers, then the
    /// streams. Returns the first error; the others go to the
    /// [drop-error handler](crate::set_drop_error_handler).
    ///
    /// If a stream cannot be seen done, nothing is released: the pipeline's buffers, events
    /// and streams are leaked, as a stream's `Drop` leaks a stream it cannot synchronise,
    /// because a task may still use them (M2, E9). `Drop` does the same and reports.
    pub fn destroy(self) -> Result<()> {
        let mut this = ManuallyDrop::new(self);
        this.release()
    }

    /// Resets every event whose flag may be set (a submission cut short between the record
    /// of `ready` and its reset, a completion whose reset failed) before it is destroyed
    /// (E4: a waited event is reset first), each tried again while the runtime fails it, and waits for the resets
    /// (E9). Both streams are done (the caller settled them). Returns the errors of resets
    /// that kept failing: those events stay set, and are leaked rather than destroyed.
    #[cold]
    #[inline(never)]
    fn reset_set_events(&mut self) -> Result<Vec<Error>> {
        let api = self.ctx.api();
        let download = self.download.as_raw();
        let mut errors = Vec::new();
        let mut issued = false;
        for slot in self.slots.iter_mut() {
            for event in [&mut slot.ready, &mut slot.done] {
                if !event.set {
                    continue;
                }
                // SAFETY: both handles live, the context current (bound by the caller); both
                // streams are done, so the event's record is complete and every wait on it
                // has passed (E4, E10).
                let reset = retry_cleanup("Pipeline (an event's reset)", || unsafe {
                    api.reset_event(event.raw, download)
                });
                match reset {
                    Ok(()) => {
                        event.set = false;
                        issued = true;
                    }
                    // After a stop (S6) no reset can ever be issued, and the runtime allows
                    // destroying the event unreset (both streams are done).
                    Err(error) if error.is_stop() => {
                        event.set = false;
                        errors.push(error);
                    }
                    Err(error) => errors.push(error),
                }
            }
        }
        if issued {
            // Destroyed only once no task refers to them (E9): the resets done.
            self.download
                .settle("Pipeline (the resets of its events)")?;
        }
        Ok(errors)
    }

    /// Everything `destroy` does, once; the fields are not used afterwards.
    fn release(&mut self) -> Result<()> {
        let quiesced = self
            .compute
            .settle("Pipeline (its compute stream)")
            .and_then(|()| self.download.settle("Pipeline (its download stream)"));
        // If a stream cannot be seen done, everything is leaked, never released under a task
        // that may use it (M2, E9): the streams, slots and jobs are never dropped
        // (`ManuallyDrop`, a raw pointer).
        quiesced?;
        // Both streams are done: so is every model execution of every slot (MD7), whatever
        // happens to the events below (a deferred unload may run now).
        for slot in self.slots.iter_mut() {
            if let Some(datasets) = slot.model.get_mut() {
                datasets.finish();
            }
        }
        let mut errors = self.reset_set_events()?;
        // SAFETY: both streams are done (settled above), so no task uses a slot's buffers or
        // events (M2, E9); the slots are taken once (the value is not used afterwards).
        let slots = unsafe { ManuallyDrop::take(&mut self.slots) };
        for slot in slots {
            errors.extend(slot.release(self.ctx));
        }
        // SAFETY: allocated in `create` as a boxed slice of `slots` jobs; no kernel can read
        // them any more (both streams are done), and they are freed once.
        drop(unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.jobs.as_ptr(),
                self.config.slots,
            ))
        });
        // SAFETY: each stream is taken once; the value is not used afterwards.
        let compute = unsafe { ManuallyDrop::take(&mut self.compute) };
        // SAFETY: as above.
        let download = unsafe { ManuallyDrop::take(&mut self.download) };
        let streams = [compute, download];
        for stream in streams {
            // On failure its `Drop` tries again while the runtime fails, and reports.
            if let Err(error) = stream.destroy() {
                errors.push(error);
            }
        }
        let mut errors = errors.into_iter();
        let first = errors.next();
        for error in errors {
            report_drop_error("Pipeline (a further error)", Err(error));
        }
        first.map_or(Ok(()), Err)
    }
}

impl<'ctx, I: Pod, O: Pod> Resources<'ctx, I, O> {
    /// Releases the slot's events and buffers (no task uses them: the caller saw both
    /// streams done); returns their errors (a resource whose release failed is dropped, and
    /// its `Drop` tries again).
    fn release(self, ctx: &Context<'_>) -> Vec<Error> {
        let mut errors = Vec::new();
        let Resources {
            host_in,
            dev_in,
            dev_out,
            host_out,
            ready,
            done,
            model,
            ..
        } = self;
        // Before the buffers they describe (MD5); no execution uses them (MD6).
        if let Some(mut datasets) = model.into_inner() {
            datasets.finish();
            errors.extend(datasets.release(ctx));
        }
        for event in [ready, done] {
            if event.set {
                // Its reset failed (the error is the caller's): never destroyed while it may
                // be waited without one (E4); leaked, still counted in its context (D3).
                std::mem::forget(event);
                continue;
            }
            let event = ManuallyDrop::new(event);
            if let Err(error) = event.release() {
                errors.push(error);
                drop(ManuallyDrop::into_inner(event));
            }
        }
        if let Err(error) = host_in.free() {
            errors.push(error);
        }
        if let Err(error) = dev_in.free() {
            errors.push(error);
        }
        if let Err(error) = dev_out.free() {
            errors.push(error);
        }
        if let Err(error) = host_out.free() {
            errors.push(error);
        }
        errors
    }
}

impl<I: Pod, O: Pod> Drop for Pipeline<'_, I, O> {
    fn drop(&mut self) {
        // A second try is left to each resource's own `Drop`.
        report_drop_error("Pipeline", self.release());
    }
}

/// A free slot of a [`Pipeline`]: its previous frame is proven done, so the host may write
/// its input and read its output. [`submit`](Self::submit) consumes it.
///
/// Borrows the pipeline mutably: one slot at a time, and the pipeline cannot be destroyed
/// while it lives. Dropping (or forgetting) it without submitting leaves the slot free:
/// [`Pipeline::next_slot`] hands it out again.
pub struct Slot<'p, 'ctx, I: Pod, O: Pod> {
    pipeline: &'p mut Pipeline<'ctx, I, O>,
    index: usize,
}

impl<'p, 'ctx, I: Pod, O: Pod> Slot<'p, 'ctx, I, O> {
    #[inline(always)]
    fn resources(&self) -> Option<&Resources<'ctx, I, O>> {
        self.pipeline.slots.get(self.index)
    }

    /// The slot's host input buffer (page-locked), for the next frame. It holds what was
    /// written for the slot's previous frame until it is overwritten.
    #[inline]
    pub fn input_mut(&mut self) -> &mut [I] {
        match self.pipeline.slots.get_mut(self.index) {
            Some(slot) => &mut slot.host_in[..],
            None => &mut [],
        }
    }

    /// The output of the slot's previous frame, complete, with its frame number; `None` if
    /// the slot has not completed a frame yet (or its last one failed).
    #[inline]
    pub fn output(&self) -> Option<(u64, &[O])> {
        let slot = self.resources()?;
        slot.output.map(|frame| (frame, &slot.host_out[..]))
    }

    /// The number the next submitted frame gets.
    pub fn frame(&self) -> u64 {
        self.pipeline.submitted
    }

    /// Issues the frame (M1, M3): the input copy and `kernel` on the compute stream, the
    /// hand-off (record, wait, reset: E2-E4) and the output copy on the download stream, and
    /// the completion record. Returns the frame's number; its output is seen when the slot
    /// comes round again ([`Slot::output`]) or after [`Pipeline::wait_all`].
    ///
    /// `kernel` issues the frame's computation on [`Launch::stream`], reading the device input
    /// and writing the device output ([`Launch::simulated_map`] on the simulator; a model
    /// execution or a kernel of your own through the raw layer).
    ///
    /// On error (a call failed, or `kernel` returned one) the slot is left *unsettled*: the
    /// next [`Pipeline::next_slot`] synchronises both streams before handing it out again, and
    /// the frame number is not used. A panic in `kernel` leaves it the same way.
    #[inline]
    pub fn submit<K>(self, kernel: K) -> Result<u64>
    where
        K: for<'l> FnOnce(&Launch<'l, 'ctx, I, O>) -> Result<()>,
    {
        let Slot { pipeline, index } = self;
        // The body that borrowed the guard may have made another context current (D6).
        if !pipeline.ctx.is_bound() {
            pipeline.ctx.bind()?;
        }
        let frame = pipeline.submitted;
        let api = pipeline.ctx.api();
        let (compute, download) = (pipeline.compute.as_raw(), pipeline.download.as_raw());
        let job = pipeline.job(index);
        let Some(slot) = pipeline.slots.get_mut(index) else {
            return Err(Error::InvalidArgument("no such pipeline slot"));
        };
        // Before anything is issued: whatever happens from here on, nothing is handed out
        // again before both streams are seen done (a panic included).
        slot.phase = Phase::Unsettled;
        slot.output = None;
        // SAFETY: the slot's job; no kernel of the slot is pending (the slot was free), and no
        // reference to the job exists.
        unsafe { (*job).panicked = false };
        let (in_bytes, out_bytes) = (
            slot.host_in.len() * size_of::<I>(),
            slot.host_out.len() * size_of::<O>(),
        );
        let launch = Launch {
            stream: &pipeline.compute,
            input: slot.dev_in.as_ptr(),
            output: slot.dev_out.as_mut_ptr(),
            input_len: slot.dev_in.len(),
            output_len: slot.dev_out.len(),
            job: NonNull::new(job).unwrap_or(pipeline.jobs),
            launched: std::cell::Cell::new(false),
            model: &slot.model,
            policy: pipeline.config.policy,
            _elements: PhantomData,
        };
        // SAFETY: the buffers are the slot's own, of the sizes given, at the locations the kind
        // names; the slot is free (its previous frame proven done), and nothing touches them
        // before this frame is (the slot is unsettled, then in flight: M1, M3). The context
        // is current (bound by `next_slot`).
        unsafe {
            api.memcpy_async(
                slot.dev_in.as_mut_ptr(),
                in_bytes,
                slot.host_in.as_ptr(),
                in_bytes,
                memcpy_kind(Location::Host, Location::Device),
                compute,
            )?
        };
        kernel(&launch)?;
        // As may `kernel` (D6).
        if !pipeline.ctx.is_bound() {
            pipeline.ctx.bind()?;
        }
        // SAFETY: live handles of this context; `ready` was reset after its last wait (or
        // never recorded), so this record starts a new cycle (E1, E2).
        unsafe { api.record_event(slot.ready.raw, compute)? };
        slot.ready.set = true;
        // SAFETY: the event was recorded just above (E1); `download` waits for the kernel (E3).
        unsafe { api.stream_wait_event(download, slot.ready.raw)? };
        // SAFETY: the waiting stream resets it after its wait (E4); no other stream waits on
        // it, and its next record (the slot's next frame) comes after the host saw this
        // frame's `done`, recorded after this reset on the same stream (E5).
        unsafe { api.reset_event(slot.ready.raw, download)? };
        slot.ready.set = false;
        // SAFETY: as for the input copy; `download` runs after the kernel wrote `dev_out`.
        unsafe {
            api.memcpy_async(
                slot.host_out.as_mut_ptr(),
                out_bytes,
                slot.dev_out.as_ptr(),
                out_bytes,
                memcpy_kind(Location::Device, Location::Host),
                download,
            )?
        };
        // SAFETY: live handles; `done` was reset after the host saw its last record (E10).
        unsafe { api.record_event(slot.done.raw, download)? };
        slot.done.set = true;
        slot.phase = Phase::InFlight(frame);
        pipeline.submitted = frame.wrapping_add(1);
        pipeline.next = if index + 1 == pipeline.slots.len() {
            0
        } else {
            index + 1
        };
        Ok(frame)
    }
}

/// What a [`Slot::submit`] kernel gets: the compute stream and the slot's device buffers,
/// whose input copy is issued before it on that stream (S1) and whose output copy comes
/// after it.
pub struct Launch<'l, 'ctx, I: Pod, O: Pod> {
    stream: &'l Stream<'ctx>,
    input: *const c_void,
    output: *mut c_void,
    input_len: usize,
    output_len: usize,
    /// The slot's kernel job (see [`KernelJob`]).
    pub(crate) job: NonNull<KernelJob<I, O>>,
    /// A simulated kernel was launched: the job is in use until the frame is done.
    pub(crate) launched: std::cell::Cell<bool>,
    /// The slot's model datasets.
    model: &'l RefCell<Option<SlotDatasets<'ctx>>>,
    policy: MallocPolicy,
    _elements: Elements<I, O>,
}

/// The element types of a [`Launch`], without owning any.
type Elements<I, O> = PhantomData<(fn() -> I, fn() -> O)>;

impl<'l, 'ctx, I: Pod, O: Pod> Launch<'l, 'ctx, I, O> {
    /// The compute stream: issue the frame's kernel here (its input copy is already issued
    /// on it, its output copy waits for what is issued here).
    pub fn stream(&self) -> &'l Stream<'ctx> {
        self.stream
    }

    /// The device input buffer of the slot, for a kernel launched through the raw layer.
    pub fn input_ptr(&self) -> *const c_void {
        self.input
    }

    /// The device output buffer of the slot, for a kernel launched through the raw layer.
    pub fn output_ptr(&self) -> *mut c_void {
        self.output
    }

    /// The number of input elements.
    pub fn input_len(&self) -> usize {
        self.input_len
    }

    /// The number of output elements.
    pub fn output_len(&self) -> usize {
        self.output_len
    }
}

/// Model executions: only in a pipeline whose element types are [`Element`]s, which are
/// checked against the model's (MD13).
impl<'l, 'ctx, I: Element, O: Element> Launch<'l, 'ctx, I, O> {
    /// `aclmdlExecuteAsync` of `model` on the compute stream (MD6), from the slot's device
    /// input to its device output. The model's data inputs lie one after the other in the
    /// slot's input, in the model's order, and its outputs likewise in the slot's output: a
    /// model with N inputs and M outputs runs when all its inputs are of element type `I`
    /// and all its outputs of `O` ([`Error::ModelTypeMismatch`], MD13: a `float16` model is
    /// fed through [`F16`](crate::F16), an `int32` output read through `i32`) and their sizes
    /// from the description add up to the slot's buffers ([`Error::ModelSizeMismatch`],
    /// MD10; split [`Slot::input_mut`] with the sizes of [`Model::inputs`]). A model whose
    /// tensors have mixed types runs in an async scope instead
    /// ([`AsyncScope::execute`](crate::AsyncScope::execute)). Both are checked at the
    /// slot's first execution of the model, before anything of it is issued; a refused model
    /// leaves the slot as usable as any failed frame does. The model must be of the
    /// pipeline's context (MD1). One execution per frame.
    ///
    /// The execution is *pending* until the pipeline proves the frame done (the slot's next
    /// [`Pipeline::next_slot`], [`Pipeline::wait_all`], or its end): meanwhile the model cannot
    /// be unloaded (MD7) nor executed on another stream (MD8) ([`Error::ModelInUse`]), and the
    /// slot's buffers and datasets are untouched (MD6). The slot's datasets are created on its
    /// first execution of a model, so the steady state creates nothing.
    pub fn execute(&self, model: &mut Model<'_, Static>) -> Result<()> {
        self.execute_model(model, None)
    }

    /// As [`execute`](Self::execute) for a dynamic-batch model: `aclmdlSetDynamicBatchSize`
    /// on the slot's input dataset, then the execution (MD11: before each one). `batch` must
    /// be one of the model's [gears](Model::gears) ([`Error::NotAGear`]).
    pub fn execute_batch(&self, model: &mut Model<'_, Dynamic>, batch: u64) -> Result<()> {
        model.check_gear(batch)?;
        self.execute_model(model, Some(batch))
    }

    fn execute_model<K: ModelKind>(
        &self,
        model: &mut Model<'_, K>,
        batch: Option<u64>,
    ) -> Result<()> {
        let ctx = self.stream.context();
        if !std::ptr::addr_eq(model.context(), ctx) {
            return Err(ctx.mismatch(model.context(), "a model"));
        }
        // The kernel closure may have made another context current (D6).
        if !ctx.is_bound() {
            ctx.bind()?;
        }
        let mut slot_model = self
            .model
            .try_borrow_mut()
            .map_err(|_| Error::InvalidArgument("a slot's model is in use"))?;
        let reuse = match &*slot_model {
            Some(datasets) if datasets.pending => {
                return Err(Error::InvalidArgument(
                    "one model execution per pipeline frame",
                ));
            }
            Some(datasets) => Arc::ptr_eq(&datasets.shared, model.shared()),
            None => false,
        };
        if !reuse {
            if let Some(previous) = slot_model.take() {
                // Not pending (checked above): the slot's last frame is proven done (MD6).
                for error in previous.release(ctx) {
                    report_drop_error("Pipeline (a slot's previous model datasets)", Err(error));
                }
            }
            *slot_model = Some(SlotDatasets::create::<I, O, K>(
                ctx,
                model,
                (self.input.cast_mut(), self.input_len * size_of::<I>()),
                (self.output, self.output_len * size_of::<O>()),
                self.policy,
            )?);
        }
        let Some(datasets) = slot_model.as_mut() else {
            return Err(Error::InvalidArgument(
                "a slot's model datasets are missing",
            ));
        };
        let api = ctx.api();
        // Counted before anything is issued: the slot is unsettled, and only the pipeline's
        // proof that the frame is done uncounts it (MD7, MD8).
        model.shared().begin(self.raw_stream())?;
        datasets.pending = true;
        if let (Some(batch), Some((index, _))) = (batch, &datasets.batch) {
            // SAFETY: the slot's input dataset, used by no pending execution (the slot's last
            // frame is proven done); a gear of the model (checked), at its batch input (MD11).
            unsafe {
                api.model_set_dynamic_batch(model.id(), datasets.input_set.as_ptr(), *index, batch)?
            };
        }
        // SAFETY: the model is loaded in the stream's context (MD1, checked above); the
        // datasets describe the slot's device buffers of the model's sizes (MD9, MD10),
        // which nothing touches until the frame is proven done (M3, MD6); the model cannot be
        // unloaded while the execution counts as pending (MD7) nor run on another stream
        // (MD8, `begin`).
        unsafe {
            api.model_execute_async(
                model.id(),
                datasets.input_set.as_ptr(),
                datasets.output_set.as_ptr(),
                self.raw_stream(),
            )?
        };
        Ok(())
    }
}

impl<'l, 'ctx, I: Pod, O: Pod> Launch<'l, 'ctx, I, O> {
    pub(crate) fn api(&self) -> &'static crate::sys::loader::Api {
        self.stream.context().api()
    }

    pub(crate) fn raw_stream(&self) -> aclrtStream {
        self.stream.as_raw()
    }
}

impl<I: Pod, O: Pod> std::fmt::Debug for Pipeline<'_, I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("config", &self.config)
            .field("submitted", &self.submitted)
            .field("next", &self.next)
            .finish()
    }
}

impl<I: Pod, O: Pod> std::fmt::Debug for Slot<'_, '_, I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("index", &self.index)
            .field("frame", &self.pipeline.submitted)
            .finish()
    }
}

impl<I: Pod, O: Pod> std::fmt::Debug for Launch<'_, '_, I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("stream", &self.stream)
            .field("input_len", &self.input_len)
            .field("output_len", &self.output_len)
            .finish()
    }
}
