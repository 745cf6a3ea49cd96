//! The JPEG pipeline frame (decode, resize, model, D2H on two streams joined by events,
//! per-slot completion events), once with [`JpegPipeline`] and once with raw calls that
//! issue exactly the same runtime work per frame: the slot's completion event synchronised
//! and reset (E10), `acldvppJpegGetImageInfoV2` of the file, its synchronous copy into the
//! slot's media memory (`aclrtMemcpy`), the decode (JPEGD), the resize (VPC) and the model
//! execution on `compute`, record / wait / reset of the hand-off event (E2-E4), the output
//! copy and the completion record on `download`.
//!
//! Every frame loads the same small JPEG ([`SIDE`] x [`SIDE`]), so that the steady state sets
//! no picture description on either side. The host's own work per frame is the same on both
//! sides (one output element read into a checksum). [`check_calls`] pins the runtime calls
//! of the counted frames, the same table for both programs, so that the comparison cannot
//! drift.

use std::ffi::{CString, c_void};

use ascend_typestate::result::dvpp::PicField;
use ascend_typestate::simulator::{SimDtype, SimModel, Simulator};
use ascend_typestate::sys::bindings::{
    ACL_EVENT_SYNC, ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE, DVPP_CHNMODE_JPEGD, DVPP_CHNMODE_VPC,
    PIXEL_FORMAT_YUV_SEMIPLANAR_420, aclDataBuffer, acldvppChannelDesc, acldvppPicDesc,
    acldvppResizeConfig, aclmdlDataset, aclrtEvent, aclrtStream,
};
use ascend_typestate::sys::loader::Api;
use ascend_typestate::{
    Context, Error, FrameLayout, JpegConfig, JpegPipeline, MediaV1, Model, PipelineConfig,
    PixelFormat, Static,
};

/// Frames in flight.
pub const SLOTS: usize = 2;
/// The JPEG's side in pixels (a multiple of 64 and 16: its decoded strides are its sizes).
pub const SIDE: u16 = 64;
/// The model's input: TARGET x TARGET NV12.
pub const TARGET: u32 = 32;
/// The bytes each slot's media memory holds for a file.
pub const FILE_CAPACITY: usize = 16 * 1024;
/// The decoded picture's bytes: NV12 of SIDE x SIDE, strides align(SIDE, 64) x align(SIDE, 16).
pub const DECODED_BYTES: usize = SIDE as usize * SIDE as usize * 3 / 2;
/// The resized picture's bytes: NV12 of TARGET x TARGET, strides align(TARGET, 16) x TARGET.
pub const RESIZED_BYTES: usize = TARGET as usize * TARGET as usize * 3 / 2;

/// Runtime calls per counted frame, for both programs (the steady state: both slots full).
pub const PER_FRAME: [(&str, u64); 12] = [
    ("aclrtSynchronizeEvent", 1),
    ("aclrtResetEvent", 2),
    ("acldvppJpegGetImageInfoV2", 1),
    ("aclrtMemcpy", 1),
    ("acldvppJpegDecodeAsync", 1),
    ("acldvppVpcResizeAsync", 1),
    ("aclmdlExecuteAsync", 1),
    ("aclrtRecordEvent", 2),
    ("aclrtStreamWaitEvent", 1),
    ("aclrtMemcpyAsync", 1),
    ("aclrtSynchronizeStream", 0),
    ("aclrtSetCurrentContext", 0),
];

/// Calls neither program makes in a counted frame: nothing is created, set or queried again.
pub const NEVER: [&str; 20] = [
    "aclrtGetCurrentContext",
    "aclrtCreateEventWithFlag",
    "aclrtMalloc",
    "aclrtMallocHost",
    "aclrtMemset",
    "acldvppMalloc",
    "acldvppCreatePicDesc",
    "acldvppSetPicDescData",
    "acldvppSetPicDescFormat",
    "acldvppSetPicDescSize",
    "acldvppSetPicDescWidth",
    "acldvppSetPicDescHeight",
    "acldvppSetPicDescWidthStride",
    "acldvppSetPicDescHeightStride",
    "acldvppJpegGetImageInfo",
    "acldvppJpegPredictDecSize",
    "aclmdlCreateDataset",
    "aclCreateDataBuffer",
    "aclmdlAddDatasetBuffer",
    "aclrtLaunchCallback",
];

/// Panics unless the simulator counted exactly [`PER_FRAME`] per frame, and none of
/// [`NEVER`], since its call counts were reset before `frames` frames.
pub fn check_calls(sim: &Simulator<'_>, frames: u64, program: &str) {
    let mut wrong = Vec::new();
    for (call, per) in PER_FRAME {
        let n = sim.call_count(call);
        if n != per * frames {
            wrong.push(format!("{call}: {n}, expected {}", per * frames));
        }
    }
    for call in NEVER {
        let n = sim.call_count(call);
        if n != 0 {
            wrong.push(format!("{call}: {n}, expected 0"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{program}: the runtime calls of {frames} JPEG frames drifted: {wrong:?}"
    );
}

/// The class the model gives the JPEG (red: the V bytes score highest).
pub const CLASS: i64 = 2;

/// Panics unless every one of `frames` frames was classified right (both programs read
/// one output element per frame).
pub fn check_checksum(checksum: i64, frames: u64, program: &str) {
    assert_eq!(
        checksum,
        CLASS * frames as i64,
        "{program}: the outputs of {frames} JPEG frames"
    );
}

/// The JPEG every frame loads: SIDE x SIDE of one colour, 4:2:0.
pub fn jpeg() -> Vec<u8> {
    use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
    let pixels: Vec<u8> = (0..usize::from(SIDE) * usize::from(SIDE))
        .flat_map(|_| [230u8, 20, 20])
        .collect();
    let mut out = Vec::new();
    let mut encoder = Encoder::new(&mut out, 90);
    encoder.set_sampling_factor(SamplingFactor::R_4_2_0);
    encoder
        .encode(&pixels, SIDE, SIDE, ColorType::Rgb)
        .expect("encode the JPEG");
    assert!(out.len() <= FILE_CAPACITY, "the JPEG fits the slots");
    out
}

/// A classifier of the resized picture (as tests/media/pipeline.rs): scores the mean of the
/// Y plane, of the U bytes and of the V bytes; its output is the top-1 class (`i32`).
/// Written to a file of its own; returns its path.
pub fn model_file(program: &str) -> std::path::PathBuf {
    let bytes = RESIZED_BYTES;
    let luma = bytes * 2 / 3;
    let mut weights = vec![0.0f32; bytes * 3];
    for (i, w) in weights.chunks_mut(3).enumerate() {
        let class = if i < luma { 0 } else { 1 + (i - luma) % 2 };
        let count = if class == 0 { luma } else { (bytes - luma) / 2 };
        w[class] = 1.0 / count as f32;
    }
    let file = std::env::temp_dir().join(format!(
        "ascend-typestate-bench-{program}-{}.model",
        std::process::id()
    ));
    SimModel::new(SimDtype::U8, &[1, bytes], SimDtype::I32, &[1])
        .matmul(bytes, 3, &weights)
        .argmax(3)
        .write(&file)
        .expect("write the model");
    file
}

/// The typed loop's state: the pipeline, the model, the file, and what the host has seen.
pub struct TypedJpegLoop<'ctx> {
    pub pipeline: JpegPipeline<'ctx, i32>,
    pub model: Model<'ctx, Static>,
    jpeg: Vec<u8>,
    model_path: std::path::PathBuf,
    pub checksum: i64,
}

impl<'ctx> TypedJpegLoop<'ctx> {
    pub fn new(ctx: &'ctx Context<'ctx>, media: &'ctx MediaV1<'_>) -> Result<Self, Error> {
        let target = FrameLayout::resized(TARGET, TARGET, PixelFormat::Nv12)?;
        let config = PipelineConfig::new(FILE_CAPACITY, 1).slots(SLOTS);
        let jpeg_config = JpegConfig::new(target).max_picture(SIDE.into(), SIDE.into());
        let model_path = model_file("typed");
        let model = ctx.load_model(&model_path)?;
        Ok(TypedJpegLoop {
            pipeline: ctx.create_jpeg_pipeline(media, config, jpeg_config)?,
            model,
            jpeg: jpeg(),
            model_path,
            checksum: 0,
        })
    }

    /// One frame.
    #[inline(always)]
    pub fn frame(&mut self) -> Result<(), Error> {
        let mut slot = self.pipeline.next_slot()?;
        if let Some((_, output)) = slot.output() {
            self.checksum += i64::from(output[0]);
        }
        slot.load_jpeg(&self.jpeg)?;
        let model = &mut self.model;
        slot.submit(|launch| launch.execute(model))?;
        Ok(())
    }

    /// Waits for the last frames, counts their outputs too, releases everything.
    pub fn finish(mut self) -> Result<i64, Error> {
        self.pipeline.wait_all()?;
        for (_, output) in self.pipeline.outputs() {
            self.checksum += i64::from(output[0]);
        }
        self.pipeline.destroy()?;
        self.model.unload()?;
        let _ = std::fs::remove_file(&self.model_path);
        Ok(self.checksum)
    }
}

/// A raw slot: the file's media memory, the decoded and resized pictures with their
/// descriptions, the model's datasets, the output buffers and two events.
struct RawJpegSlot {
    file: *mut c_void,
    decoded: *mut c_void,
    resized: *mut c_void,
    /// The decode's output description (of `decoded`).
    decode_out: *mut acldvppPicDesc,
    /// The resize's input description (of `decoded`: another one than the decode's, DV6).
    resize_in: *mut acldvppPicDesc,
    /// The resize's output description (of `resized`).
    resize_out: *mut acldvppPicDesc,
    buffers: [*mut aclDataBuffer; 2],
    input_set: *mut aclmdlDataset,
    output_set: *mut aclmdlDataset,
    dev_out: *mut c_void,
    host_out: *mut c_void,
    ready: aclrtEvent,
    done: aclrtEvent,
    in_flight: bool,
}

/// The raw loop: what a C programmer writes, in Rust, through the result layer; everything
/// created once, every description set once.
pub struct RawJpegLoop {
    api: &'static Api,
    compute: aclrtStream,
    download: aclrtStream,
    channel: *mut acldvppChannelDesc,
    config: *mut acldvppResizeConfig,
    model: u32,
    slots: Vec<RawJpegSlot>,
    next: usize,
    jpeg: Vec<u8>,
    model_path: std::path::PathBuf,
    pub checksum: i64,
}

/// Sets format, sizes, strides, size and data of a picture description, once.
///
/// # Safety
/// `desc` is live, no task uses it, `data` is media memory of at least `size` bytes.
unsafe fn describe(
    api: &Api,
    desc: *mut acldvppPicDesc,
    data: *mut c_void,
    size: usize,
    (width, height, width_stride, height_stride): (u32, u32, u32, u32),
) -> Result<(), Error> {
    // SAFETY: the caller's contract.
    unsafe {
        api.dvpp_set_pic_desc_data(desc, data)?;
        api.dvpp_set_pic_desc_u32(desc, PicField::Size, size as u32)?;
        api.dvpp_set_pic_desc_format(desc, PIXEL_FORMAT_YUV_SEMIPLANAR_420)?;
        api.dvpp_set_pic_desc_u32(desc, PicField::Width, width)?;
        api.dvpp_set_pic_desc_u32(desc, PicField::Height, height)?;
        api.dvpp_set_pic_desc_u32(desc, PicField::WidthStride, width_stride)?;
        api.dvpp_set_pic_desc_u32(desc, PicField::HeightStride, height_stride)?;
    }
    Ok(())
}

impl RawJpegLoop {
    /// Streams, channel, buffers, descriptions, datasets and events, in the current context
    /// (the caller's).
    pub fn new(api: &'static Api) -> Result<Self, Error> {
        let side = u32::from(SIDE);
        let decoded_geometry = (side, side, side, side);
        let target_geometry = (TARGET, TARGET, TARGET, TARGET);
        let model_path = model_file("raw");
        let path = CString::new(model_path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::InvalidArgument("a model path with a NUL byte"))?;
        let out_bytes = size_of::<i32>();
        // SAFETY: raw handles of the current context, released by `finish`; each description
        // is of media memory of the size it is given, set before any task uses it.
        unsafe {
            let compute = api.create_stream()?;
            let download = api.create_stream()?;
            let channel = api.dvpp_create_channel_desc()?;
            api.dvpp_set_channel_desc_mode(channel, DVPP_CHNMODE_JPEGD | DVPP_CHNMODE_VPC)?;
            api.dvpp_create_channel(channel)?;
            let config = api.dvpp_create_resize_config()?;
            api.dvpp_set_resize_interpolation(config, 1)?;
            let model = api.model_load_from_file(&path)?;
            let mut slots = Vec::new();
            for _ in 0..SLOTS {
                let file = api.dvpp_malloc(FILE_CAPACITY)?;
                let decoded = api.dvpp_malloc(DECODED_BYTES)?;
                let resized = api.dvpp_malloc(RESIZED_BYTES)?;
                let decode_out = api.dvpp_create_pic_desc()?;
                describe(api, decode_out, decoded, DECODED_BYTES, decoded_geometry)?;
                let resize_in = api.dvpp_create_pic_desc()?;
                describe(api, resize_in, decoded, DECODED_BYTES, decoded_geometry)?;
                let resize_out = api.dvpp_create_pic_desc()?;
                describe(api, resize_out, resized, RESIZED_BYTES, target_geometry)?;
                let dev_out = api.malloc(out_bytes, ACL_MEM_MALLOC_HUGE_FIRST)?;
                let host_out = api.malloc_host(out_bytes)?;
                let buffers = [
                    api.create_data_buffer(resized, RESIZED_BYTES)?,
                    api.create_data_buffer(dev_out, out_bytes)?,
                ];
                let input_set = api.create_dataset()?;
                api.add_dataset_buffer(input_set, buffers[0])?;
                let output_set = api.create_dataset()?;
                api.add_dataset_buffer(output_set, buffers[1])?;
                slots.push(RawJpegSlot {
                    file,
                    decoded,
                    resized,
                    decode_out,
                    resize_in,
                    resize_out,
                    buffers,
                    input_set,
                    output_set,
                    dev_out,
                    host_out,
                    ready: api.create_event_with_flag(ACL_EVENT_SYNC)?,
                    done: api.create_event_with_flag(ACL_EVENT_SYNC)?,
                    in_flight: false,
                });
            }
            Ok(RawJpegLoop {
                api,
                compute,
                download,
                channel,
                config,
                model,
                slots,
                next: 0,
                jpeg: jpeg(),
                model_path,
                checksum: 0,
            })
        }
    }

    /// One frame, the same runtime calls as [`TypedJpegLoop::frame`].
    #[inline(always)]
    pub fn frame(&mut self) -> Result<(), Error> {
        let api = self.api;
        let i = self.next;
        let slot = &mut self.slots[i];
        let jpeg = &self.jpeg[..];
        // SAFETY: every buffer and description is the slot's, touched by the host only after
        // the slot's completion event is synchronised; the channel is used by `compute` only
        // (DV4); the file is copied before its decode is queued (DV7).
        unsafe {
            if slot.in_flight {
                api.synchronize_event(slot.done)?;
                api.reset_event(slot.done, self.download)?;
                self.checksum += i64::from(*slot.host_out.cast::<i32>());
            }
            // The file's sizes, as the descriptions were set for (DV7, DV8).
            let info = api.dvpp_jpeg_info(jpeg)?;
            if info.width != u32::from(SIDE) || info.height != u32::from(SIDE) {
                return Err(Error::InvalidArgument("another picture size"));
            }
            if jpeg.len() > FILE_CAPACITY {
                return Err(Error::InvalidArgument("the JPEG is longer than its buffer"));
            }
            api.memcpy(
                slot.file,
                FILE_CAPACITY,
                jpeg.as_ptr().cast(),
                jpeg.len(),
                ACL_MEMCPY_HOST_TO_DEVICE,
            )?;
            api.dvpp_jpeg_decode_async(
                self.channel,
                slot.file,
                jpeg.len() as u32,
                slot.decode_out,
                self.compute,
            )?;
            api.dvpp_vpc_resize_async(
                self.channel,
                slot.resize_in,
                slot.resize_out,
                self.config,
                self.compute,
            )?;
            api.model_execute_async(self.model, slot.input_set, slot.output_set, self.compute)?;
            api.record_event(slot.ready, self.compute)?;
            api.stream_wait_event(self.download, slot.ready)?;
            api.reset_event(slot.ready, self.download)?;
            api.memcpy_async(
                slot.host_out,
                size_of::<i32>(),
                slot.dev_out,
                size_of::<i32>(),
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
    pub fn finish(mut self) -> Result<i64, Error> {
        let api = self.api;
        // SAFETY: every handle is this loop's; released once, after both streams are done,
        // descriptions and datasets before their memory (DV10), the channel's configuration
        // and channel before its description (DV3).
        unsafe {
            api.synchronize_stream(self.compute)?;
            api.synchronize_stream(self.download)?;
            for slot in &self.slots {
                if slot.in_flight {
                    self.checksum += i64::from(*slot.host_out.cast::<i32>());
                }
            }
            for slot in self.slots.drain(..) {
                api.destroy_dataset(slot.input_set)?;
                api.destroy_dataset(slot.output_set)?;
                for buffer in slot.buffers {
                    api.destroy_data_buffer(buffer)?;
                }
                api.dvpp_destroy_pic_desc(slot.decode_out)?;
                api.dvpp_destroy_pic_desc(slot.resize_in)?;
                api.dvpp_destroy_pic_desc(slot.resize_out)?;
                api.dvpp_free(slot.file)?;
                api.dvpp_free(slot.decoded)?;
                api.dvpp_free(slot.resized)?;
                api.free(slot.dev_out)?;
                api.free_host(slot.host_out)?;
                api.destroy_event(slot.ready)?;
                api.destroy_event(slot.done)?;
            }
            api.model_unload(self.model)?;
            api.dvpp_destroy_resize_config(self.config)?;
            api.dvpp_destroy_channel(self.channel)?;
            api.dvpp_destroy_channel_desc(self.channel)?;
            api.destroy_stream(self.compute)?;
            api.destroy_stream(self.download)?;
        }
        let _ = std::fs::remove_file(&self.model_path);
        Ok(self.checksum)
    }
}
