//! Stream control and state callbacks of CANN 8.5/9.x (S11, S12): `aclrtStreamStop`,
//! `aclrtStreamAbort`, `aclrtRegStreamStateCallback`, and the calls of the registered
//! callbacks when a stream is created or destroyed.
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below, never the reverse.

use std::ffi::{CStr, c_char, c_void};

use crate::calls::CallId;
use crate::extra::StateFn;
use crate::pt::PGuard;
use crate::state::{Global, code};
use crate::{Call, calls, enter, errmsg, ffi, non_null, rt_of, sh, stream_for};

/// `ACL_STREAM_DEVICE_USE_ONLY` (S7, S11).
pub(super) const DEVICE_USE_ONLY: u32 = 0x20;
/// `ACL_RT_STREAM_STATE_CREATE_POST` and `ACL_RT_STREAM_STATE_DESTROY_PRE` (S12).
const CREATE_POST: i32 = 1;
const DESTROY_PRE: i32 = 2;

/// S12: calls every registered callback, in name order, with the lock released, on the
/// calling thread.
fn fire(g: &mut PGuard<'static, Global>, sid: u64, state: i32) {
    let list: Vec<(StateFn, usize)> = match g.rt.as_deref() {
        Some(rt) if !rt.extra.state_callbacks.is_empty() => {
            rt.extra.state_callbacks.values().copied().collect()
        }
        _ => return,
    };
    let h = sh(sid) as *mut c_void;
    g.unlocked(|| {
        for (f, args) in list {
            // SAFETY: a callback and its argument as registered by
            // aclrtRegStreamStateCallback (the caller keeps both valid while registered).
            unsafe { f(h, state, args as *mut c_void) };
        }
    });
}

/// S12: a stream was created (`aclrtCreateStream`, `WithConfig`, `V2`).
pub(super) fn created(g: &mut PGuard<'static, Global>, sid: u64) {
    fire(g, sid, CREATE_POST);
}

/// S12: a stream is about to be destroyed (`aclrtDestroyStream`, `aclrtDestroyStreamForce`).
pub(super) fn destroying(g: &mut PGuard<'static, Global>, sid: u64) {
    fire(g, sid, DESTROY_PRE);
}

/// The registration name (S12), copied.
fn reg_name(p: *const c_char) -> String {
    // SAFETY: non-NULL (checked first by the caller), a NUL-terminated string (the API
    // contract of aclrtRegStreamStateCallback).
    let name = unsafe { CStr::from_ptr(p) };
    name.to_string_lossy().into_owned()
}

/// S12: registers `callback` under `regName` (NULL name: 100000; a name already registered:
/// 107000); a NULL callback unregisters the name (always succeeds).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtRegStreamStateCallback(
    regName: *const c_char,
    callback: Option<StateFn>,
    args: *mut c_void,
) -> i32 {
    calls::count(CallId::aclrtRegStreamStateCallback);
    ffi(|| {
        non_null(&[regName as usize])?;
        let mut g = enter("aclrtRegStreamStateCallback", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let name = reg_name(regName);
        let Some(f) = callback else {
            rt.extra.state_callbacks.remove(&name);
            return Ok(());
        };
        if rt.extra.state_callbacks.contains_key(&name) {
            return Err(errmsg::why(
                code::RT_PARAM_INVALID,
                format!("a stream state callback is already registered as {name:?} (S12)"),
            ));
        }
        rt.extra.state_callbacks.insert(name, (f, args as usize));
        Ok(())
    })
}

/// S11: halts the task the stream is executing; its queued tasks stay. The simulator cannot
/// interrupt a task body running on the CPU: it lets it finish, so the call only checks.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtStreamStop(stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtStreamStop);
    ffi(|| {
        let mut g = enter("aclrtStreamStop", Call::Action)?;
        let rt = rt_of(&mut g)?;
        if stream.is_null() {
            return Err(errmsg::why(
                code::RT_PARAM_INVALID,
                "aclrtStreamStop needs a stream (S11: not the default stream)",
            ));
        }
        stream_for(rt, stream as usize, true)?; // D6
        Ok(())
    })
}

/// S11: discards the stream's tasks that have not started (a running body finishes); the
/// stream stays usable. NULL: 100000. Not for `ACL_STREAM_DEVICE_USE_ONLY` streams (107000
/// and an S11 finding).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtStreamAbort(stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtStreamAbort);
    ffi(|| {
        non_null(&[stream as usize])?;
        let mut g = enter("aclrtStreamAbort", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        let flags = rt.extra.streams.get(&sid).map_or(0, |x| x.flags);
        if flags & DEVICE_USE_ONLY != 0 {
            rt.report(
                "S11",
                format!(
                    "aclrtStreamAbort({:#x}) on an ACL_STREAM_DEVICE_USE_ONLY stream: such a stream is used by device code only and cannot be aborted; the simulator rejects the call with 107000",
                    sh(sid)
                ),
            );
            return Err(errmsg::why(
                code::RT_PARAM_INVALID,
                "not for an ACL_STREAM_DEVICE_USE_ONLY stream (S11)",
            ));
        }
        crate::extra::abort_stream(rt, sid);
        Ok(())
    })
}
