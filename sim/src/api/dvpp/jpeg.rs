//! JPEG (DV7, DV8): the header functions, synchronous on host memory, and the decode, a
//! stream task (DV6).
//!
//! Layer: C entry points; imports its parent (`api::dvpp`) and the layers below.

use std::ffi::c_void;

use super::channel::{channel_for_task, channel_id};
use super::desc::{pic_id, snapshot};
use super::media_range;
use crate::api::memory::check_stream_device;
use crate::calls::CallId;
use crate::media::decode::Output;
use crate::media::jpeg::{Header, HeaderError, parse};
use crate::media::{
    JPEGD_HEIGHT_ALIGN, JPEGD_MAX, JPEGD_MIN, JPEGD_WIDTH_ALIGN, align_up, yuv420sp_size,
};
use crate::state::dvpp::{ALIGN_UP, Held, MODE_JPEGD, Work};
use crate::state::{Rt, TaskKind, code};
use crate::{Call, calls, enter, errmsg, exec, ffi, non_null, out, rt_of, stream_for};

/// `PIXEL_FORMAT_YUV_SEMIPLANAR_420` (NV12) and `PIXEL_FORMAT_YVU_SEMIPLANAR_420` (NV21).
const NV12: i32 = 1;
const NV21: i32 = 2;

/// The code of a refused header: 100000 when it is not a JPEG (or cut short), 148052 when
/// JPEGD does not decode it (DV7).
fn refused(e: HeaderError) -> i32 {
    match e {
        HeaderError::Malformed(why) => errmsg::why(code::INVALID_PARAM, why),
        HeaderError::Unsupported(why) => {
            errmsg::why(code::UNSUPPORTED_JPEG, format!("{why} (DV7)"))
        }
    }
}

/// Copies the caller's `size` bytes at `data` (host memory the caller keeps valid during
/// the call) and parses the header.
fn header_of(data: *const c_void, size: u32) -> Result<(Vec<u8>, Header), i32> {
    let mut bytes = vec![0u8; size as usize];
    // SAFETY: non-NULL (checked by the caller); the caller passes `size` readable bytes.
    unsafe { std::ptr::copy(data.cast::<u8>(), bytes.as_mut_ptr(), bytes.len()) };
    let header = parse(&bytes).map_err(refused)?;
    Ok((bytes, header))
}

/// The header checked for a decode (DV7): a frame JPEGD decodes, 32x32 to 16384x16384.
fn decodable(header: &Header) -> Result<(), i32> {
    header.check_supported().map_err(refused)?;
    let (w, h) = (header.width, header.height);
    if !(JPEGD_MIN..=JPEGD_MAX).contains(&w) || !(JPEGD_MIN..=JPEGD_MAX).contains(&h) {
        return Err(errmsg::why(
            code::INVALID_PARAM,
            format!("a {w}x{h} JPEG: JPEGD decodes 32x32 to 16384x16384 (DV7)"),
        ));
    }
    if !header.has_scan {
        return Err(errmsg::why(
            code::INVALID_PARAM,
            "the JPEG has no scan (SOS) after its frame header",
        ));
    }
    Ok(())
}

/// The output of a decode of `header` to `format` with precision mode `precision` (DV8):
/// odd sizes rounded down (up for `ACL_YUVOUT_ALIGN_UP`), strides align(w, 64) and
/// align(h, 16).
fn layout(header: &Header, format: i32, precision: i32) -> Result<Output, i32> {
    if !matches!(format, NV12 | NV21) {
        return Err(errmsg::why(
            code::FEATURE_UNSUPPORTED,
            format!(
                "output format {format}: the simulator decodes to YUV420SP (NV12 = 1, NV21 = 2) only"
            ),
        ));
    }
    let (w, h) = header.oriented();
    let even = |x: u32| {
        if precision == ALIGN_UP {
            x + (x & 1)
        } else {
            x & !1
        }
    };
    let (w, h) = (even(w), even(h));
    Ok(Output {
        width: w,
        height: h,
        width_stride: align_up(u64::from(w), JPEGD_WIDTH_ALIGN) as u32,
        height_stride: align_up(u64::from(h), JPEGD_HEIGHT_ALIGN) as u32,
        nv21: format == NV21,
    })
}

fn image_info(
    call: &'static str,
    data: *const c_void,
    size: u32,
    width: *mut u32,
    height: *mut u32,
    components: *mut i32,
    format: *mut i32,
) -> i32 {
    ffi(|| {
        non_null(&[data as usize])?;
        let _g = enter(call, Call::Query)?;
        let (_, header) = header_of(data, size)?;
        let (w, h) = header.oriented();
        // NULL outputs are allowed (the sample passes two).
        for (p, v) in [(width, w), (height, h)] {
            if !p.is_null() {
                out(p, v)?;
            }
        }
        if !components.is_null() {
            out(components, i32::from(header.components))?;
        }
        if !format.is_null() {
            out(format, header.format)?;
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppJpegGetImageInfo(
    data: *const c_void,
    size: u32,
    width: *mut u32,
    height: *mut u32,
    components: *mut i32,
) -> i32 {
    calls::count(CallId::acldvppJpegGetImageInfo);
    let none = std::ptr::null_mut();
    image_info(
        "acldvppJpegGetImageInfo",
        data,
        size,
        width,
        height,
        components,
        none,
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppJpegGetImageInfoV2(
    data: *const c_void,
    size: u32,
    width: *mut u32,
    height: *mut u32,
    components: *mut i32,
    format: *mut i32,
) -> i32 {
    calls::count(CallId::acldvppJpegGetImageInfoV2);
    image_info(
        "acldvppJpegGetImageInfoV2",
        data,
        size,
        width,
        height,
        components,
        format,
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppJpegPredictDecSize(
    data: *const c_void,
    dataSize: u32,
    outputPixelFormat: i32,
    decSize: *mut u32,
) -> i32 {
    calls::count(CallId::acldvppJpegPredictDecSize);
    ffi(|| {
        non_null(&[data as usize, decSize as usize])?;
        let _g = enter("acldvppJpegPredictDecSize", Call::Query)?;
        let (_, header) = header_of(data, dataSize)?;
        decodable(&header)?;
        // Sim choice (DV8): align(w, 64) * align(h, 16) * 3/2 of the rounded-down size.
        let l = layout(
            &header,
            outputPixelFormat,
            crate::state::dvpp::ALIGN_DOWN_COMPAT,
        )?;
        let bytes = yuv420sp_size(u64::from(l.width_stride), u64::from(l.height_stride));
        out(decSize, bytes as u32)
    })
}

/// The checks of a decode's output description (DV5, DV8): its memory and size; returns
/// the output's address.
fn output_of(rt: &mut Rt, call: &str, desc: u64, need: u64) -> Result<(usize, usize), i32> {
    let Some((data, size, ..)) = snapshot(rt, desc) else {
        return Err(code::INVALID_PARAM);
    };
    if u64::from(size) < need {
        return Err(errmsg::why(
            code::INVALID_PARAM,
            format!(
                "the output description's size is {size} B, the decode writes {need} B (align(w, 64) * align(h, 16) * 3/2, DV8)"
            ),
        ));
    }
    let alloc = media_range(rt, call, "output", data, size as usize)?;
    Ok((data, alloc))
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppJpegDecodeAsync(
    channelDesc: *mut c_void,
    data: *const c_void,
    size: u32,
    outputDesc: *mut c_void,
    stream: *mut c_void,
) -> i32 {
    calls::count(CallId::acldvppJpegDecodeAsync);
    ffi(|| {
        const CALL: &str = "acldvppJpegDecodeAsync";
        non_null(&[channelDesc as usize, data as usize, outputDesc as usize])?;
        let mut g = enter(CALL, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        let channel = channel_id(rt, CALL, channelDesc as usize)?;
        let desc = pic_id(rt, CALL, outputDesc as usize)?;
        let input_alloc = media_range(rt, CALL, "input", data as usize, size as usize)?;
        // The header, checked now: nothing is queued for a JPEG JPEGD refuses (DV7).
        let (_, header) = header_of(data, size)?;
        decodable(&header)?;
        let precision = rt
            .dvpp
            .channels
            .get(&channel)
            .map_or(crate::state::dvpp::ALIGN_DOWN_COMPAT, |c| c.precision);
        let format = snapshot(rt, desc).map_or(0, |s| s.2);
        let l = layout(&header, format, precision)?;
        let need = yuv420sp_size(u64::from(l.width_stride), u64::from(l.height_stride));
        let (output, output_alloc) = output_of(rt, CALL, desc, need)?;
        check_stream_device(rt, CALL, sid, &[input_alloc, output_alloc])?; // M1
        channel_for_task(rt, CALL, channel, MODE_JPEGD, sid)?; // DV3, DV4
        let id = rt.next_id;
        let held = Held {
            call: CALL,
            stream: sid,
            channel,
            pics: vec![desc],
            config: None,
            reads: vec![(data as usize, size as usize)],
            writes: vec![(output, need as usize)],
        };
        crate::rules::dvpp::acquire(rt, id, held);
        if let Some(p) = rt.dvpp.pics.get_mut(&desc) {
            p.written_by = Some(id);
        }
        let work = Work::Decode {
            input: data as usize,
            size: size as usize,
            header,
            output,
            layout: l,
            desc,
        };
        let issued = exec::enqueue(
            rt,
            sid,
            TaskKind::Dvpp(Box::new(work)),
            vec![input_alloc, output_alloc],
        );
        debug_assert_eq!(issued, id);
        Ok(())
    })
}
