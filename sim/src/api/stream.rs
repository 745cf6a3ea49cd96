//! Streams (S1-S4).
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`, `calls`, `pt`, `trace`),
//! never the reverse.

use std::ffi::c_void;
use std::time::{Duration, Instant};

use crate::calls::CallId;
use crate::exec::{WaitEnd, teardown_streams};
use crate::state::{ACL_EVENT_SYNC, TaskKind, code};
use crate::{
    Call, R, calls, check_out, enter, errmsg, exec, ffi, non_null, out, rt_of, sh, stream_for,
    timeout_ms,
};

#[unsafe(no_mangle)]
pub extern "C" fn aclrtCreateStream(stream: *mut *mut c_void) -> i32 {
    calls::count(CallId::aclrtCreateStream);
    ffi(|| {
        non_null(&[stream as usize])?;
        let mut g = enter("aclrtCreateStream", Call::Action)?;
        let rt = rt_of(&mut g)?;
        check_out(stream)?;
        let ctx = rt.cur_ctx()?; // D2
        let sid = exec::create_stream(rt, ctx, false)?;
        out(stream, sh(sid) as *mut c_void)?;
        super::stream_state::created(&mut g, sid); // S12
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyStream(stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtDestroyStream);
    ffi(|| {
        non_null(&[stream as usize])?;
        let mut g = enter("aclrtDestroyStream", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?; // S4: own context only
        super::stream_state::destroying(&mut g, sid); // S12
        // S4: the pending tasks and callbacks are waited for (with the deadlock watchdog),
        // then the stream is destroyed. A wait that can never end is diagnosed like a
        // synchronize: the call returns 507000 and the stream stays.
        let what = || format!("aclrtDestroyStream({:#x})", sh(sid));
        exec::wait_streams_idle(&mut g, None, &[sid], what).map_err(|e| match e {
            WaitEnd::Timeout | WaitEnd::Deadlock => code::RT_INTERNAL_ERROR,
            WaitEnd::Gone => code::UNINITIALIZE,
        })?;
        let rt = rt_of(&mut g)?;
        let sub = match rt.streams.get(&sid) {
            Some(s) if !s.dead => s.subscriber,
            // Destroyed meanwhile by another thread (a device reset, a context destroy).
            _ => return Err(code::RT_PARAM_INVALID),
        };
        if let Some(t) = sub {
            rt.report(
                "C1",
                format!(
                    "aclrtDestroyStream({:#x}) while thread {t:#x} is still subscribed to it: call aclrtUnSubscribeReport first (C1 step 5)",
                    sh(sid)
                ),
            );
        }
        super::hostsub::report_destroy_of_subscribed(rt, sid, "aclrtDestroyStream");
        teardown_streams(&mut g, vec![sid]);
        Ok(())
    })
}

fn sync_stream(stream: *mut c_void, timeout: Option<i32>, name: &str) -> R {
    let mut g = enter(name, Call::Action)?;
    let timeout = timeout.map_or(Ok(None), timeout_ms)?;
    let rt = rt_of(&mut g)?;
    let sid = stream_for(rt, stream as usize, true)?;
    let deadline = timeout.map(|d| Instant::now() + d);
    let what = || format!("{name}({:#x})", sh(sid));
    // S2: every task done, and every callback launched before the call has run (C5).
    exec::wait_streams_idle(&mut g, deadline, &[sid], what).map_err(|e| match e {
        WaitEnd::Timeout => code::RT_STREAM_SYNC_TIMEOUT, // S3
        WaitEnd::Deadlock => code::RT_INTERNAL_ERROR,
        WaitEnd::Gone => code::UNINITIALIZE,
    })?;
    let rt = rt_of(&mut g)?;
    // S2, P3, P5, S6: an asynchronous failure is reported once.
    match rt.streams.get_mut(&sid).and_then(|s| {
        s.inherited_error = None;
        s.async_error.take()
    }) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeStream(stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtSynchronizeStream);
    ffi(|| sync_stream(stream, None, "aclrtSynchronizeStream"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeStreamWithTimeout(stream: *mut c_void, timeout: i32) -> i32 {
    calls::count(CallId::aclrtSynchronizeStreamWithTimeout);
    ffi(|| sync_stream(stream, Some(timeout), "aclrtSynchronizeStreamWithTimeout"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtStreamWaitEvent(stream: *mut c_void, event: *mut c_void) -> i32 {
    calls::count(CallId::aclrtStreamWaitEvent);
    ffi(|| {
        non_null(&[event as usize])?;
        let mut g = enter("aclrtStreamWaitEvent", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let eid = rt.event_id(event as usize)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        let e = rt.events.get(&eid).ok_or(code::RT_PARAM_INVALID)?;
        if !e.plain && e.flags & ACL_EVENT_SYNC == 0 {
            return Err(code::RT_FEATURE_NOT_SUPPORT); // E7
        }
        if e.plain && e.records_issued == 0 {
            // E1: plain event never recorded.
            return Err(errmsg::why(
                code::RT_PARAM_INVALID,
                "event was never recorded (E1: record it before waiting)",
            ));
        }
        // A plain event waits for the records issued before the wait (it is never reset).
        let after = e.plain.then_some(e.records_issued);
        let timeout =
            (rt.op_wait_timeout > 0).then(|| Duration::from_secs(u64::from(rt.op_wait_timeout))); // P3
        exec::enqueue(
            rt,
            sid,
            TaskKind::Wait {
                ev: eid,
                timeout,
                after,
            },
            Vec::new(),
        );
        Ok(())
    })
}
