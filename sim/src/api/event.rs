//! Events (E1-E9).
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`, `calls`, `pt`, `trace`),
//! never the reverse.

use std::ffi::c_void;
use std::time::Instant;

use crate::calls::CallId;
use crate::exec::{WaitEnd, Watch, host_wait};
use crate::state::{
    ACL_EVENT_CAPTURE_STREAM_PROGRESS, ACL_EVENT_SYNC, ACL_EVENT_TIME_LINE, Event, Rt, TaskKind,
    code,
};
use crate::{
    Call, R, calls, check_out, eh, enter, exec, ffi, non_null, out, rt_of, sh, stream_for,
    timeout_ms,
};

fn create_event(event: *mut *mut c_void, flags: u32, plain: bool, name: &str) -> R {
    non_null(&[event as usize])?;
    let mut g = enter(name, Call::Action)?;
    let rt = rt_of(&mut g)?;
    check_out(event)?;
    let known = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE;
    if flags == 0 || flags & !known != 0 {
        return Err(code::RT_PARAM_INVALID); // E7
    }
    let ctx = rt.cur_ctx()?; // D2
    let id = rt.new_id();
    rt.events.insert(
        id,
        Event {
            ctx,
            flags,
            plain,
            destroyed: false,
            refs: 0,
            records_issued: 0,
            records_finished: 0,
            flag_set: false,
            ts: None,
            last_record: None,
            record_error: None,
            record_error_reported: false,
            unreset_waits: 0,
            pending_waits: Default::default(),
            blocked: Vec::new(),
            waiters: Vec::new(),
            last_reset_exec: 0,
        },
    );
    out(event, eh(id) as *mut c_void)
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtCreateEvent(event: *mut *mut c_void) -> i32 {
    calls::count(CallId::aclrtCreateEvent);
    // Plain events behave as ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE (as on Atlas A2), except
    // that a wait before any record is rejected (107000, E1).
    ffi(|| {
        create_event(
            event,
            ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE,
            true,
            "aclrtCreateEvent",
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtCreateEventWithFlag(event: *mut *mut c_void, flag: u32) -> i32 {
    calls::count(CallId::aclrtCreateEventWithFlag);
    ffi(|| create_event(event, flag, false, "aclrtCreateEventWithFlag"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyEvent(event: *mut c_void) -> i32 {
    calls::count(CallId::aclrtDestroyEvent);
    ffi(|| {
        non_null(&[event as usize])?;
        let mut g = enter("aclrtDestroyEvent", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let eid = rt.event_id(event as usize)?;
        let (unreset, refs) = match rt.events.get(&eid) {
            // E4 applies to ACL_EVENT_SYNC events: a plain event is never reset, and after a
            // stop (S6) its context refuses the reset.
            Some(e) if e.plain || rt.extra.stopped.contains_key(&e.ctx) => (0, e.refs),
            Some(e) => (e.unreset_waits, e.refs),
            None => return Err(code::RT_PARAM_INVALID),
        };
        if unreset > 0 {
            rt.report(
                "E4",
                format!(
                    "event {:#x} destroyed after {unreset} aclrtStreamWaitEvent(s) without aclrtResetEvent: reset the event on the waiting stream right after the wait (create -> record -> wait -> reset)",
                    eh(eid)
                ),
            );
        }
        if refs > 0 {
            rt.report(
                "E9",
                format!(
                    "event {:#x} destroyed while {refs} issued task(s) (record/wait/reset) still refer to it: synchronize the streams that record or wait on it first",
                    eh(eid)
                ),
            );
        }
        if let Some(e) = rt.events.get_mut(&eid) {
            e.destroyed = true;
            if e.refs == 0 {
                rt.events.remove(&eid);
            }
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtRecordEvent(event: *mut c_void, stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtRecordEvent);
    ffi(|| {
        non_null(&[event as usize])?;
        let mut g = enter("aclrtRecordEvent", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let eid = rt.event_id(event as usize)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        let unreset = rt
            .events
            .get(&eid)
            .map_or(0, |e| if e.plain { 0 } else { e.unreset_waits });
        if unreset > 0 {
            rt.report(
                "E4",
                format!(
                    "event {:#x} re-recorded on stream {:#x} after {unreset} aclrtStreamWaitEvent(s) without aclrtResetEvent: reset it on the waiting stream after each wait",
                    eh(eid),
                    sh(sid)
                ),
            );
            if let Some(e) = rt.events.get_mut(&eid) {
                e.unreset_waits = 0;
            }
        }
        exec::enqueue(rt, sid, TaskKind::Record { ev: eid }, Vec::new());
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtResetEvent(event: *mut c_void, stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtResetEvent);
    ffi(|| {
        non_null(&[event as usize])?;
        let mut g = enter("aclrtResetEvent", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let eid = rt.event_id(event as usize)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        let e = rt.events.get(&eid).ok_or(code::RT_PARAM_INVALID)?;
        if e.plain {
            // E4 (current CANN): only ACL_EVENT_SYNC events are reset; resetting a plain
            // event is undefined. The call succeeds and does nothing.
            rt.report(
                "E4",
                format!(
                    "aclrtResetEvent({:#x}) on an event created by aclrtCreateEvent: a plain event must not be reset (undefined in current CANN); create the event with aclrtCreateEventWithFlag(ACL_EVENT_SYNC) to reset it after a wait, or drop the reset; the simulator ignores it",
                    eh(eid)
                ),
            );
            return Ok(());
        }
        if e.flags & ACL_EVENT_SYNC == 0 {
            return Err(code::RT_FEATURE_NOT_SUPPORT); // E7
        }
        exec::enqueue(rt, sid, TaskKind::Reset { ev: eid }, Vec::new());
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtQueryEventStatus(event: *mut c_void, status: *mut i32) -> i32 {
    calls::count(CallId::aclrtQueryEventStatus);
    ffi(|| {
        non_null(&[event as usize, status as usize])?;
        let mut g = enter("aclrtQueryEventStatus", Call::Query)?;
        let rt = rt_of(&mut g)?;
        check_out(status)?;
        let eid = rt.event_id(event as usize)?;
        let e = rt.events.get(&eid).ok_or(code::RT_PARAM_INVALID)?;
        // COMPLETE (1) when every issued record has executed; a never-recorded event is
        // NOT_READY (0): current CANN counts "not recorded to a stream" as not ready.
        let complete = e.records_issued > 0 && e.records_finished >= e.records_issued;
        out(status, i32::from(complete))
    })
}

fn sync_event(event: *mut c_void, timeout: Option<i32>, name: &str) -> R {
    non_null(&[event as usize])?;
    let mut g = enter(name, Call::Action)?;
    let timeout = timeout.map_or(Ok(None), timeout_ms)?;
    let rt = rt_of(&mut g)?;
    let eid = rt.event_id(event as usize)?;
    let target = rt.events.get(&eid).map_or(0, |e| e.records_issued);
    // E2: the streams holding the records not finished yet. Only the deadlock diagnosis
    // needs them: computed then, not on every call (a scan of every queued task).
    let targets = move |rt: &Rt| -> Vec<u64> {
        rt.streams
            .iter()
            .filter(|(_, s)| {
                s.tasks
                    .iter()
                    .any(|t| matches!(t.kind, TaskKind::Record { ev } if ev == eid))
            })
            .map(|(k, _)| *k)
            .collect()
    };
    let deadline = timeout.map(|d| Instant::now() + d);
    // A record dropped meanwhile (S6, S8) lowers `records_issued`: never wait for it.
    let what = || format!("{name}({:#x})", eh(eid));
    host_wait(
        &mut g,
        deadline,
        Watch::Event(eid),
        targets,
        what,
        move |rt| {
            rt.events
                .get(&eid)
                .is_none_or(|e| e.records_finished >= target.min(e.records_issued))
        },
    )
    .map_err(|e| match e {
        WaitEnd::Timeout => code::RT_EVENT_SYNC_TIMEOUT, // E6
        WaitEnd::Deadlock => code::RT_INTERNAL_ERROR,
        WaitEnd::Gone => code::UNINITIALIZE,
    })?;
    // S6: the record this event waited for was dropped by a stop: reported once.
    let rt = rt_of(&mut g)?;
    if let Some(code) = crate::extra::take_failed_record(rt, eid) {
        return Err(code);
    }
    // P3: the record captured a task error: reported once, here too.
    match rt.events.get_mut(&eid) {
        Some(e) if e.record_error.is_some() && !e.record_error_reported => {
            e.record_error_reported = true;
            Err(e.record_error.unwrap_or(code::RT_INTERNAL_ERROR))
        }
        _ => Ok(()),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeEvent(event: *mut c_void) -> i32 {
    calls::count(CallId::aclrtSynchronizeEvent);
    ffi(|| sync_event(event, None, "aclrtSynchronizeEvent"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeEventWithTimeout(event: *mut c_void, timeout: i32) -> i32 {
    calls::count(CallId::aclrtSynchronizeEventWithTimeout);
    ffi(|| sync_event(event, Some(timeout), "aclrtSynchronizeEventWithTimeout"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtEventElapsedTime(
    ms: *mut f32,
    startEvent: *mut c_void,
    endEvent: *mut c_void,
) -> i32 {
    calls::count(CallId::aclrtEventElapsedTime);
    ffi(|| {
        non_null(&[ms as usize, startEvent as usize, endEvent as usize])?;
        let mut g = enter("aclrtEventElapsedTime", Call::Query)?;
        let rt = rt_of(&mut g)?;
        check_out(ms)?;
        let a = rt.event_id(startEvent as usize)?;
        let b = rt.event_id(endEvent as usize)?;
        let ts = |id: u64| {
            rt.events.get(&id).and_then(|e| {
                if e.records_issued > 0 && e.records_finished >= e.records_issued {
                    e.ts
                } else {
                    None
                }
            })
        };
        // E8: both recorded and complete.
        let (Some(t0), Some(t1)) = (ts(a), ts(b)) else {
            return Err(code::RT_INTERNAL_ERROR);
        };
        let v = if t1 >= t0 {
            t1.duration_since(t0).as_secs_f64() * 1e3
        } else {
            -(t0.duration_since(t1).as_secs_f64() * 1e3)
        };
        out(ms, v as f32)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetOpWaitTimeout(timeout: u32) -> i32 {
    calls::count(CallId::aclrtSetOpWaitTimeout);
    ffi(|| {
        let mut g = enter("aclrtSetOpWaitTimeout", Call::Action)?;
        let rt = rt_of(&mut g)?;
        rt.op_wait_timeout = timeout; // P3: applies to waits issued from now on
        Ok(())
    })
}
