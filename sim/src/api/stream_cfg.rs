//! Stream configuration handles and queries of CANN 8.x/9.x (S9, S10):
//! `aclrtCreateStreamConfigHandle`, `aclrtDestroyStreamConfigHandle`,
//! `aclrtSetStreamConfigOpt`, `aclrtCreateStreamV2`, `aclrtStreamGetFlags`,
//! `aclrtStreamGetPriority`, `aclrtStreamGetId`.
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers, `api::stream_state`
//! (S12) and every layer below, never the reverse.

use std::ffi::c_void;

use crate::calls::CallId;
use crate::extra::StreamConfig;
use crate::pt::PGuard;
use crate::state::{Global, Rt, code};
use crate::{Call, calls, enter, errmsg, exec, ffi, non_null, out, rt_of, sh, stream_for};

/// Highest (numerically largest) stream priority; 0 is the highest priority (S9, S10).
const MAX_PRIORITY: u32 = 7;
const WORK_ADDR_PTR: i32 = 0;
const WORK_SIZE: i32 = 1;
const FLAG: i32 = 2;
const PRIORITY: i32 = 3;

/// S9: a zeroed configuration the simulator owns until `aclrtDestroyStreamConfigHandle`
/// (or `aclFinalize`); NULL before `aclInit`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtCreateStreamConfigHandle() -> *mut StreamConfig {
    calls::count(CallId::aclrtCreateStreamConfigHandle);
    let mut made: *mut StreamConfig = std::ptr::null_mut();
    let rc = ffi(|| {
        let mut g = enter("aclrtCreateStreamConfigHandle", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let mut b = Box::new(StreamConfig::default());
        made = &mut *b;
        rt.extra.config_handles.insert(made as usize, b);
        Ok(())
    });
    if rc == code::SUCCESS {
        made
    } else {
        std::ptr::null_mut()
    }
}

/// The live configuration at `h` (S9): an unknown or destroyed address is 100000 and an S9
/// finding.
fn config<'a>(rt: &'a mut Rt, h: usize, call: &str) -> Result<&'a mut StreamConfig, i32> {
    if !rt.extra.config_handles.contains_key(&h) {
        rt.report(
            "S9",
            format!(
                "{call}({h:#x}): not a live stream configuration handle (never created by aclrtCreateStreamConfigHandle, or destroyed); the simulator rejects the call with 100000"
            ),
        );
        return Err(errmsg::why(
            code::INVALID_PARAM,
            "not a live stream configuration handle (S9)",
        ));
    }
    rt.extra
        .config_handles
        .get_mut(&h)
        .map(|b| &mut **b)
        .ok_or(code::INVALID_PARAM)
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyStreamConfigHandle(handle: *mut StreamConfig) -> i32 {
    calls::count(CallId::aclrtDestroyStreamConfigHandle);
    ffi(|| {
        non_null(&[handle as usize])?;
        let mut g = enter("aclrtDestroyStreamConfigHandle", Call::Action)?;
        let rt = rt_of(&mut g)?;
        config(rt, handle as usize, "aclrtDestroyStreamConfigHandle")?;
        rt.extra.config_handles.remove(&(handle as usize));
        Ok(())
    })
}

/// S9: one attribute, `valueSize` the exact size of its type, the priority 0-7; anything
/// else 100000.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetStreamConfigOpt(
    handle: *mut StreamConfig,
    attr: i32,
    attrValue: *const c_void,
    valueSize: usize,
) -> i32 {
    calls::count(CallId::aclrtSetStreamConfigOpt);
    ffi(|| {
        non_null(&[handle as usize, attrValue as usize])?;
        let mut g = enter("aclrtSetStreamConfigOpt", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let cfg = config(rt, handle as usize, "aclrtSetStreamConfigOpt")?;
        let want = match attr {
            WORK_ADDR_PTR | WORK_SIZE | FLAG => size_of::<usize>(),
            PRIORITY => size_of::<u32>(),
            _ => {
                return Err(errmsg::why(
                    code::INVALID_PARAM,
                    format!("unknown stream configuration attribute {attr} (S9: 0-3)"),
                ));
            }
        };
        if valueSize != want {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("attribute {attr} takes {want} bytes, not {valueSize} (S9)"),
            ));
        }
        let p = attrValue.cast::<u8>();
        if attr == PRIORITY {
            let mut b = [0u8; 4];
            // SAFETY: non-NULL, and the caller says `valueSize` (== 4) bytes are readable.
            unsafe { std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), 4) };
            let v = u32::from_ne_bytes(b);
            if v > MAX_PRIORITY {
                return Err(errmsg::why(
                    code::INVALID_PARAM,
                    format!("priority {v} is out of range 0-{MAX_PRIORITY} (S9)"),
                ));
            }
            cfg.priority = v;
            return Ok(());
        }
        let mut b = [0u8; size_of::<usize>()];
        // SAFETY: non-NULL, and the caller says `valueSize` (== the size of usize) bytes
        // are readable.
        unsafe { std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), b.len()) };
        let v = usize::from_ne_bytes(b);
        match attr {
            WORK_ADDR_PTR => cfg.workptr = v,
            WORK_SIZE => cfg.work_size = v,
            _ => cfg.flag = v,
        }
        Ok(())
    })
}

/// S9: a stream with the handle's priority (NULL handle: the defaults). The work memory
/// and the reserved flag are recorded and otherwise ignored.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtCreateStreamV2(
    stream: *mut *mut c_void,
    handle: *const StreamConfig,
) -> i32 {
    calls::count(CallId::aclrtCreateStreamV2);
    ffi(|| {
        non_null(&[stream as usize])?;
        let mut g = enter("aclrtCreateStreamV2", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let priority = if handle.is_null() {
            0
        } else {
            // The caller may have written the public fields directly.
            config(rt, handle as usize, "aclrtCreateStreamV2")?.priority
        };
        if priority > MAX_PRIORITY {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("priority {priority} is out of range 0-{MAX_PRIORITY} (S9)"),
            ));
        }
        let ctx = rt.cur_ctx()?; // D2
        let sid = exec::create_stream(rt, ctx, false)?;
        rt.extra.streams.entry(sid).or_default().priority = priority;
        out(stream, sh(sid) as *mut c_void)?;
        super::stream_state::created(&mut g, sid);
        Ok(())
    })
}

/// Resolves the stream of a query (S10): NULL output first (100000), then P1, then the
/// handle (NULL: the current context's default stream).
fn query_stream(
    name: &str,
    stream: *mut c_void,
    o: usize,
) -> Result<(PGuard<'static, Global>, u64), i32> {
    non_null(&[o])?;
    let mut g = enter(name, Call::Query)?;
    let rt = rt_of(&mut g)?;
    let sid = stream_for(rt, stream as usize, false)?;
    Ok((g, sid))
}

/// S10: the flags the stream was created with (0 for `aclrtCreateStream`, `V2` and the
/// default stream).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtStreamGetFlags(stream: *mut c_void, flags: *mut u32) -> i32 {
    calls::count(CallId::aclrtStreamGetFlags);
    ffi(|| {
        let (mut g, sid) = query_stream("aclrtStreamGetFlags", stream, flags as usize)?;
        let rt = rt_of(&mut g)?;
        let v = rt.extra.streams.get(&sid).map_or(0, |x| x.flags);
        out(flags, v)
    })
}

/// S10: the stream's priority (0, the highest, unless configured).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtStreamGetPriority(stream: *mut c_void, priority: *mut u32) -> i32 {
    calls::count(CallId::aclrtStreamGetPriority);
    ffi(|| {
        let (mut g, sid) = query_stream("aclrtStreamGetPriority", stream, priority as usize)?;
        let rt = rt_of(&mut g)?;
        let v = rt.extra.streams.get(&sid).map_or(0, |x| x.priority);
        out(priority, v)
    })
}

/// S10: the stream's id, unique in the process (ids are never reused).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtStreamGetId(stream: *mut c_void, streamId: *mut i32) -> i32 {
    calls::count(CallId::aclrtStreamGetId);
    ffi(|| {
        let (_g, sid) = query_stream("aclrtStreamGetId", stream, streamId as usize)?;
        out(streamId, i32::try_from(sid).unwrap_or(i32::MAX))
    })
}
