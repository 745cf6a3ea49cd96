//! Where a pipeline's frames start ([`FrameInput`]): host tensors copied to the device
//! ([`Tensors`]), or JPEG files the media engine decodes and resizes ([`Jpegs`](super::Jpegs)).

use std::ffi::c_void;

use bytemuck::Pod;

use crate::sys::bindings::aclrtStream;
use crate::sys::loader::Api;
use crate::typed::error::{Error, Result};
use crate::typed::memory::{DeviceBuffer, HostBuffer, Location, Memory, MemoryMut, memcpy_kind};

pub(super) mod sealed {
    use super::*;

    /// The input stage of a pipeline's frames: what each slot owns for it, what the pipeline
    /// shares, and the tasks that bring a frame's input to the device before its kernel.
    pub trait Input<I: Pod>: Sized + 'static {
        /// A slot's resources for its input.
        type Slot<'ctx>;
        /// What every slot's input stage shares (a media channel).
        type Shared<'ctx>;

        /// Whether a frame can be submitted from the slot (checked before anything is
        /// issued, and before the slot is marked unsettled).
        fn check(slot: &Self::Slot<'_>) -> Result<()>;

        /// Whether the current thread may issue a frame while frames issued before are in
        /// flight: `false` when the stage's shared resources serve one thread at a time and
        /// another thread issued the last frame (DV4), which the pipeline then proves done
        /// first.
        fn on_issuing_thread(shared: &Self::Shared<'_>) -> bool;

        /// Records the current thread as the one issuing frames (none is in flight).
        fn adopt_thread(shared: &mut Self::Shared<'_>);

        /// Issues the input stage of a frame on `compute`.
        ///
        /// # Safety
        /// The slot is free (its previous frame proven done, M3) and becomes unsettled before
        /// the call: nothing touches its buffers until the frame is proven done. The context
        /// is current.
        unsafe fn issue<'ctx>(
            api: &Api,
            shared: &Self::Shared<'ctx>,
            slot: &mut Self::Slot<'ctx>,
            compute: aclrtStream,
        ) -> Result<()>;

        /// The device input the kernel reads: a pointer and a number of `I` elements.
        fn device_input(slot: &Self::Slot<'_>) -> (*const c_void, usize);

        /// Releases a slot's input resources (no task uses them), returning the errors.
        fn release_slot(slot: Self::Slot<'_>) -> Vec<Error>;

        /// Releases the shared resources (no task uses them), returning the error.
        fn release_shared(shared: Self::Shared<'_>) -> Result<()>;
    }
}

/// Where a [`Pipeline`](super::Pipeline)'s frames start: [`Tensors`] (the default) or
/// [`Jpegs`](super::Jpegs). Sealed: implemented by those two only.
pub trait FrameInput<I: Pod>: sealed::Input<I> {}

/// Frames that start as host tensors: the slot's host input (page-locked,
/// [`Slot::input_mut`](super::Slot::input_mut)) is copied to a device buffer of the same
/// length (`aclrtMemcpyAsync`), which the kernel reads. The default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Tensors;

impl<I: Pod> FrameInput<I> for Tensors {}

impl<I: Pod> sealed::Input<I> for Tensors {
    /// The host input and the device input, of the same length.
    type Slot<'ctx> = (HostBuffer<'ctx, I>, DeviceBuffer<'ctx, I>);
    type Shared<'ctx> = ();

    #[inline(always)]
    fn check(_: &Self::Slot<'_>) -> Result<()> {
        Ok(())
    }

    #[inline(always)]
    fn on_issuing_thread((): &()) -> bool {
        // Copies and kernels may be issued from any thread (S1): nothing to wait for.
        true
    }

    fn adopt_thread(_: &mut ()) {}

    #[inline(always)]
    unsafe fn issue<'ctx>(
        api: &Api,
        _: &(),
        (host_in, dev_in): &mut Self::Slot<'ctx>,
        compute: aclrtStream,
    ) -> Result<()> {
        let bytes = std::mem::size_of_val::<[I]>(host_in);
        // SAFETY: the buffers are the slot's own, of `bytes` bytes each (allocated with the
        // same length), at the locations the kind names; nothing touches them before the
        // frame is proven done (the caller's contract: M1, M3); the context is current.
        unsafe {
            api.memcpy_async(
                dev_in.as_mut_ptr(),
                bytes,
                host_in.as_ptr(),
                bytes,
                memcpy_kind(Location::Host, Location::Device),
                compute,
            )?
        };
        Ok(())
    }

    #[inline(always)]
    fn device_input((_, dev_in): &Self::Slot<'_>) -> (*const c_void, usize) {
        (dev_in.as_ptr(), dev_in.len())
    }

    fn release_slot((host_in, dev_in): Self::Slot<'_>) -> Vec<Error> {
        [host_in.free(), dev_in.free()]
            .into_iter()
            .filter_map(Result::err)
            .collect()
    }

    fn release_shared((): ()) -> Result<()> {
        Ok(())
    }
}
