//! Context and thread queries and error reporting of CANN 8.x/9.x (D9, D10, P6):
//! `aclrtCtxGetCurrentDefaultStream`, `aclrtGetResInCurrentThread`, `aclrtGetLastError`,
//! `aclrtPeekAtLastError`, `aclrtGetErrorVerbose`.
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers, `api::info`
//! (the simulated core counts) and every layer below, never the reverse.

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::calls::CallId;
use crate::state::{G, code};
use crate::{Call, calls, enter, errmsg, ffi, non_null, out, rt_of, sh, stream_for};

use super::info::{AI_CORE_NUM, VECTOR_CORE_NUM};

/// D9: a real handle of the current context's default stream (created if needed).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtCtxGetCurrentDefaultStream(stream: *mut *mut c_void) -> i32 {
    calls::count(CallId::aclrtCtxGetCurrentDefaultStream);
    ffi(|| {
        non_null(&[stream as usize])?;
        let mut g = enter("aclrtCtxGetCurrentDefaultStream", Call::Query)?;
        let rt = rt_of(&mut g)?;
        rt.cur_ctx()?; // 107002
        let sid = stream_for(rt, 0, false)?;
        out(stream, sh(sid) as *mut c_void)
    })
}

/// D10: the cube (0) or vector (1) cores the calling thread's work may use: the simulated
/// device's counts (no limit can be set in the simulator). Other types: 107000.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetResInCurrentThread(kind: i32, value: *mut u32) -> i32 {
    calls::count(CallId::aclrtGetResInCurrentThread);
    ffi(|| {
        non_null(&[value as usize])?;
        let mut g = enter("aclrtGetResInCurrentThread", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let n = match kind {
            0 => AI_CORE_NUM,
            1 => VECTOR_CORE_NUM,
            _ => {
                return Err(errmsg::why(
                    code::RT_PARAM_INVALID,
                    format!("unknown resource type {kind} (D10: 0 cube, 1 vector)"),
                ));
            }
        };
        rt.cur_ctx()?; // 107002
        out(value, u32::try_from(n).unwrap_or(0))
    })
}

/// P6: the thread's last runtime error, reset (`take`) or kept. Its answer is the code,
/// so it is not a failed call: it leaves the recent error message and the last error alone.
fn last_error(level: i32, take: bool) -> i32 {
    catch_unwind(AssertUnwindSafe(|| {
        if level != 0 {
            return code::INVALID_PARAM;
        }
        if G.lock().rt.is_none() {
            return code::UNINITIALIZE; // P1
        }
        errmsg::last_runtime_error(take)
    }))
    .unwrap_or(code::INTERNAL_ERROR)
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetLastError(level: i32) -> i32 {
    calls::count(CallId::aclrtGetLastError);
    last_error(level, true)
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtPeekAtLastError(level: i32) -> i32 {
    calls::count(CallId::aclrtPeekAtLastError);
    last_error(level, false)
}

/// `aclrtErrorInfo` (P6), LP64: 2576 bytes; `detail` a union of 2568 bytes.
#[repr(C)]
pub struct ErrorInfo {
    pub try_repair: u8,
    pub has_detail: u8,
    pub reserved: [u8; 2],
    pub error_type: u32,
    pub detail: [u64; 321],
}
const _: () = assert!(size_of::<ErrorInfo>() == 2576);
/// `ACL_RT_NO_ERROR`, `ACL_RT_ERROR_OTHERS`.
const NO_ERROR: u32 = 0;
const ERROR_OTHERS: u32 = 0xFFFF;

/// P6: the device's fault: `ACL_RT_ERROR_OTHERS` while a stream of the device holds an
/// unreported task failure, else `ACL_RT_NO_ERROR`; never repairable, no detail.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetErrorVerbose(deviceId: i32, errorInfo: *mut ErrorInfo) -> i32 {
    calls::count(CallId::aclrtGetErrorVerbose);
    ffi(|| {
        non_null(&[errorInfo as usize])?;
        let mut g = enter("aclrtGetErrorVerbose", Call::Query)?;
        let rt = rt_of(&mut g)?;
        if deviceId < 0 || deviceId as u32 >= rt.device_count {
            return Err(code::RT_INVALID_DEVICEID);
        }
        let failed = rt
            .streams
            .values()
            .any(|s| !s.dead && s.device == deviceId && s.async_error.is_some());
        let info = ErrorInfo {
            try_repair: 0,
            has_detail: 0,
            reserved: [0; 2],
            error_type: if failed { ERROR_OTHERS } else { NO_ERROR },
            detail: [0; 321],
        };
        out(errorInfo, info)
    })
}
