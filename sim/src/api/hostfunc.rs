//! Host functions (C10): `aclrtLaunchHostFunc`.
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`, `calls`, `pt`, `trace`),
//! never the reverse.

use std::ffi::c_void;

use crate::calls::CallId;
use crate::state::{CbFn, Rt, TaskKind, code};
use crate::{Call, R, calls, enter, errmsg, exec, ffi, rt_of, sh, stream_for};

/// C10: host functions and callbacks are never mixed on one stream. A stream on which a host
/// function was ever launched cannot be subscribed (decision: "ever", not "while one is
/// pending", so the answer never depends on timing; the runtime binds such a stream to its
/// own thread for good).
pub(super) fn reject_subscription(rt: &mut Rt, sid: u64, thread: u64) -> R {
    let n = rt.extra.streams.get(&sid).map_or(0, |x| x.host_funcs);
    if n == 0 {
        return Ok(());
    }
    rt.report(
        "C10",
        format!(
            "aclrtSubscribeReport({thread:#x}, {:#x}): {n} host function(s) were launched on this stream; host functions and callbacks are never mixed on one stream: use another stream for aclrtLaunchCallback; the simulator rejects the call with 107000",
            sh(sid)
        ),
    );
    Err(errmsg::why(
        code::RT_PARAM_INVALID,
        "host functions were launched on this stream; it cannot be subscribed (C10)",
    ))
}

/// Enqueues `fn(args)`: the stream's worker runs it once the earlier tasks of the stream
/// are done, and the later tasks wait for it (C10). NULL stream: the default stream.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtLaunchHostFunc(
    stream: *mut c_void,
    fn_: Option<CbFn>,
    args: *mut c_void,
) -> i32 {
    calls::count(CallId::aclrtLaunchHostFunc);
    ffi(|| {
        let f = fn_.ok_or(code::INVALID_PARAM)?; // NULL first (P1)
        let mut g = enter("aclrtLaunchHostFunc", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        if let Some(t) = rt.streams.get(&sid).and_then(|s| s.subscriber) {
            rt.report(
                "C10",
                format!(
                    "aclrtLaunchHostFunc on stream {:#x}, to which thread {t:#x} is subscribed (aclrtSubscribeReport): host functions and callbacks are never mixed on one stream; use aclrtLaunchCallback there, or a stream without subscription; the simulator rejects the call with 107000",
                    sh(sid)
                ),
            );
            return Err(errmsg::why(
                code::RT_PARAM_INVALID,
                "the stream is subscribed to a report thread: no host function on it (C10)",
            ));
        }
        rt.extra.streams.entry(sid).or_default().host_funcs += 1;
        exec::enqueue(
            rt,
            sid,
            TaskKind::HostFunc {
                f,
                ud: args as usize,
            },
            Vec::new(),
        );
        Ok(())
    })
}
