//! The VPC resize (DV9), a stream task (DV6): NV12/NV21 in, NV12/NV21 out, with the board's
//! geometry (input 10x6 to 8192x8192, output 10x6 to 4096x8192, even sizes, strides at
//! least the width and height, 10 to 16384 and 6 to 16384, size at least ws * hs * 3/2).
//!
//! Layer: C entry points; imports its parent (`api::dvpp`) and the layers below.

use std::ffi::c_void;

use super::channel::{channel_for_task, channel_id};
use super::desc::{config_id, pic_id, snapshot};
use super::media_range;
use crate::api::memory::check_stream_device;
use crate::calls::CallId;
use crate::media::resize::Plane;
use crate::media::yuv420sp_size;
use crate::rules::dvpp::pic_name;
use crate::state::dvpp::{Held, MODE_VPC, Work};
use crate::state::{Rt, STREAM_BASE, TaskKind, code, handle};
use crate::{Call, calls, enter, errmsg, exec, ffi, non_null, rt_of, stream_for};

/// One side of a resize, checked: its description, memory and plane.
struct Side {
    desc: u64,
    data: usize,
    alloc: usize,
    bytes: usize,
    format: i32,
    plane: Plane,
    rows: usize,
}

/// The checks of one side (DV5, DV9): `max` is the largest width and height.
fn side(rt: &mut Rt, call: &str, role: &str, desc: u64, max: (u32, u32)) -> Result<Side, i32> {
    let Some((data, size, format, w, h, ws, hs)) = snapshot(rt, desc) else {
        return Err(code::INVALID_PARAM);
    };
    let bad = |why: String| {
        errmsg::why(
            code::INVALID_PARAM,
            format!("the {role} {}: {why} (DV9)", pic_name(desc)),
        )
    };
    if !matches!(format, 1 | 2) {
        return Err(errmsg::why(
            code::FEATURE_UNSUPPORTED,
            format!(
                "{role} format {format}: the simulator resizes YUV420SP (NV12 = 1, NV21 = 2) only"
            ),
        ));
    }
    if !(10..=max.0).contains(&w) || !(6..=max.1).contains(&h) {
        return Err(bad(format!(
            "{w}x{h} is outside 10x6 to {}x{}",
            max.0, max.1
        )));
    }
    if w % 2 != 0 || h % 2 != 0 {
        return Err(bad(format!(
            "{w}x{h}: a YUV420SP width and height are even"
        )));
    }
    if ws < w || !(10..=16384).contains(&ws) || hs < h || !(6..=16384).contains(&hs) {
        return Err(bad(format!(
            "strides {ws}x{hs} for {w}x{h}: widthStride at least the width (10 to 16384), heightStride at least the height (6 to 16384)"
        )));
    }
    let need = yuv420sp_size(u64::from(ws), u64::from(hs));
    if u64::from(size) < need {
        return Err(bad(format!(
            "its size is {size} B, ws * hs * 3/2 is {need} B"
        )));
    }
    let alloc = media_range(rt, call, role, data, size as usize)?;
    Ok(Side {
        desc,
        data,
        alloc,
        bytes: need as usize,
        format,
        plane: Plane {
            width: w as usize,
            height: h as usize,
            stride: ws as usize,
            channels: 1,
        },
        rows: hs as usize,
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppVpcResizeAsync(
    channelDesc: *mut c_void,
    inputDesc: *mut c_void,
    outputDesc: *mut c_void,
    resizeConfig: *mut c_void,
    stream: *mut c_void,
) -> i32 {
    calls::count(CallId::acldvppVpcResizeAsync);
    ffi(|| {
        const CALL: &str = "acldvppVpcResizeAsync";
        non_null(&[
            channelDesc as usize,
            inputDesc as usize,
            outputDesc as usize,
            resizeConfig as usize,
        ])?;
        let mut g = enter(CALL, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        let channel = channel_id(rt, CALL, channelDesc as usize)?;
        let input = pic_id(rt, CALL, inputDesc as usize)?;
        let output = pic_id(rt, CALL, outputDesc as usize)?;
        let config = config_id(rt, CALL, resizeConfig as usize)?;
        let interpolation = rt.dvpp.configs.get(&config).map_or(0, |c| c.interpolation);
        // DV9: 0, 1, 3 bilinear; 2, 4 nearest; 5 (the in-house filter) not simulated.
        let nearest = match interpolation {
            0 | 1 | 3 => false,
            2 | 4 => true,
            other => {
                return Err(errmsg::why(
                    code::FEATURE_UNSUPPORTED,
                    format!(
                        "interpolation {other}: the simulator has bilinear (0, 1, 3) and nearest (2, 4)"
                    ),
                ));
            }
        };
        let src = side(rt, CALL, "input", input, (8192, 8192))?;
        let dst = side(rt, CALL, "output", output, (4096, 8192))?;
        check_stream_device(rt, CALL, sid, &[src.alloc, dst.alloc])?; // M1
        channel_for_task(rt, CALL, channel, MODE_VPC, sid)?; // DV3, DV4
        // DV6: the input's geometry is what a pending decode writes when it runs.
        if let Some(task) = rt.dvpp.pics.get(&input).and_then(|p| p.written_by) {
            let on = rt.dvpp.tasks.get(&task).map_or(0, |t| t.stream);
            rt.report(
                "DV6",
                format!(
                    "{CALL}: the input {} is the output description of acldvppJpegDecodeAsync (task {task}) on stream {:#x}, which is pending: its width, height and strides are read now, before the decode writes them; describe the decoded picture with a description of its own (the sizes from acldvppJpegGetImageInfo) or synchronize first",
                    pic_name(input),
                    handle(STREAM_BASE, on)
                ),
            );
        }
        let id = rt.next_id;
        let held = Held {
            call: CALL,
            stream: sid,
            channel,
            pics: vec![input, output],
            config: Some(config),
            reads: vec![(src.data, src.bytes)],
            writes: vec![(dst.data, dst.bytes)],
        };
        crate::rules::dvpp::acquire(rt, id, held);
        let work = Work::Resize {
            src: src.data,
            src_plane: src.plane,
            src_rows: src.rows,
            dst: dst.data,
            dst_plane: dst.plane,
            dst_rows: dst.rows,
            nearest,
            nv_swap: src.format != dst.format,
            desc: dst.desc,
        };
        let issued = exec::enqueue(
            rt,
            sid,
            TaskKind::Dvpp(Box::new(work)),
            vec![src.alloc, dst.alloc],
        );
        debug_assert_eq!(issued, id);
        Ok(())
    })
}
