//! Media memory (`acldvppMalloc`, DV5) and what lives in it: JPEG input ([`JpegBuffer`],
//! DV7) and YUV pictures with their descriptions ([`MediaFrame`], DV8-DV10).

use std::cell::Cell;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use super::MediaV1;
use super::picture::{FrameLayout, JpegHeader};
use crate::result::dvpp::PicField;
use crate::sys::bindings::acldvppPicDesc;
use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::handle::release_on_drop;
use crate::typed::memory::{Location, Memory, MemoryMut, Pending, PendingDevice, Written, sealed};

/// Media memory from `acldvppMalloc` (DV5), `len` bytes, freed by `acldvppFree`. The
/// engine's tasks take only media memory, as this type (a [`DeviceBuffer`](crate::DeviceBuffer)
/// from `aclrtMalloc` does not compile there, DV5); copies read and write it as device
/// memory, and a model takes it as an input without a copy (DV11).
///
/// # States
///
/// ```text
///  Context::alloc_media() ──► Idle ──(borrowed by an async scope's tasks)──► Idle
///                              └── Drop ──► freed (acldvppFree)
/// ```
///
/// Freed only by its `Drop`, which a borrowing scope's pending task makes impossible (M2,
/// DV10). `Send + Sync`, as a [`DeviceBuffer`](crate::DeviceBuffer).
pub struct MediaBuffer<'ctx> {
    ptr: NonNull<c_void>,
    len: usize,
    ctx: &'ctx Context<'ctx>,
}

// SAFETY: media memory is not tied to a thread; the context is `Sync` and binds per call.
unsafe impl Send for MediaBuffer<'_> {}
// SAFETY: `&MediaBuffer` only lets copies and tasks read it.
unsafe impl Sync for MediaBuffer<'_> {}

impl<'dev> Context<'dev> {
    /// `acldvppMalloc` of `len` bytes (DV5), zeroed (`aclrtMemset`). A zero length is
    /// [`Error::InvalidArgument`].
    pub fn alloc_media<'a>(
        &'a self,
        media: &'a MediaV1<'_>,
        len: usize,
    ) -> Result<MediaBuffer<'a>> {
        let _ = media;
        if len == 0 || len > isize::MAX as usize {
            return Err(Error::InvalidArgument(
                "a media buffer of 0 or over isize::MAX bytes",
            ));
        }
        self.bind()?;
        // SAFETY: freed by the buffer's `Drop` with `acldvppFree` (DV5).
        let raw = unsafe { self.api().dvpp_malloc(len)? };
        let ptr = NonNull::new(raw).ok_or(Error::InvalidArgument(
            "acldvppMalloc returned a null pointer",
        ))?;
        self.adopt();
        let buffer = MediaBuffer {
            ptr,
            len,
            ctx: self,
        };
        // SAFETY: the allocation holds at least `len` bytes; no task uses it yet.
        unsafe { self.api().memset(raw, len, 0, len)? };
        Ok(buffer)
    }

    /// A [`JpegBuffer`]: media memory for JPEG files of up to `capacity` bytes.
    pub fn alloc_jpeg<'a>(
        &'a self,
        media: &'a MediaV1<'_>,
        capacity: usize,
    ) -> Result<JpegBuffer<'a>> {
        Ok(JpegBuffer {
            buffer: self.alloc_media(media, capacity)?,
            loaded: None,
        })
    }

    /// A [`MediaFrame`]: `capacity` bytes of media memory and two picture descriptions
    /// (`acldvppCreatePicDesc`, DV8), for pictures of up to `capacity` bytes
    /// ([`FrameLayout::byte_len`]).
    pub fn alloc_frame<'a>(
        &'a self,
        media: &'a MediaV1<'_>,
        capacity: usize,
    ) -> Result<MediaFrame<'a>> {
        let buffer = self.alloc_media(media, capacity)?;
        let size = u32::try_from(capacity)
            .map_err(|_| Error::PictureLayout("a picture of 4 GiB or more (DV8)"))?;
        let output = PicDesc::create(self, buffer.ptr.as_ptr(), size)?;
        let input = PicDesc::create(self, buffer.ptr.as_ptr(), size)?;
        Ok(MediaFrame {
            output,
            input,
            input_layout: Cell::new(None),
            layout: Cell::new(None),
            written: Written::new(),
            buffer,
        })
    }
}

impl<'ctx> MediaBuffer<'ctx> {
    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never empty (allocation requires a byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The raw pointer, for calls this crate does not wrap.
    pub fn as_raw(&self) -> *mut c_void {
        self.ptr.as_ptr()
    }
    pub(crate) fn context(&self) -> &'ctx Context<'ctx> {
        self.ctx
    }
}

impl MediaBuffer<'_> {
    /// `acldvppFree`, once; uncounted in the context when freed.
    fn release(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: from `acldvppMalloc` (DV5); no task uses it (tasks borrow the buffer for
        // their scope, which synchronised them before the borrow ended, DV10; a pipeline
        // frees its buffers once both its streams were seen done, M2); the value is consumed
        // or being dropped, so this is the only free.
        unsafe { self.ctx.api().dvpp_free(self.ptr.as_ptr())? };
        self.ctx.orphan();
        Ok(())
    }

    /// Frees the memory; on failure the error is returned and the buffer goes to its `Drop`
    /// fallback (tried again while the runtime fails, kept and reported if it still cannot
    /// be freed).
    pub(crate) fn free(self) -> Result<()> {
        let this = ManuallyDrop::new(self);
        let freed = this.release();
        if freed.is_err() {
            drop(ManuallyDrop::into_inner(this));
        }
        freed
    }
}

impl Drop for MediaBuffer<'_> {
    fn drop(&mut self) {
        release_on_drop("MediaBuffer", || self.release());
    }
}

impl std::fmt::Debug for MediaBuffer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaBuffer")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl sealed::Sealed for MediaBuffer<'_> {}
// Contract (sealed trait): media memory is device memory valid for `len` bytes while borrowed.
impl Memory<u8> for MediaBuffer<'_> {
    const LOCATION: Location = Location::Device;
    fn as_ptr(&self) -> *const c_void {
        self.ptr.as_ptr().cast_const()
    }
    fn len(&self) -> usize {
        self.len
    }
    fn device_id(&self) -> Option<i32> {
        Some(self.ctx.device_id())
    }
}
// Contract (sealed trait): exclusively borrowed media memory may be written for its length.
impl MemoryMut<u8> for MediaBuffer<'_> {
    type Written<'scope> = PendingDevice<'scope, u8>;
    fn written(pending: Pending<'_, u8>, _: sealed::Token) -> PendingDevice<'_, u8> {
        PendingDevice(pending)
    }
    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.ptr.as_ptr()
    }
}

/// Media memory holding one JPEG file whose header was checked (DV7): the only input a
/// decode takes. [`load`](Self::load) refuses what JPEGD does not decode before copying.
///
/// # States
///
/// ```text
///  Context::alloc_jpeg() ──► Empty ──load(ok)──► Loaded(header) ──(decode: &'scope)──► Loaded
///                              ▲                    │
///                              └── load(error) ◄────┘   (Drop: acldvppFree)
/// ```
///
/// A decode of an `Empty` buffer is [`Error::InvalidArgument`] before any call; `load` takes
/// `&mut self`, so it cannot overwrite a file a pending decode reads (DV6).
#[derive(Debug)]
pub struct JpegBuffer<'ctx> {
    buffer: MediaBuffer<'ctx>,
    /// The header and the file's length, once loaded.
    loaded: Option<(JpegHeader, usize)>,
}

impl<'ctx> JpegBuffer<'ctx> {
    /// Checks `jpeg`'s header ([`JpegHeader::parse`], DV7: [`Error::UnsupportedJpeg`] before
    /// any call), asks the runtime its sizes (`acldvppJpegGetImageInfoV2`, which applies an
    /// EXIF orientation), then copies the file into the buffer (`aclrtMemcpy`).
    /// [`Error::InvalidArgument`] for a file longer than the buffer. `&mut self`: no task
    /// reads the buffer meanwhile (DV6).
    pub fn load(&mut self, jpeg: &[u8]) -> Result<JpegHeader> {
        self.loaded = None;
        let header = JpegHeader::parse(jpeg)?;
        if jpeg.len() > self.buffer.len || u32::try_from(jpeg.len()).is_err() {
            return Err(Error::InvalidArgument("the JPEG is longer than its buffer"));
        }
        let ctx = self.buffer.ctx;
        ctx.bind()?;
        // SAFETY: a query of host bytes (DV7).
        let info = unsafe { ctx.api().dvpp_jpeg_info(jpeg)? };
        let header = header.oriented(info.width, info.height)?;
        ctx.copy(&mut self.buffer, jpeg)?;
        self.loaded = Some((header, jpeg.len()));
        Ok(header)
    }

    /// The header of the JPEG loaded, if any.
    pub fn header(&self) -> Option<JpegHeader> {
        self.loaded.map(|(header, _)| header)
    }

    /// The buffer's size in bytes.
    pub fn capacity(&self) -> usize {
        self.buffer.len
    }

    pub(crate) fn loaded(&self) -> Option<(JpegHeader, usize)> {
        self.loaded
    }

    pub(crate) fn buffer(&self) -> &MediaBuffer<'ctx> {
        &self.buffer
    }
}

/// A picture description (`acldvppPicDesc`), counted in its context until destroyed.
pub(crate) struct PicDesc<'ctx> {
    raw: *mut acldvppPicDesc,
    ctx: &'ctx Context<'ctx>,
}

impl<'ctx> PicDesc<'ctx> {
    /// A description of `size` bytes of media memory at `data`.
    fn create(ctx: &'ctx Context<'ctx>, data: *mut c_void, size: u32) -> Result<PicDesc<'ctx>> {
        ctx.bind()?;
        // SAFETY: destroyed by its `Drop`, once no task uses it (DV10).
        let raw = unsafe { ctx.api().dvpp_create_pic_desc()? };
        ctx.adopt();
        let desc = PicDesc { raw, ctx };
        // SAFETY: a live description no task uses.
        unsafe { ctx.api().dvpp_set_pic_desc_data(raw, data)? };
        // SAFETY: as above.
        unsafe { ctx.api().dvpp_set_pic_desc_u32(raw, PicField::Size, size)? };
        Ok(desc)
    }

    /// Sets the format, sizes and strides of `layout` (DV8, DV9).
    ///
    /// # Safety
    /// No pending task uses the description (DV6).
    pub(crate) unsafe fn describe(&self, layout: &FrameLayout) -> Result<()> {
        let api = self.ctx.api();
        // SAFETY: the caller's contract: no pending task uses the description (DV6).
        unsafe { api.dvpp_set_pic_desc_format(self.raw, layout.format().raw())? };
        for (field, value) in [
            (PicField::Width, layout.width()),
            (PicField::Height, layout.height()),
            (PicField::WidthStride, layout.width_stride()),
            (PicField::HeightStride, layout.height_stride()),
        ] {
            // SAFETY: as above.
            unsafe { api.dvpp_set_pic_desc_u32(self.raw, field, value)? };
        }
        Ok(())
    }

    pub(crate) fn raw(&self) -> *mut acldvppPicDesc {
        self.raw
    }
}

impl PicDesc<'_> {
    /// `acldvppDestroyPicDesc`, once; uncounted in the context when destroyed.
    fn release(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: no task uses it (its frame is borrowed by the scope of every task that
        // does, which synchronised them, DV10; a pipeline destroys its frames once both its
        // streams were seen done, M2); the value is consumed or being dropped: destroyed once.
        unsafe { self.ctx.api().dvpp_destroy_pic_desc(self.raw)? };
        self.ctx.orphan();
        Ok(())
    }

    /// Destroys the description; on failure the error is returned and the `Drop` fallback
    /// tries again.
    fn destroy(self) -> Result<()> {
        let this = ManuallyDrop::new(self);
        let destroyed = this.release();
        if destroyed.is_err() {
            drop(ManuallyDrop::into_inner(this));
        }
        destroyed
    }
}

impl Drop for PicDesc<'_> {
    fn drop(&mut self) {
        release_on_drop("MediaFrame (a picture description)", || self.release());
    }
}

/// A YUV 4:2:0 picture in media memory, and its descriptions (DV8, DV9): the output of a
/// decode or a resize, the input of a resize, a model's input (DV11), the source of copies.
///
/// # States
///
/// ```text
///  Context::alloc_frame() ──► Empty (no layout)
///        decode / resize output (&'scope mut) ──► Written(layout): readable once its scope ends
///        its scope's synchronisation fails (a task failed) ──► Empty (no layout)
///        resize input / model input / copy source (&'scope or PendingFrame) ──► unchanged
///  Drop ──► descriptions destroyed, then the memory freed (DV10)
/// ```
///
/// Its [`layout`](Self::layout) is what the last task that wrote it produced: set by the
/// typed layer from the checked input, never read back from a pending task (DV6). Reading
/// it as [`Memory`] (a copy, a model input) covers exactly the picture's bytes
/// ([`FrameLayout::byte_len`]). `Send`, not `Sync`.
pub struct MediaFrame<'ctx> {
    /// The description the tasks writing this frame fill (decode, resize output).
    output: PicDesc<'ctx>,
    /// The description of this frame as a resize input: never one a decode writes (DV6).
    input: PicDesc<'ctx>,
    /// What `input` describes (set only when no task uses it: see `resize`).
    input_layout: Cell<Option<FrameLayout>>,
    /// The layout the last task that wrote the frame produced; valid while `written` is.
    layout: Cell<Option<FrameLayout>>,
    /// Cleared, with the scope's other outputs, when the scope that wrote the frame fails
    /// its synchronisation (DV6).
    written: Written,
    // Last: freed after the descriptions (DV10).
    buffer: MediaBuffer<'ctx>,
}

// SAFETY: the descriptions are host objects of the runtime usable from any thread; the
// `Cell` makes the frame `!Sync`, so one thread at a time sets them.
unsafe impl Send for MediaFrame<'_> {}

impl<'ctx> MediaFrame<'ctx> {
    /// The picture's layout, once a task wrote it; `None` again when a synchronisation
    /// failed in its context while the scope whose task wrote it ran (the scope's own, or
    /// another that may have reported that task's failure: a task failing when it runs is
    /// reported once, DV6; conservatively, any failed synchronisation of the context). A frame
    /// resized in an inner scope from a [`PendingFrame`](super::PendingFrame) of an outer
    /// one keeps its layout when the outer task fails: the outer scope returns that error.
    pub fn layout(&self) -> Option<FrameLayout> {
        if self.written.is_valid() {
            self.layout.get()
        } else {
            None
        }
    }
    /// The media memory's size in bytes.
    pub fn capacity(&self) -> usize {
        self.buffer.len
    }
    pub(crate) fn context(&self) -> &'ctx Context<'ctx> {
        self.buffer.ctx
    }
    pub(crate) fn output_desc(&self) -> &PicDesc<'ctx> {
        &self.output
    }
    /// The output layout, checked against the capacity (DV8, DV9).
    pub(crate) fn check_capacity(&self, layout: &FrameLayout) -> Result<()> {
        if layout.byte_len() > self.buffer.len {
            return Err(Error::PictureLayout(
                "the picture is larger than its frame's media memory (DV8, DV9)",
            ));
        }
        Ok(())
    }
    /// Sets the layout a task writes, with the frame borrowed exclusively by the scope of
    /// that task (shared only once its task is issued, to link it in the scope's list).
    pub(crate) fn set_layout(&self, layout: Option<FrameLayout>) {
        self.layout.set(layout);
        self.written.validate();
    }
    pub(crate) fn written(&self) -> &Written {
        &self.written
    }
    /// The description of this frame as a resize input, set to its layout if it describes
    /// another one.
    ///
    /// # Safety
    /// No pending task uses `input` with another layout: the layout changes only through
    /// `&mut self`, which no scope with a pending task reading `input` can give.
    #[inline]
    pub(crate) unsafe fn input_desc(&self, layout: &FrameLayout) -> Result<*mut acldvppPicDesc> {
        if self.input_layout.get() == Some(*layout) {
            return Ok(self.input.raw());
        }
        // SAFETY: the caller's contract.
        unsafe { self.describe_input(layout) }
    }

    /// [`input_desc`](Self::input_desc) for another layout than the one described.
    ///
    /// # Safety
    /// As for `input_desc`.
    #[cold]
    #[inline(never)]
    unsafe fn describe_input(&self, layout: &FrameLayout) -> Result<*mut acldvppPicDesc> {
        self.input_layout.set(None);
        // SAFETY: the caller's contract: no pending task uses it with another layout, and
        // none with this one (it would have set `input_layout`).
        unsafe { self.input.describe(layout)? };
        let size = u32::try_from(layout.byte_len())
            .map_err(|_| Error::PictureLayout("a picture of 4 GiB or more (DV9)"))?;
        // SAFETY: as above.
        unsafe {
            self.context()
                .api()
                .dvpp_set_pic_desc_u32(self.input.raw(), PicField::Size, size)?
        };
        self.input_layout.set(Some(*layout));
        Ok(self.input.raw())
    }
}

impl MediaFrame<'_> {
    /// Destroys the descriptions, then frees the memory (DV10), returning the errors; what
    /// failed goes to its `Drop` fallback, which tries again.
    pub(crate) fn release(self) -> Vec<Error> {
        let MediaFrame {
            output,
            input,
            buffer,
            ..
        } = self;
        [output.destroy(), input.destroy(), buffer.free()]
            .into_iter()
            .filter_map(Result::err)
            .collect()
    }
}

impl std::fmt::Debug for MediaFrame<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaFrame")
            .field("buffer", &self.buffer)
            .field("layout", &self.layout())
            .finish()
    }
}

impl sealed::Sealed for MediaFrame<'_> {}
// Contract (sealed trait): the picture's bytes, inside the frame's media memory (checked when
// the layout was set), device memory valid while borrowed.
impl Memory<u8> for MediaFrame<'_> {
    const LOCATION: Location = Location::Device;
    fn as_ptr(&self) -> *const c_void {
        self.buffer.ptr.as_ptr().cast_const()
    }
    fn len(&self) -> usize {
        self.layout().map_or(0, |l| l.byte_len())
    }
    fn device_id(&self) -> Option<i32> {
        Some(self.buffer.ctx.device_id())
    }
}
