//! Channels (DV3, DV4): the description, its mode and parameters, the channel.
//!
//! Layer: C entry points; imports its parent (`api::dvpp`) and the layers below.

use std::ffi::c_void;

use super::{bury, ffi_val, new_handle, object_id};
use crate::calls::CallId;
use crate::rules::dvpp::{channel_name, report_in_use, users};
use crate::state::dvpp::{
    ALIGN_DOWN, ALIGN_DOWN_COMPAT, ALIGN_UP, CHANNEL_BASE, Channel, MODE_ALL, MODE_VPC,
};
use crate::state::{Rt, code, handle};
use crate::{Call, calls, enter, errmsg, ffi, non_null, rt_of};

/// The live channel description behind `h`.
pub(super) fn channel_id(rt: &mut Rt, call: &str, h: usize) -> Result<u64, i32> {
    object_id(rt, call, CHANNEL_BASE, h, |rt, id| {
        rt.dvpp.channels.get(&id).is_some_and(|c| !c.destroyed)
    })
}

/// Whether the description `id` has a channel (`acldvppCreateChannel` succeeded, DV3).
fn has_channel(rt: &Rt, id: u64) -> bool {
    rt.dvpp
        .channels
        .get(&id)
        .is_some_and(|c| c.created.is_some())
}

/// A DV3 finding and 100000.
fn dv3(rt: &mut Rt, call: &str, msg: String) -> i32 {
    rt.report("DV3", format!("{call}: {msg}; the call returns 100000"));
    errmsg::why(code::INVALID_PARAM, format!("{msg} (DV3)"))
}

/// The channel of description `id` for a task of `call` on stream `sid`: it exists and has
/// `mode` (DV3); its use by another thread or stream with tasks pending is a DV4 finding.
pub(super) fn channel_for_task(
    rt: &mut Rt,
    call: &str,
    id: u64,
    mode: u32,
    sid: u64,
) -> Result<i32, i32> {
    let Some(c) = rt.dvpp.channels.get(&id) else {
        return Err(code::INVALID_PARAM);
    };
    let Some((_, device)) = c.created else {
        let msg = format!(
            "{} has no channel (acldvppCreateChannel first, and not after acldvppDestroyChannel)",
            channel_name(id)
        );
        return Err(dv3(rt, call, msg));
    };
    // DV3: a channel serves the streams of the device it was created on.
    if let Some(on) = rt.streams.get(&sid).map(|s| s.device)
        && on != device
    {
        let msg = format!(
            "the channel of {} was created on device {device}, stream {:#x} is on device {on}: a channel serves the streams of its own device",
            channel_name(id),
            crate::sh(sid)
        );
        return Err(dv3(rt, call, msg));
    }
    let have = c.mode.unwrap_or(MODE_ALL);
    if have & mode == 0 {
        let what = if mode == MODE_VPC { "VPC" } else { "JPEGD" };
        let msg = format!(
            "the channel of {} was created with mode {have:#x}, without {what} ({mode}): set the mode with acldvppSetChannelDescMode before acldvppCreateChannel",
            channel_name(id)
        );
        return Err(dv3(rt, call, msg));
    }
    let me = (crate::pt::self_id(), sid);
    let last = c.last_user;
    let pending = c.uses > 0;
    if let Some((thread, stream)) = last
        && pending
        && (thread, stream) != me
    {
        let (what, other) = if stream != me.1 {
            ("streams", format!("stream {:#x}", crate::sh(stream)))
        } else {
            ("threads", format!("thread {thread:#x}"))
        };
        rt.report(
            "DV4",
            format!(
                "{call}: the channel of {} is used on stream {:#x} from thread {:#x} while its tasks from {other} are pending: a channel is not thread-safe and serves one stream at a time (one channel per thread and stream, or synchronize first); two {what}",
                channel_name(id),
                crate::sh(sid),
                me.0,
            ),
        );
    }
    if let Some(c) = rt.dvpp.channels.get_mut(&id) {
        c.last_user = Some(me);
    }
    Ok(device)
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppCreateChannelDesc() -> *mut c_void {
    calls::count(CallId::acldvppCreateChannelDesc);
    ffi_val(std::ptr::null_mut(), || {
        let mut g = enter("acldvppCreateChannelDesc", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = rt.new_id();
        rt.dvpp.channels.insert(
            id,
            Channel {
                mode: None,
                precision: ALIGN_DOWN_COMPAT,
                created: None,
                uses: 0,
                destroyed: false,
                last_user: None,
            },
        );
        Ok(new_handle(CHANNEL_BASE, id))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppDestroyChannelDesc(channelDesc: *mut c_void) -> i32 {
    calls::count(CallId::acldvppDestroyChannelDesc);
    ffi(|| {
        const CALL: &str = "acldvppDestroyChannelDesc";
        non_null(&[channelDesc as usize])?;
        let mut g = enter(CALL, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = channel_id(rt, CALL, channelDesc as usize)?;
        if has_channel(rt, id) {
            // DV3: the runtime's own answer.
            return Err(errmsg::why(
                code::RELATIVE_RESOURCE_NOT_CLEARED,
                "its channel exists: acldvppDestroyChannel first (DV3)",
            ));
        }
        let busy = users(rt, Some(id), None, None);
        if !busy.is_empty() {
            report_in_use(
                rt,
                CALL,
                format!("{} is destroyed", channel_name(id)),
                &busy,
            );
            if let Some(c) = rt.dvpp.channels.get_mut(&id) {
                c.destroyed = true;
            }
        } else {
            rt.dvpp.channels.remove(&id);
        }
        bury(rt, handle(CHANNEL_BASE, id), "channel description");
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppSetChannelDescMode(channelDesc: *mut c_void, mode: u32) -> i32 {
    calls::count(CallId::acldvppSetChannelDescMode);
    ffi(|| {
        const CALL: &str = "acldvppSetChannelDescMode";
        non_null(&[channelDesc as usize])?;
        let mut g = enter(CALL, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = channel_id(rt, CALL, channelDesc as usize)?;
        if mode == 0 || mode & !MODE_ALL != 0 {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("mode {mode:#x} is not an OR of DVPP_CHNMODE_* (1, 2, 4, 8)"),
            ));
        }
        if has_channel(rt, id) {
            let msg = format!(
                "{}: the mode is set before acldvppCreateChannel, not on a channel that exists",
                channel_name(id)
            );
            return Err(dv3(rt, CALL, msg));
        }
        if let Some(c) = rt.dvpp.channels.get_mut(&id) {
            c.mode = Some(mode);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppSetChannelDescParam(
    channelDesc: *mut c_void,
    paramType: i32,
    length: usize,
    param: *const c_void,
) -> i32 {
    calls::count(CallId::acldvppSetChannelDescParam);
    ffi(|| {
        const CALL: &str = "acldvppSetChannelDescParam";
        non_null(&[channelDesc as usize, param as usize])?;
        let mut g = enter(CALL, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = channel_id(rt, CALL, channelDesc as usize)?;
        // The value's size per parameter: uint32, uint64, or the precision mode's int32.
        let want = match paramType {
            0 | 1 | 3 | 4 | 5 => 4,
            2 => 8,
            other => {
                return Err(errmsg::why(
                    code::INVALID_PARAM,
                    format!("parameter type {other} is not an acldvppChannelDescParamType"),
                ));
            }
        };
        if length != want {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("parameter {paramType} takes {want} bytes, not {length}"),
            ));
        }
        if has_channel(rt, id) {
            let msg = format!(
                "{}: parameters are set before acldvppCreateChannel",
                channel_name(id)
            );
            return Err(dv3(rt, CALL, msg));
        }
        if paramType == 5 {
            let mut v = [0u8; 4];
            // SAFETY: non-NULL, and the caller passes `length` (4, checked) readable bytes.
            unsafe { std::ptr::copy(param.cast::<u8>(), v.as_mut_ptr(), 4) };
            let mode = i32::from_ne_bytes(v);
            if !matches!(mode, ALIGN_DOWN | ALIGN_UP | ALIGN_DOWN_COMPAT) {
                return Err(errmsg::why(
                    code::INVALID_PARAM,
                    format!("precision mode {mode} is not an acldvppJpegdPrecisionMode"),
                ));
            }
            if let Some(c) = rt.dvpp.channels.get_mut(&id) {
                c.precision = mode;
            }
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppCreateChannel(channelDesc: *mut c_void) -> i32 {
    calls::count(CallId::acldvppCreateChannel);
    ffi(|| {
        const CALL: &str = "acldvppCreateChannel";
        non_null(&[channelDesc as usize])?;
        let mut g = enter(CALL, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = channel_id(rt, CALL, channelDesc as usize)?;
        // DV2: in a current context (sim choice: 107002 otherwise).
        let ctx = rt.cur_ctx()?;
        let device = rt.contexts.get(&ctx).map_or(-1, |c| c.device);
        if has_channel(rt, id) {
            let msg = format!("{} already has a channel", channel_name(id));
            return Err(dv3(rt, CALL, msg));
        }
        if let Some(c) = rt.dvpp.channels.get_mut(&id) {
            c.created = Some((ctx, device));
            c.last_user = None;
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppDestroyChannel(channelDesc: *mut c_void) -> i32 {
    calls::count(CallId::acldvppDestroyChannel);
    ffi(|| {
        const CALL: &str = "acldvppDestroyChannel";
        non_null(&[channelDesc as usize])?;
        let mut g = enter(CALL, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = channel_id(rt, CALL, channelDesc as usize)?;
        if rt
            .dvpp
            .channels
            .get(&id)
            .is_none_or(|c| c.created.is_none())
        {
            let msg = format!("{} has no channel to destroy", channel_name(id));
            return Err(dv3(rt, CALL, msg));
        }
        // DV10: the tasks already issued still run (the simulator holds what they use).
        let busy = users(rt, Some(id), None, None);
        if !busy.is_empty() {
            let what = format!("the channel of {} is destroyed", channel_name(id));
            report_in_use(rt, CALL, what, &busy);
        }
        if let Some(c) = rt.dvpp.channels.get_mut(&id) {
            c.created = None;
        }
        Ok(())
    })
}
