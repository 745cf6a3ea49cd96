//! Streams beyond the seeds (S5-S8): configured creation, forced destruction, status query,
//! failure mode.
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`, `calls`, `pt`, `trace`),
//! never the reverse.

use std::ffi::c_void;

use crate::calls::CallId;
use crate::exec::teardown_streams;
use crate::extra::STOP_ON_FAILURE;

use super::stream_state::DEVICE_USE_ONLY;
use crate::state::code;
use crate::{Call, calls, enter, errmsg, exec, ffi, non_null, out, rt_of, sh, stream_for};

/// `ACL_STREAM_FAST_LAUNCH | FAST_SYNC | PERSISTENT | HUGE | CPU_SCHEDULE |
/// DEVICE_USE_ONLY` (S7).
const STREAM_FLAGS: u32 = 0x3f;
/// Highest stream priority (S7).
const MAX_PRIORITY: u32 = 7;

/// S7: an ordinary stream (S1-S6) created with a priority and flags, which the simulator
/// records and otherwise ignores.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtCreateStreamWithConfig(
    stream: *mut *mut c_void,
    priority: u32,
    flag: u32,
) -> i32 {
    calls::count(CallId::aclrtCreateStreamWithConfig);
    ffi(|| {
        non_null(&[stream as usize])?;
        let mut g = enter("aclrtCreateStreamWithConfig", Call::Action)?;
        let rt = rt_of(&mut g)?;
        if priority > MAX_PRIORITY {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("priority {priority} is out of range 0-{MAX_PRIORITY} (S7)"),
            ));
        }
        if flag & !STREAM_FLAGS != 0 {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("unknown stream flag bits {:#x} (S7)", flag & !STREAM_FLAGS),
            ));
        }
        if flag & DEVICE_USE_ONLY != 0 && flag != DEVICE_USE_ONLY {
            return Err(errmsg::why(
                code::RT_PARAM_INVALID,
                format!("ACL_STREAM_DEVICE_USE_ONLY is used alone, not with {flag:#x} (S7)"),
            ));
        }
        let ctx = rt.cur_ctx()?; // D2
        let sid = exec::create_stream(rt, ctx, false)?;
        let x = rt.extra.streams.entry(sid).or_default();
        x.priority = priority;
        x.flags = flag;
        out(stream, sh(sid) as *mut c_void)?;
        super::stream_state::created(&mut g, sid); // S12
        Ok(())
    })
}

/// S8: destroys the stream without waiting: its pending tasks are dropped and never run
/// (a task whose body is running already finishes first: the call waits for it).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyStreamForce(stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtDestroyStreamForce);
    ffi(|| {
        non_null(&[stream as usize])?;
        let mut g = enter("aclrtDestroyStreamForce", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?; // S8: own context only (107003)
        super::stream_state::destroying(&mut g, sid); // S12
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?; // destroyed meanwhile: 107000
        if let Some(t) = rt.streams.get(&sid).and_then(|s| s.subscriber) {
            // The dropped callbacks are what "force" means (no finding); the subscription
            // is a resource the program should have released first (C1 step 5), as for S4.
            rt.report(
                "C1",
                format!(
                    "aclrtDestroyStreamForce({:#x}) while thread {t:#x} is still subscribed to it: call aclrtUnSubscribeReport first (C1 step 5)",
                    sh(sid)
                ),
            );
        }
        super::hostsub::report_destroy_of_subscribed(rt, sid, "aclrtDestroyStreamForce");
        report_discarded(rt, sid);
        teardown_streams(&mut g, vec![sid]);
        Ok(())
    })
}

/// S8: what a forced destroy is about to discard (every queued task but one already
/// running), one finding each, like a leak: the program learns why a result is missing.
fn report_discarded(rt: &mut crate::state::Rt, sid: u64) {
    let Some(s) = rt.streams.get(&sid) else {
        return;
    };
    let running = s
        .tasks
        .front()
        .is_some_and(|t| t.state == crate::state::TaskState::Running);
    let lost: Vec<String> = s
        .tasks
        .iter()
        .skip(usize::from(running))
        .map(|t| format!("task #{} ({})", t.id, task_label(&t.kind)))
        .collect();
    for task in lost {
        rt.report(
            "S8",
            format!(
                "aclrtDestroyStreamForce({:#x}) discarded {task} without running it: whatever it was to produce is lost",
                sh(sid)
            ),
        );
    }
}

fn task_label(kind: &crate::state::TaskKind) -> String {
    use crate::state::TaskKind as K;
    match kind {
        K::Copy { count, .. } => format!("a copy of {count} bytes"),
        K::Set { count, .. } => format!("a memset of {count} bytes"),
        K::Kernel { .. } => "a kernel".to_owned(),
        K::Record { ev } => format!("a record of event {:#x}", sh(*ev)),
        K::Wait { ev, .. } => format!("a wait on event {:#x}", sh(*ev)),
        K::Reset { ev } => format!("a reset of event {:#x}", sh(*ev)),
        K::Callback { .. } => "a callback".to_owned(),
        K::HostFunc { .. } => "a host function".to_owned(),
        K::Model(_) => "a model execution".to_owned(),
        K::Dvpp(_) => "a media task (DVPP)".to_owned(),
    }
}

/// S5: COMPLETE (0) when every task issued on the stream is done (and every callback
/// launched on it has run, as for S2), else NOT_READY (1). A query: allowed inside
/// callbacks; waits for nothing; does not consume asynchronous errors.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtStreamQuery(stream: *mut c_void, status: *mut i32) -> i32 {
    calls::count(CallId::aclrtStreamQuery);
    ffi(|| {
        non_null(&[status as usize])?;
        let mut g = enter("aclrtStreamQuery", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        let done = rt
            .streams
            .get(&sid)
            .is_none_or(|s| s.tasks.is_empty() && s.cb_outstanding == 0);
        out(status, if done { 0 } else { 1 })
    })
}

/// S6: CONTINUE (0) or STOP (1) on failure; at most once per stream, never on the default
/// stream (107000 and an S6 finding).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetStreamFailureMode(stream: *mut c_void, mode: u64) -> i32 {
    calls::count(CallId::aclrtSetStreamFailureMode);
    ffi(|| {
        let mut g = enter("aclrtSetStreamFailureMode", Call::Action)?;
        let rt = rt_of(&mut g)?;
        if mode > STOP_ON_FAILURE {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("unknown failure mode {mode} (S6: 0 continue, 1 stop)"),
            ));
        }
        let sid = stream_for(rt, stream as usize, true)?; // D6
        if rt.streams.get(&sid).is_some_and(|s| s.is_default) {
            rt.report(
                "S6",
                "aclrtSetStreamFailureMode on the default stream: the failure mode can only be set on a created stream (Atlas 200I/500 A2); the simulator rejects the call with 107000".to_string(),
            );
            return Err(errmsg::why(
                code::RT_PARAM_INVALID,
                "not on the default stream (S6)",
            ));
        }
        if rt
            .extra
            .streams
            .get(&sid)
            .is_some_and(|x| x.flags & DEVICE_USE_ONLY != 0)
        {
            return Err(errmsg::why(
                code::RT_FEATURE_NOT_SUPPORT,
                "no failure mode on an ACL_STREAM_DEVICE_USE_ONLY stream (S7)",
            ));
        }
        let x = rt.extra.streams.entry(sid).or_default();
        if let Some(old) = x.failure_mode {
            rt.report(
                "S6",
                format!(
                    "aclrtSetStreamFailureMode({:#x}, {mode}): the failure mode of this stream was already set (to {old}); set it once, right after creating the stream; the simulator rejects the call with 107000",
                    sh(sid)
                ),
            );
            return Err(errmsg::why(
                code::RT_PARAM_INVALID,
                "the failure mode of this stream was already set (S6: at most once)",
            ));
        }
        x.failure_mode = Some(mode);
        Ok(())
    })
}
