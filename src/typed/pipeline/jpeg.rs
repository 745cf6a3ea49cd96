//! JPEG pipelines ([`Jpegs`]): each frame starts as a JPEG file that the media engine decodes
//! (JPEGD) and resizes (VPC) on the compute stream into the picture the kernel reads, with
//! every buffer, description and the channel created once (DV3-DV11, M1, M3).

use std::ffi::c_void;

use super::input::sealed::Input;
use super::{FrameInput, Pipeline, PipelineConfig, Slot};
use crate::sys::bindings::aclrtStream;
use crate::sys::loader::Api;
use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::media::{
    FrameLayout, JPEG_SIDE, JpegHeader, JpegdVpc, MediaBuffer, MediaChannel, MediaFrame, MediaV1,
};
use crate::typed::memory::{Location, Memory, memcpy_kind};

/// Frames that start as JPEG files (DV7): [`Slot::load_jpeg`] copies the file into the
/// slot's media memory, and each frame decodes it (JPEGD, DV8) and resizes it (VPC, DV9)
/// into the picture its kernel reads (DV11), on the compute stream before the kernel (S1).
/// See [`JpegPipeline`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Jpegs;

/// A pipeline whose frames start as JPEG files and whose kernel reads the resized picture
/// (`u8`, [`JpegConfig::target`]), created by [`Context::create_jpeg_pipeline`].
///
/// Each slot owns a media buffer for the file, a decoded and a resized [`MediaFrame`] with
/// their descriptions, and the output buffers and events of every pipeline; the pipeline owns
/// one media channel (JPEGD and VPC), used on its compute stream only and from one thread at
/// a time (DV4: a frame submitted from another thread than the last one first waits for the
/// frames in flight, as [`Pipeline::wait_all`] does, returning its error if one failed). A
/// frame:
///
/// ```text
///  host:     load_jpeg(file): header and sizes checked (DV7-DV9), file → media memory (aclrtMemcpy)
///  compute:  decode(JPEGD) ─ resize(VPC) ─ kernel(picture → dev_out) ─ record(ready)
///  download:                                wait(ready) ─ reset(ready) ─ D2H ─ record(done)
/// ```
///
/// The file is copied synchronously, as the official samples do, once the slot's previous
/// frame is proven done: whether the runtime reads a JPEG's header when its decode is
/// submitted, before an asynchronous copy on the stream would have run, is not documented
/// (DV7).
///
/// Everything is checked when the file is loaded, before any task: a file JPEGD does not
/// decode is [`Error::UnsupportedJpeg`], a picture larger than [`JpegConfig::max_picture`]
/// or one VPC does not read [`Error::PictureLayout`], a file longer than
/// [`PipelineConfig::input_len`] [`Error::InvalidArgument`]; a submission with no file loaded is
/// [`Error::InvalidArgument`] (the slot stays free). A file that fails to decode when its
/// task runs fails the frame like any task (P3): [`Pipeline::next_slot`] returns the error.
///
/// ```no_run
/// # use ascend_typestate::{Acl, FrameLayout, JpegConfig, PipelineConfig, PixelFormat};
/// # let jpegs: Vec<Vec<u8>> = Vec::new();
/// let acl = Acl::init()?;
/// let ctx = acl.set_device(0)?.into_default_context()?;
/// let media = acl.media_v1()?;
/// let mut model = ctx.load_model("resnet50_aipp.om")?;   // input: u8 224x224 NV12
/// let target = FrameLayout::resized(224, 224, PixelFormat::Nv12)?;
/// let mut pipeline = ctx.create_jpeg_pipeline::<f32>(
///     &media,
///     PipelineConfig::new(512 * 1024, 1000),               // file bytes, output elements
///     JpegConfig::new(target).max_picture(1920, 1080),
/// )?;
/// for jpeg in &jpegs {
///     let mut slot = pipeline.next_slot()?;                // its previous frame is done
///     if let Some((n, scores)) = slot.output() { let _ = (n, scores); }
///     slot.load_jpeg(jpeg)?;                               // checked before any task
///     slot.submit(|launch| launch.execute(&mut model))?;
/// }
/// pipeline.wait_all()?;
/// pipeline.destroy()?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
pub type JpegPipeline<'ctx, O> = Pipeline<'ctx, u8, O, Jpegs>;

/// The media stage of a [`JpegPipeline`]: the picture its kernel reads (the resize output)
/// and the largest picture a file may hold.
///
/// ```
/// use ascend_typestate::{FrameLayout, JpegConfig, PixelFormat};
/// let target = FrameLayout::resized(224, 224, PixelFormat::Nv12)?;
/// let config = JpegConfig::new(target).max_picture(4096, 2160);   // default 1920 x 1080
/// assert_eq!(config.max_picture_size(), (4096, 2160));
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JpegConfig {
    target: FrameLayout,
    max_width: u32,
    max_height: u32,
}

impl JpegConfig {
    /// Pictures resized to `target` (its format is also the decode's), from files of up to
    /// 1920 x 1080 pixels.
    pub const fn new(target: FrameLayout) -> JpegConfig {
        JpegConfig {
            target,
            max_width: 1920,
            max_height: 1080,
        }
    }

    /// The largest picture a file may hold, either way round (an EXIF orientation may
    /// swap width and height, DV7); sizes JPEGD does not decode (32 to 16384) are
    /// [`Error::PictureLayout`] at creation. The decoded frame of each slot is allocated for
    /// it.
    pub const fn max_picture(mut self, width: u32, height: u32) -> JpegConfig {
        self.max_width = width;
        self.max_height = height;
        self
    }

    /// The resize output: the picture the kernel reads.
    pub const fn target(&self) -> FrameLayout {
        self.target
    }

    /// The largest picture, as `(width, height)`.
    pub const fn max_picture_size(&self) -> (u32, u32) {
        (self.max_width, self.max_height)
    }

    /// The bytes of the largest decoded picture, either way round (DV8).
    fn decoded_capacity(&self) -> Result<usize> {
        if !JPEG_SIDE.contains(&self.max_width) || !JPEG_SIDE.contains(&self.max_height) {
            return Err(Error::PictureLayout(
                "JPEGD decodes pictures of 32 to 16384 pixels a side (DV7)",
            ));
        }
        let format = self.target.format();
        let (w, h) = (self.max_width, self.max_height);
        Ok(FrameLayout::decoded_from(w, h, format)
            .byte_len()
            .max(FrameLayout::decoded_from(h, w, format).byte_len()))
    }
}

/// A JPEG slot's media resources (not nameable outside the crate).
#[derive(Debug)]
pub struct JpegSlot<'ctx> {
    /// The file, in media memory (DV5), copied by `load_jpeg` while no task uses it.
    file: MediaBuffer<'ctx>,
    /// The decode's output, read by the resize through its own description (DV6).
    decoded: MediaFrame<'ctx>,
    /// The resize's output, described once with the target: the kernel's input (DV11).
    resized: MediaFrame<'ctx>,
    target: FrameLayout,
    /// The largest picture, either way round: `(width, height)`.
    max: (u32, u32),
    /// What the decode's output description was last given (`None`: not described, or a
    /// setter failed half-way).
    described: Option<FrameLayout>,
    /// The loaded file: the picture it decodes to, and its length.
    loaded: Option<(FrameLayout, u32)>,
}

impl<'ctx> JpegSlot<'ctx> {
    fn create(
        ctx: &'ctx Context<'ctx>,
        media: &'ctx MediaV1<'_>,
        file_bytes: usize,
        jpeg: &JpegConfig,
        decoded_bytes: usize,
    ) -> Result<JpegSlot<'ctx>> {
        let resized = ctx.alloc_frame(media, jpeg.target.byte_len())?;
        // SAFETY: a new frame: no task uses its description.
        unsafe { resized.output_desc().describe(&jpeg.target)? };
        Ok(JpegSlot {
            file: ctx.alloc_media(media, file_bytes)?,
            decoded: ctx.alloc_frame(media, decoded_bytes)?,
            resized,
            target: jpeg.target,
            max: jpeg.max_picture_size(),
            described: None,
            loaded: None,
        })
    }
}

/// What a JPEG pipeline's slots share: the channel, and the thread that issued the last
/// frame (DV4: a channel serves one thread at a time).
#[derive(Debug)]
pub struct JpegShared<'ctx> {
    channel: MediaChannel<'ctx, JpegdVpc>,
    /// The [`thread_number`] of the thread that issued the last frame (0: none yet).
    thread: u64,
}

/// A number of the calling thread, unique for the life of the process (never reused, unlike
/// the address of a thread-local; cheaper than `std::thread::current().id()`, which counts a
/// reference in and out): the thread that issued a JPEG pipeline's last frame (DV4). Not
/// shared state of the loom models: each thread reads its own.
#[inline]
fn thread_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    std::thread_local! {
        static NUMBER: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NUMBER.with(|number| match number.get() {
        0 => {
            let new = NEXT.fetch_add(1, Ordering::Relaxed);
            number.set(new);
            new
        }
        known => known,
    })
}

impl FrameInput<u8> for Jpegs {}

impl Input<u8> for Jpegs {
    type Slot<'ctx> = JpegSlot<'ctx>;
    type Shared<'ctx> = JpegShared<'ctx>;

    #[inline]
    fn check(slot: &JpegSlot<'_>) -> Result<()> {
        match slot.loaded {
            Some(_) => Ok(()),
            None => Err(Error::InvalidArgument(
                "no JPEG loaded in the pipeline slot (DV7)",
            )),
        }
    }

    #[inline]
    fn on_issuing_thread(shared: &JpegShared<'_>) -> bool {
        shared.thread == thread_number()
    }

    fn adopt_thread(shared: &mut JpegShared<'_>) {
        shared.thread = thread_number();
    }

    #[inline]
    unsafe fn issue<'ctx>(
        api: &Api,
        shared: &JpegShared<'ctx>,
        slot: &mut JpegSlot<'ctx>,
        compute: aclrtStream,
    ) -> Result<()> {
        let Some((decoded, len)) = slot.loaded else {
            return Err(Error::InvalidArgument(
                "no JPEG loaded in the pipeline slot (DV7)",
            ));
        };
        if slot.described != Some(decoded) {
            slot.described = None;
            // SAFETY: the slot's previous frame is proven done: no task uses the description.
            unsafe { slot.decoded.output_desc().describe(&decoded)? };
            slot.described = Some(decoded);
        }
        let (channel, config) = shared.channel.raw();
        // SAFETY: the channel has JPEGD and is used by this pipeline's compute stream only,
        // from one thread while its tasks are pending (DV3, DV4: the pipeline proves every
        // frame done before another thread issues one); the file is media memory holding
        // `len` bytes of a checked JPEG (DV5, DV7), copied before the submission;
        // the output description is of media memory of the size DV8 asks (checked when
        // loaded); nothing of them is touched before the frame is proven done (DV6, DV10).
        unsafe {
            api.dvpp_jpeg_decode_async(
                channel,
                slot.file.as_raw(),
                len,
                slot.decoded.output_desc().raw(),
                compute,
            )?
        };
        // SAFETY: no task of the slot is pending but this frame's decode, which writes the
        // other description (DV6); the layout is the decode's, checked for VPC when loaded.
        let input = unsafe { slot.decoded.input_desc(&decoded)? };
        // SAFETY: the channel has VPC and its configuration (DV3, DV9), used as above (DV4);
        // both descriptions are of media memory of the geometry DV9 asks (checked), the
        // input written by the decode before it on the same stream (S1); nothing of them is
        // touched before the frame is proven done (DV6, DV10).
        unsafe {
            api.dvpp_vpc_resize_async(
                channel,
                input,
                slot.resized.output_desc().raw(),
                config,
                compute,
            )?
        };
        Ok(())
    }

    #[inline(always)]
    fn device_input(slot: &JpegSlot<'_>) -> (*const c_void, usize) {
        (Memory::as_ptr(&slot.resized), slot.target.byte_len())
    }

    fn release_slot(slot: JpegSlot<'_>) -> Vec<Error> {
        // Each frame's descriptions before its memory (DV10); what fails is returned and
        // goes to its `Drop` fallback, which tries again.
        let JpegSlot {
            file,
            decoded,
            resized,
            ..
        } = slot;
        let mut errors = decoded.release();
        errors.extend(resized.release());
        errors.extend(file.free().err());
        errors
    }

    fn release_shared(shared: JpegShared<'_>) -> Result<()> {
        shared.channel.destroy()
    }
}

impl<'dev> Context<'dev> {
    /// Creates a [`JpegPipeline`]: the streams, output buffers and events of
    /// [`create_pipeline`](Self::create_pipeline), a media channel with JPEGD and VPC (DV3),
    /// and for each slot a media buffer for files of up to `config.input_len()` bytes, a
    /// decoded frame for [`JpegConfig::max_picture`] and a resized frame for
    /// [`JpegConfig::target`], the kernel's input (DV5, DV8, DV9). Everything the loop uses is created here; on
    /// failure, what was created is released.
    pub fn create_jpeg_pipeline<'a, O: bytemuck::Pod>(
        &'a self,
        media: &'a MediaV1<'_>,
        config: PipelineConfig,
        jpeg: JpegConfig,
    ) -> Result<JpegPipeline<'a, O>> {
        let decoded_bytes = jpeg.decoded_capacity()?;
        if config.input_len == 0 {
            return Err(Error::InvalidArgument("a JPEG pipeline's files of 0 bytes"));
        }
        self.bind()?;
        let shared = JpegShared {
            channel: self.create_media_channel::<JpegdVpc>(media)?,
            thread: 0,
        };
        Pipeline::create(self, config, shared, |ctx| {
            JpegSlot::create(ctx, media, config.input_len, &jpeg, decoded_bytes)
        })
    }
}

impl<'p, 'ctx, O: bytemuck::Pod> Slot<'p, 'ctx, u8, O, Jpegs> {
    /// Loads the JPEG file of the slot's next frame into its media memory (`aclrtMemcpy`: the
    /// slot's previous frame is proven done, so no task reads it, DV6), once checked before
    /// any task: its header ([`JpegHeader::parse`], DV7: [`Error::UnsupportedJpeg`]), its
    /// sizes as the runtime reads them (`acldvppJpegGetImageInfoV2`, which applies an EXIF
    /// orientation), the decoded picture against [`JpegConfig::max_picture`] and VPC's input
    /// range ([`Error::PictureLayout`], DV8, DV9), its length against
    /// [`PipelineConfig::input_len`] ([`Error::InvalidArgument`]). On error nothing is
    /// loaded (a submission is refused).
    pub fn load_jpeg(&mut self, jpeg: &[u8]) -> Result<JpegHeader> {
        let ctx = self.pipeline.ctx;
        let Some(slot) = self.pipeline.slots.get_mut(self.index) else {
            return Err(Error::InvalidArgument("no such pipeline slot"));
        };
        slot.input.loaded = None;
        let header = JpegHeader::parse(jpeg)?;
        // The error is built on failure only: built eagerly (`ok_or`), it was dropped on
        // every frame (a call of its drop glue).
        let Some(len) = u32::try_from(jpeg.len())
            .ok()
            .filter(|_| jpeg.len() <= slot.input.file.len())
        else {
            return Err(Error::InvalidArgument(
                "the JPEG is longer than the pipeline's input",
            ));
        };
        if !ctx.is_bound() {
            ctx.bind()?;
        }
        // SAFETY: a query of host bytes (DV7).
        let info = unsafe { ctx.api().dvpp_jpeg_info(jpeg)? };
        let header = header.oriented(info.width, info.height)?;
        let (width, height) = (header.width(), header.height());
        let (max_width, max_height) = slot.input.max;
        if !((width <= max_width && height <= max_height)
            || (width <= max_height && height <= max_width))
        {
            return Err(Error::PictureLayout(
                "the JPEG's picture is larger than the pipeline's max_picture (DV8)",
            ));
        }
        let decoded = FrameLayout::decoded(&header, slot.input.target.format());
        slot.input.decoded.check_capacity(&decoded)?;
        decoded.check_resize_input()?;
        let file = &mut slot.input.file;
        // SAFETY: `len` bytes of host memory into the slot's media memory, which holds at
        // least that many (checked above), at the locations the kind names; the slot is
        // free, so no task reads its file (M3, DV6), and the context is current (bound
        // above); the call is synchronous.
        unsafe {
            ctx.api().memcpy(
                file.as_raw(),
                file.len(),
                jpeg.as_ptr().cast(),
                jpeg.len(),
                memcpy_kind(Location::Host, Location::Device),
            )?
        };
        slot.input.loaded = Some((decoded, len));
        Ok(header)
    }

    /// The picture the decode writes for the file loaded for the slot's next frame
    /// ([`FrameLayout::decoded`]), if one is loaded: the last one loaded, which a submission
    /// does not unload (submitting again decodes the same file).
    pub fn jpeg(&self) -> Option<FrameLayout> {
        let slot = self.pipeline.slots.get(self.index)?;
        slot.input.loaded.map(|(layout, _)| layout)
    }
}
