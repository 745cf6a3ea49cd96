//! Host functions (C10): `aclrtLaunchHostFunc`, and the rule that keeps them apart from
//! report callbacks on one stream (C11).
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`, `calls`, `pt`, `trace`),
//! never the reverse.

use std::ffi::c_void;

use crate::calls::CallId;
use crate::state::{CbFn, Rt, TaskKind, code};
use crate::{Call, R, calls, enter, errmsg, exec, ffi, rt_of, sh, stream_for};

/// C11: the report-callback family (`aclrtSubscribeReport`, `aclrtLaunchCallback`,
/// `aclrtUnSubscribeReport`) is refused on a stream on which a host function was ever
/// launched (the runtime keeps its internal subscription of such a stream until the stream
/// is destroyed): 107011 (`ACL_ERROR_RT_STREAM_SUBSCRIBE`) and a C11 finding.
pub(super) fn refuse_report_family(rt: &mut Rt, sid: u64, call: &str) -> R {
    let n = rt.extra.streams.get(&sid).map_or(0, |x| x.host_funcs);
    if n == 0 {
        return Ok(());
    }
    rt.report(
        "C11",
        format!(
            "{call} on stream {:#x}, on which {n} host function(s) were launched (aclrtLaunchHostFunc): the report-callback functions and aclrtLaunchHostFunc are never mixed on one stream; use another stream for callbacks; the call returns 107011",
            sh(sid)
        ),
    );
    Err(errmsg::why(
        code::RT_STREAM_SUBSCRIBE,
        "host functions were launched on this stream: no report callbacks on it (C11)",
    ))
}

/// Enqueues `fn(args)`: the stream's worker runs it once the earlier tasks of the stream
/// are done, and the later tasks wait for it (C10). NULL stream: the default stream. Not on
/// a stream subscribed by `aclrtSubscribeReport` (C11).
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
                "C11",
                format!(
                    "aclrtLaunchHostFunc on stream {:#x}, to which thread {t:#x} is subscribed (aclrtSubscribeReport): the report-callback functions and aclrtLaunchHostFunc are never mixed on one stream; use aclrtLaunchCallback there, or a stream without subscription; the call returns 107011",
                    sh(sid)
                ),
            );
            return Err(errmsg::why(
                code::RT_STREAM_SUBSCRIBE,
                "the stream is subscribed to a report thread: no host function on it (C11)",
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
