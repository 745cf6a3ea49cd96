//! Operator execution timeouts (P5). The limit applies to the kernels
//! (`aclsimLaunchKernel`) issued after it is set: a kernel whose duration exceeds it is
//! stopped at the limit (its body never runs) and fails asynchronously with 107020, which
//! the next synchronize reports. 0 means no limit (the default after aclInit). A limit above
//! the longest one CANN documents (2176 s) is capped there, as the runtime caps the
//! hardware's timeout count (`actualTimeout` reports the capped value).
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`, `calls`, `pt`, `trace`),
//! never the reverse.

use crate::calls::CallId;
use crate::extra::{MAX_OP_EXEC_TIMEOUT_US, OP_TIMEOUT_INTERVAL_US, round_timeout};
use crate::state::code;
use crate::{Call, R, calls, enter, errmsg, ffi, non_null, out, rt_of};

fn set_timeout(name: &str, us: u64, actual: *mut u64) -> R {
    let mut g = enter(name, Call::Action)?;
    let rt = rt_of(&mut g)?;
    let rounded = round_timeout(us).ok_or_else(|| {
        errmsg::why(
            code::INVALID_PARAM,
            "timeout out of range (overflows when rounded up to the interval)",
        )
    })?;
    // P5: at most the longest documented limit (a multiple of the interval).
    let rounded = rounded.min(MAX_OP_EXEC_TIMEOUT_US);
    rt.extra.op_exec_timeout_us = rounded;
    if !actual.is_null() {
        out(actual, rounded)?;
    }
    Ok(())
}

/// P5: the limit in seconds, rounded up to a multiple of the interval, at most 2176 s.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetOpExecuteTimeOut(timeout: u32) -> i32 {
    calls::count(CallId::aclrtSetOpExecuteTimeOut);
    ffi(|| {
        set_timeout(
            "aclrtSetOpExecuteTimeOut",
            u64::from(timeout) * 1_000_000,
            std::ptr::null_mut(),
        )
    })
}

/// P5: the limit in µs, rounded up to a multiple of the interval, at most 2176 s;
/// `actualTimeout` receives the value in effect.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetOpExecuteTimeOutV2(timeout: u64, actualTimeout: *mut u64) -> i32 {
    calls::count(CallId::aclrtSetOpExecuteTimeOutV2);
    ffi(|| {
        non_null(&[actualTimeout as usize])?;
        set_timeout("aclrtSetOpExecuteTimeOutV2", timeout, actualTimeout)
    })
}

/// P5: the granularity, in µs.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetOpTimeOutInterval(interval: *mut u64) -> i32 {
    calls::count(CallId::aclrtGetOpTimeOutInterval);
    ffi(|| {
        non_null(&[interval as usize])?;
        let _g = enter("aclrtGetOpTimeOutInterval", Call::Query)?;
        out(interval, OP_TIMEOUT_INTERVAL_US)
    })
}

/// P5: the limit in effect, in ms (rounded down; saturating at `u32::MAX`).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetOpExecuteTimeout(timeoutMs: *mut u32) -> i32 {
    calls::count(CallId::aclrtGetOpExecuteTimeout);
    ffi(|| {
        non_null(&[timeoutMs as usize])?;
        let mut g = enter("aclrtGetOpExecuteTimeout", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let ms = rt.extra.op_exec_timeout_us / 1000;
        out(timeoutMs, u32::try_from(ms).unwrap_or(u32::MAX))
    })
}
