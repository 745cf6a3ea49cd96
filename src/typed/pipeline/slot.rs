//! A pipeline's free slot ([`Slot`]: the host's access to its buffers, and `submit`) and
//! what a submitted frame's kernel gets ([`Launch`]: the compute stream, the device buffers,
//! model executions; M1, M3, E2-E4, MD6-MD13).

use std::cell::RefCell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr::NonNull;
use std::sync::Arc;

use bytemuck::Pod;

use super::release::{KernelJob, Resources};
use super::{FrameInput, Phase, Pipeline, Tensors};
use crate::sys::bindings::aclrtStream;
use crate::typed::dtype::Element;
use crate::typed::error::{Error, Result};
use crate::typed::handle::report_drop_error;
use crate::typed::memory::memcpy_kind;
use crate::typed::memory::{Location, MallocPolicy, Memory, MemoryMut};
use crate::typed::model::{Dynamic, Model, ModelKind, SlotDatasets, Static};
use crate::typed::stream::Stream;

/// A free slot of a [`Pipeline`]: its previous frame is proven done, so the host may write
/// its input and read its output. [`submit`](Self::submit) consumes it.
///
/// Borrows the pipeline mutably: one slot at a time, and the pipeline cannot be destroyed
/// while it lives. Dropping (or forgetting) it without submitting leaves the slot free:
/// [`Pipeline::next_slot`] hands it out again.
pub struct Slot<'p, 'ctx, I: Pod, O: Pod, S: FrameInput<I> = Tensors> {
    pub(super) pipeline: &'p mut Pipeline<'ctx, I, O, S>,
    pub(super) index: usize,
}

impl<'p, 'ctx, I: Pod, O: Pod> Slot<'p, 'ctx, I, O, Tensors> {
    /// The slot's host input buffer (page-locked), for the next frame. It holds what was
    /// written for the slot's previous frame until it is overwritten.
    #[inline]
    pub fn input_mut(&mut self) -> &mut [I] {
        match self.pipeline.slots.get_mut(self.index) {
            Some(slot) => &mut slot.input.0[..],
            None => &mut [],
        }
    }
}

impl<'p, 'ctx, I: Pod, O: Pod, S: FrameInput<I>> Slot<'p, 'ctx, I, O, S> {
    #[inline(always)]
    fn resources(&self) -> Option<&Resources<'ctx, I, O, S>> {
        self.pipeline.slots.get(self.index)
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
        if !S::on_issuing_thread(&pipeline.shared) {
            // Another thread issued the frames in flight (DV4): prove them done first.
            pipeline.change_issuing_thread()?;
        }
        let frame = pipeline.submitted;
        let api = pipeline.ctx.api();
        let (compute, download) = (pipeline.compute.as_raw(), pipeline.download.as_raw());
        let job = pipeline.job(index);
        let Some(slot) = pipeline.slots.get_mut(index) else {
            return Err(Error::InvalidArgument("no such pipeline slot"));
        };
        // Refused before anything is issued: the slot stays free.
        S::check(&slot.input)?;
        // Before anything is issued: whatever happens from here on, nothing is handed out
        // again before both streams are seen done (a panic included).
        slot.phase = Phase::Unsettled;
        slot.output = None;
        // SAFETY: the slot's job; no kernel of the slot is pending (the slot was free), and no
        // reference to the job exists.
        unsafe { (*job).panicked = false };
        let out_bytes = slot.host_out.len() * size_of::<O>();
        let (input, input_len) = S::device_input(&slot.input);
        let launch = Launch {
            stream: &pipeline.compute,
            input,
            output: slot.dev_out.as_mut_ptr(),
            input_len,
            output_len: slot.dev_out.len(),
            job: NonNull::new(job).unwrap_or(pipeline.jobs),
            launched: std::cell::Cell::new(false),
            model: &slot.model,
            policy: pipeline.config.policy,
            _elements: PhantomData,
        };
        // SAFETY: the slot was free (its previous frame proven done) and is unsettled: nothing
        // touches its buffers before this frame is proven done (M1, M3). The context is
        // current (bound above).
        unsafe { S::issue(api, &pipeline.shared, &mut slot.input, compute)? };
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

impl<I: Pod, O: Pod, S: FrameInput<I>> std::fmt::Debug for Slot<'_, '_, I, O, S> {
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
