//! A pipeline's resources and their release (M2, E4, E9, E10): each slot's buffers, events
//! and model datasets, the kernel jobs, and `destroy`/`Drop`, which release them only once
//! both streams were seen done.

use std::cell::RefCell;
use std::mem::ManuallyDrop;

use bytemuck::Pod;

use super::{FrameInput, Phase, Pipeline};
use crate::sys::bindings::{ACL_EVENT_SYNC, aclrtEvent};
use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::handle::{
    first_error_reporting_others, release_on_drop, report_drop_error, retry_cleanup,
};
use crate::typed::memory::{DeviceBuffer, HostBuffer};
use crate::typed::model::SlotDatasets;

/// One slot's resources.
pub(super) struct Resources<'ctx, I: Pod, O: Pod, S: FrameInput<I>> {
    /// The device input the kernel reads, and what brings the frame there (S1 before it).
    pub(super) input: S::Slot<'ctx>,
    pub(super) dev_out: DeviceBuffer<'ctx, O>,
    pub(super) host_out: HostBuffer<'ctx, O>,
    /// Recorded on `compute` after the kernel, waited on and reset by `download` (E2-E4).
    pub(super) ready: PipelineEvent<'ctx>,
    /// Recorded on `download` after the output copy; the host synchronises it, then resets it
    /// on `download` before it is recorded again (E2, E10).
    pub(super) done: PipelineEvent<'ctx>,
    pub(super) phase: Phase,
    /// The frame whose output `host_out` holds, complete.
    pub(super) output: Option<u64>,
    /// The datasets of the model the slot executes ([`Launch::execute`]), if any.
    pub(super) model: RefCell<Option<SlotDatasets<'ctx>>>,
}

/// An `ACL_EVENT_SYNC` event owned by a pipeline slot. Destroyed only once the pipeline has
/// seen both streams done (E9); `set` says whether its flag may be set (recorded, not yet
/// reset), so that it is reset before it is recorded again (E4, E10).
pub(super) struct PipelineEvent<'ctx> {
    pub(super) raw: aclrtEvent,
    ctx: &'ctx Context<'ctx>,
    pub(super) set: bool,
}

impl<'ctx> PipelineEvent<'ctx> {
    pub(super) fn create(ctx: &'ctx Context<'ctx>) -> Result<Self> {
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

impl<I: Pod, O: Pod, S: FrameInput<I>> Pipeline<'_, I, O, S> {
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
                    Err(error) if self.ctx.stopped_by(&error) => {
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
        // SAFETY: as for the slots: no task uses it, and it is taken once.
        let shared = unsafe { ManuallyDrop::take(&mut self.shared) };
        if let Err(error) = S::release_shared(shared) {
            errors.push(error);
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
        first_error_reporting_others("Pipeline (a further error)", errors)
    }
}

impl<'ctx, I: Pod, O: Pod, S: FrameInput<I>> Resources<'ctx, I, O, S> {
    /// Releases the slot's events and buffers (no task uses them: the caller saw both
    /// streams done); returns their errors (a resource whose release failed is dropped, and
    /// its `Drop` tries again).
    fn release(self, ctx: &Context<'_>) -> Vec<Error> {
        let mut errors = Vec::new();
        let Resources {
            input,
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
        errors.extend(S::release_slot(input));
        if let Err(error) = dev_out.free() {
            errors.push(error);
        }
        if let Err(error) = host_out.free() {
            errors.push(error);
        }
        errors
    }
}

impl<I: Pod, O: Pod, S: FrameInput<I>> Drop for Pipeline<'_, I, O, S> {
    fn drop(&mut self) {
        // A second try is left to each resource's own `Drop`.
        report_drop_error("Pipeline", self.release());
    }
}
