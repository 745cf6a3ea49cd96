//! Media preprocessing, DVPP V1 (DV2-DV11): the functions of [`Api::dvpp`], each optional
//! ([`CallError::Unsupported`] names one the loaded runtime and `libacl_dvpp.so` lack).
//!
//! Thin and `unsafe`, every one: the handles are raw pointers the runtime cannot check, the
//! asynchronous calls borrow memory and descriptions until their stream has passed them
//! (DV6), and none of them is listed as a query the typed API relies on. The typed media
//! layer, not this one, proves the rules.

use std::ffi::c_void;

use super::{AclError, Api, CallError, Failure, Result, aclrtStream, check};
use crate::sys::bindings::{
    acldvppChannelDesc, acldvppChannelDescParamType, acldvppJpegFormat, acldvppPicDesc,
    acldvppPixelFormat, acldvppResizeConfig,
};

/// A media function of the table, or [`CallError::Unsupported`] when it was found nowhere.
macro_rules! dvpp_fn {
    ($api:expr, $name:ident) => {
        match $api.dvpp().table.$name {
            Some(function) => function,
            None => {
                return Err(CallError::Unsupported {
                    symbol: stringify!($name),
                })
            }
        }
    };
}

/// Calls a media function that returns an `aclError`: `dvpp_call!(self, acldvppFoo(a, b))`.
macro_rules! dvpp_call {
    ($api:expr, $name:ident($($arg:expr),* $(,)?)) => {
        check($api, stringify!($name), (dvpp_fn!($api, $name))($($arg),*))
    };
}

/// The error of a creating function that returned NULL: the runtime's way of failing there.
#[cold]
#[inline(never)]
fn null_handle(api: &Api, call: &'static str) -> CallError {
    CallError::failed(api, call, AclError::Failure)
}

/// Bytes the C function cannot take (its size is a `uint32_t`): refused before the call.
#[cold]
#[inline(never)]
fn too_long(call: &'static str) -> CallError {
    CallError::Failed {
        call,
        code: AclError::InvalidParam,
        failure: Failure::default(),
    }
}

/// The length of `data` as the `uint32_t` the JPEG functions take.
fn length(call: &'static str, data: &[u8]) -> Result<u32> {
    u32::try_from(data.len()).map_err(|_| too_long(call))
}

/// What `acldvppJpegGetImageInfoV2` reports (DV7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JpegInfo {
    /// Width in pixels (the header's, or swapped by an EXIF orientation of 5 to 8).
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Components of the frame (1 gray, 3 YCbCr).
    pub components: i32,
    /// The sampling (`ACL_JPEG_CSS_*`).
    pub format: acldvppJpegFormat,
}

impl Api {
    /// `acldvppMalloc(&p, size)` (DV5): media memory, `ALIGN_UP(size, 32) + 32` usable bytes
    /// at a 128-byte aligned address.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); the memory is released
    /// with [`dvpp_free`](Self::dvpp_free), never with `aclrtFree` (DV5).
    pub unsafe fn dvpp_malloc(&self, size: usize) -> Result<*mut c_void> {
        let mut pointer = std::ptr::null_mut();
        // SAFETY: a writable local.
        unsafe { dvpp_call!(self, acldvppMalloc(&mut pointer, size))? };
        Ok(pointer)
    }

    /// `acldvppFree(p)` (DV5, DV10).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `pointer` came from
    /// [`dvpp_malloc`](Self::dvpp_malloc), no pending task uses it (DV6, M2), and it is not
    /// used afterwards.
    pub unsafe fn dvpp_free(&self, pointer: *mut c_void) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { dvpp_call!(self, acldvppFree(pointer)) }
    }

    /// `acldvppCreateChannelDesc()` (DV3): NULL is a failure.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); the description is the
    /// caller's to destroy, after its channel.
    pub unsafe fn dvpp_create_channel_desc(&self) -> Result<*mut acldvppChannelDesc> {
        let create = dvpp_fn!(self, acldvppCreateChannelDesc);
        // SAFETY: no arguments.
        let desc = unsafe { create() };
        if desc.is_null() {
            return Err(null_handle(self, "acldvppCreateChannelDesc"));
        }
        Ok(desc)
    }

    /// `acldvppDestroyChannelDesc(desc)` (DV3: 148051 while its channel exists).
    ///
    /// # Safety
    /// `desc` is live, its channel destroyed, and it is not used afterwards.
    pub unsafe fn dvpp_destroy_channel_desc(&self, desc: *mut acldvppChannelDesc) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { dvpp_call!(self, acldvppDestroyChannelDesc(desc)) }
    }

    /// `acldvppSetChannelDescMode(desc, mode)` (DV3): the OR of `DVPP_CHNMODE_*`, before the
    /// channel is created.
    ///
    /// # Safety
    /// `desc` is live and its channel not created yet.
    pub unsafe fn dvpp_set_channel_desc_mode(
        &self,
        desc: *mut acldvppChannelDesc,
        mode: u32,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { dvpp_call!(self, acldvppSetChannelDescMode(desc, mode)) }
    }

    /// `acldvppSetChannelDescParam(desc, kind, length, param)`: `param` holds the value's
    /// bytes (a `uint32_t`, `uint64_t` or `int32_t`, per `kind`).
    ///
    /// # Safety
    /// `desc` is live and its channel not created yet.
    pub unsafe fn dvpp_set_channel_desc_param(
        &self,
        desc: *mut acldvppChannelDesc,
        kind: acldvppChannelDescParamType,
        param: &[u8],
    ) -> Result<()> {
        let value = param.as_ptr().cast::<c_void>();
        // SAFETY: the caller's contract; `param.len()` readable bytes.
        unsafe {
            dvpp_call!(
                self,
                acldvppSetChannelDescParam(desc, kind, param.len(), value)
            )
        }
    }

    /// `acldvppCreateChannel(desc)` (DV3): synchronous.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); `desc` is live; the
    /// channel is the caller's to destroy before its description, stream, context and
    /// device (DV3, D3).
    pub unsafe fn dvpp_create_channel(&self, desc: *mut acldvppChannelDesc) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { dvpp_call!(self, acldvppCreateChannel(desc)) }
    }

    /// `acldvppDestroyChannel(desc)` (DV3, DV10).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); `desc`'s channel exists
    /// and no pending task uses it (DV10).
    pub unsafe fn dvpp_destroy_channel(&self, desc: *mut acldvppChannelDesc) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { dvpp_call!(self, acldvppDestroyChannel(desc)) }
    }

    /// `acldvppCreatePicDesc()` (DV8): NULL is a failure.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); the description is the
    /// caller's to destroy (it owns no memory, DV10).
    pub unsafe fn dvpp_create_pic_desc(&self) -> Result<*mut acldvppPicDesc> {
        let create = dvpp_fn!(self, acldvppCreatePicDesc);
        // SAFETY: no arguments.
        let desc = unsafe { create() };
        if desc.is_null() {
            return Err(null_handle(self, "acldvppCreatePicDesc"));
        }
        Ok(desc)
    }

    /// `acldvppDestroyPicDesc(desc)` (DV10).
    ///
    /// # Safety
    /// `desc` is live, no pending task uses it (DV6), and it is not used afterwards.
    pub unsafe fn dvpp_destroy_pic_desc(&self, desc: *mut acldvppPicDesc) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { dvpp_call!(self, acldvppDestroyPicDesc(desc)) }
    }

    /// `acldvppSetPicDescData(desc, data)` (DV5, DV8).
    ///
    /// # Safety
    /// `desc` is live and no pending task uses it (DV6).
    pub unsafe fn dvpp_set_pic_desc_data(
        &self,
        desc: *mut acldvppPicDesc,
        data: *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { dvpp_call!(self, acldvppSetPicDescData(desc, data)) }
    }

    /// `acldvppSetPicDescFormat(desc, format)` (DV8, DV9).
    ///
    /// # Safety
    /// `desc` is live and no pending task uses it (DV6).
    pub unsafe fn dvpp_set_pic_desc_format(
        &self,
        desc: *mut acldvppPicDesc,
        format: acldvppPixelFormat,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { dvpp_call!(self, acldvppSetPicDescFormat(desc, format)) }
    }

    /// One of the `uint32_t` setters of a picture description, by its field: `acldvppSetPicDesc`
    /// + `Size`, `Width`, `Height`, `WidthStride` or `HeightStride` (DV8, DV9).
    ///
    /// # Safety
    /// `desc` is live and no pending task uses it (DV6).
    pub unsafe fn dvpp_set_pic_desc_u32(
        &self,
        desc: *mut acldvppPicDesc,
        field: PicField,
        value: u32,
    ) -> Result<()> {
        let (call, set) = match field {
            PicField::Size => (
                "acldvppSetPicDescSize",
                dvpp_fn!(self, acldvppSetPicDescSize),
            ),
            PicField::Width => (
                "acldvppSetPicDescWidth",
                dvpp_fn!(self, acldvppSetPicDescWidth),
            ),
            PicField::Height => (
                "acldvppSetPicDescHeight",
                dvpp_fn!(self, acldvppSetPicDescHeight),
            ),
            PicField::WidthStride => (
                "acldvppSetPicDescWidthStride",
                dvpp_fn!(self, acldvppSetPicDescWidthStride),
            ),
            PicField::HeightStride => (
                "acldvppSetPicDescHeightStride",
                dvpp_fn!(self, acldvppSetPicDescHeightStride),
            ),
            PicField::RetCode => {
                return Err(CallError::Unsupported {
                    symbol: "acldvppSetPicDescRetCode",
                });
            }
        };
        // SAFETY: the caller's contract.
        check(self, call, unsafe { set(desc, value) })
    }

    /// One of the `uint32_t` getters of a picture description (`acldvppGetPicDesc` + the
    /// field): the value, 0 for a field never set (the runtime has no failure code here).
    ///
    /// # Safety
    /// `desc` is live; for an output description of a decode, read after the task is
    /// complete (DV6).
    pub unsafe fn dvpp_pic_desc_u32(
        &self,
        desc: *const acldvppPicDesc,
        field: PicField,
    ) -> Result<u32> {
        let get = match field {
            PicField::Size => dvpp_fn!(self, acldvppGetPicDescSize),
            PicField::Width => dvpp_fn!(self, acldvppGetPicDescWidth),
            PicField::Height => dvpp_fn!(self, acldvppGetPicDescHeight),
            PicField::WidthStride => dvpp_fn!(self, acldvppGetPicDescWidthStride),
            PicField::HeightStride => dvpp_fn!(self, acldvppGetPicDescHeightStride),
            PicField::RetCode => dvpp_fn!(self, acldvppGetPicDescRetCode),
        };
        // SAFETY: the caller's contract.
        Ok(unsafe { get(desc) })
    }

    /// `acldvppGetPicDescData(desc)`.
    ///
    /// # Safety
    /// `desc` is live.
    pub unsafe fn dvpp_pic_desc_data(&self, desc: *const acldvppPicDesc) -> Result<*mut c_void> {
        let get = dvpp_fn!(self, acldvppGetPicDescData);
        // SAFETY: the caller's contract.
        Ok(unsafe { get(desc) })
    }

    /// `acldvppGetPicDescFormat(desc)`.
    ///
    /// # Safety
    /// `desc` is live.
    pub unsafe fn dvpp_pic_desc_format(
        &self,
        desc: *const acldvppPicDesc,
    ) -> Result<acldvppPixelFormat> {
        let get = dvpp_fn!(self, acldvppGetPicDescFormat);
        // SAFETY: the caller's contract.
        Ok(unsafe { get(desc) })
    }

    /// `acldvppCreateResizeConfig()` (DV9): NULL is a failure.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); the configuration is the
    /// caller's to destroy.
    pub unsafe fn dvpp_create_resize_config(&self) -> Result<*mut acldvppResizeConfig> {
        let create = dvpp_fn!(self, acldvppCreateResizeConfig);
        // SAFETY: no arguments.
        let config = unsafe { create() };
        if config.is_null() {
            return Err(null_handle(self, "acldvppCreateResizeConfig"));
        }
        Ok(config)
    }

    /// `acldvppDestroyResizeConfig(config)` (DV10).
    ///
    /// # Safety
    /// `config` is live, no pending task uses it (DV6), and it is not used afterwards.
    pub unsafe fn dvpp_destroy_resize_config(
        &self,
        config: *mut acldvppResizeConfig,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { dvpp_call!(self, acldvppDestroyResizeConfig(config)) }
    }

    /// `acldvppSetResizeConfigInterpolation(config, interpolation)` (DV9: 1 bilinear, 2
    /// nearest).
    ///
    /// # Safety
    /// `config` is live and no pending task uses it (DV6).
    pub unsafe fn dvpp_set_resize_interpolation(
        &self,
        config: *mut acldvppResizeConfig,
        interpolation: u32,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe {
            dvpp_call!(
                self,
                acldvppSetResizeConfigInterpolation(config, interpolation)
            )
        }
    }

    /// `acldvppGetResizeConfigInterpolation(config)`.
    ///
    /// # Safety
    /// `config` is live.
    pub unsafe fn dvpp_resize_interpolation(
        &self,
        config: *const acldvppResizeConfig,
    ) -> Result<u32> {
        let get = dvpp_fn!(self, acldvppGetResizeConfigInterpolation);
        // SAFETY: the caller's contract.
        Ok(unsafe { get(config) })
    }

    /// `acldvppJpegGetImageInfoV2(data, size, ...)` (DV7): the header of the JPEG in `data`,
    /// host memory, parsed synchronously.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    pub unsafe fn dvpp_jpeg_info(&self, data: &[u8]) -> Result<JpegInfo> {
        let size = length("acldvppJpegGetImageInfoV2", data)?;
        let (mut width, mut height, mut components, mut format) = (0, 0, 0, 0);
        // SAFETY: `size` readable bytes and four writable locals.
        unsafe {
            dvpp_call!(
                self,
                acldvppJpegGetImageInfoV2(
                    data.as_ptr().cast(),
                    size,
                    &mut width,
                    &mut height,
                    &mut components,
                    &mut format
                )
            )?
        };
        Ok(JpegInfo {
            width,
            height,
            components,
            format,
        })
    }

    /// `acldvppJpegGetImageInfo(data, size, &w, &h, &components)` (DV7): as
    /// [`dvpp_jpeg_info`](Self::dvpp_jpeg_info) without the sampling (older runtimes).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    pub unsafe fn dvpp_jpeg_info_v1(&self, data: &[u8]) -> Result<(u32, u32, i32)> {
        let size = length("acldvppJpegGetImageInfo", data)?;
        let (mut width, mut height, mut components) = (0, 0, 0);
        // SAFETY: `size` readable bytes and three writable locals.
        unsafe {
            dvpp_call!(
                self,
                acldvppJpegGetImageInfo(
                    data.as_ptr().cast(),
                    size,
                    &mut width,
                    &mut height,
                    &mut components
                )
            )?
        };
        Ok((width, height, components))
    }

    /// `acldvppJpegPredictDecSize(data, size, format, &bytes)` (DV7, DV8): the output size a
    /// decode of `data` to `format` needs.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    pub unsafe fn dvpp_jpeg_predict_dec_size(
        &self,
        data: &[u8],
        format: acldvppPixelFormat,
    ) -> Result<u32> {
        let size = length("acldvppJpegPredictDecSize", data)?;
        let mut bytes = 0;
        // SAFETY: `size` readable bytes and a writable local.
        unsafe {
            dvpp_call!(
                self,
                acldvppJpegPredictDecSize(data.as_ptr().cast(), size, format, &mut bytes)
            )?
        };
        Ok(bytes)
    }

    /// `acldvppJpegDecodeAsync(channel, data, size, output, stream)` (DV6-DV8): queued on
    /// `stream`; success says nothing about the decode (P3b).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: the channel exists
    /// with the JPEGD mode (DV3) and is used by no other thread or stream meanwhile (DV4);
    /// `data` is `size` bytes of media memory (DV5); `output` is a live description of media
    /// memory of the size DV8 asks; all of them, and the channel, stay alive and unchanged,
    /// and the output unread, until `stream` has passed the task (DV6, DV10); `stream`
    /// belongs to the current context.
    pub unsafe fn dvpp_jpeg_decode_async(
        &self,
        channel: *mut acldvppChannelDesc,
        data: *const c_void,
        size: u32,
        output: *mut acldvppPicDesc,
        stream: aclrtStream,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe {
            dvpp_call!(
                self,
                acldvppJpegDecodeAsync(channel, data, size, output, stream)
            )
        }
    }

    /// `acldvppVpcResizeAsync(channel, input, output, config, stream)` (DV6, DV9): queued on
    /// `stream`.
    ///
    /// # Safety
    /// As [`dvpp_jpeg_decode_async`](Self::dvpp_jpeg_decode_async), with the VPC mode, both
    /// descriptions of media memory of the geometry DV9 asks, and the configuration alive
    /// and unchanged until `stream` has passed the task.
    pub unsafe fn dvpp_vpc_resize_async(
        &self,
        channel: *mut acldvppChannelDesc,
        input: *mut acldvppPicDesc,
        output: *mut acldvppPicDesc,
        config: *mut acldvppResizeConfig,
        stream: aclrtStream,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe {
            dvpp_call!(
                self,
                acldvppVpcResizeAsync(channel, input, output, config, stream)
            )
        }
    }
}

/// A `uint32_t` field of a picture description, for
/// [`Api::dvpp_set_pic_desc_u32`] and [`Api::dvpp_pic_desc_u32`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PicField {
    /// The buffer's size in bytes.
    Size,
    /// Width in pixels.
    Width,
    /// Height in pixels.
    Height,
    /// Bytes per row.
    WidthStride,
    /// Rows reserved per plane.
    HeightStride,
    /// The task's result (getter only; 0 when unset).
    RetCode,
}
