//! State and execution hooks of the functions beyond the seeds (docs/protocol.md P5, D8,
//! S5-S12, C10-C12) and of `aclsimInjectTaskFailure`: stream failure modes (S6), injected task
//! failures, operator execution timeouts (P5), per-stream configuration (S7), host
//! functions launched (C10), host-function subscriptions (C12), stream aborts (S11), and
//! the simulated device's constants (D8).
//!
//! Everything lives in one [`Extra`] value inside [`Rt`] (so it is reset by `aclInit` and
//! guarded by the global lock like the rest); `exec` calls [`intercept`] before a worker
//! runs a task and [`after_run`] after a task body ran, both behind cheap emptiness checks.
//!
//! Layer: rules; imports the plain data (`state`, `errmsg`) and `rules::task`, nothing above
//! (the data types and constants live in `state::extra` and are re-exported here).

use crate::state::{Rt, TaskKind, TaskState, code};

pub use crate::state::extra::{
    DEFAULT_DEVICE_MEMORY, DEFAULT_SOC_NAME, Extra, HostFuncSub, MAX_OP_EXEC_TIMEOUT_US,
    OP_TIMEOUT_INTERVAL_US, STOP_ON_FAILURE, StateFn, StreamConfig, StreamExtra, round_timeout,
};

/// S6: a task issued on a stream of a stopped context would never run: the issuing call
/// fails with 107023 (`ACL_ERROR_RT_STREAM_ABORT`) instead of queueing it silently.
pub fn refuse_if_stopped(rt: &Rt, sid: u64) -> Result<(), i32> {
    if rt.extra.stopped.is_empty() {
        return Ok(());
    }
    match rt.streams.get(&sid) {
        Some(s) if rt.extra.stopped.contains_key(&s.ctx) => Err(code::RT_STREAM_ABORT),
        _ => Ok(()),
    }
}

/// S6: the code an event synchronize reports once because a stop dropped the event's record.
pub fn take_failed_record(rt: &mut Rt, eid: u64) -> Option<i32> {
    if rt.extra.failed_records.is_empty() {
        return None;
    }
    rt.extra.failed_records.remove(&eid)
}

/// A task of `sid` failed asynchronously with `code`: the next synchronize reports it (S2);
/// on an `ACL_STOP_ON_FAILURE` stream the whole context stops (S6): every worker of the
/// context is woken so that it drops its pending tasks ([`intercept`]).
pub fn task_failed(rt: &mut Rt, sid: u64, code: i32) {
    let Some(s) = rt.streams.get_mut(&sid) else {
        return;
    };
    s.async_error.get_or_insert(code);
    let ctx = s.ctx;
    let stop = rt
        .extra
        .streams
        .get(&sid)
        .is_some_and(|x| x.failure_mode == Some(STOP_ON_FAILURE));
    if !stop || rt.extra.stopped.contains_key(&ctx) {
        return;
    }
    rt.extra.stopped.insert(ctx, code);
    // Each stream of the context reports the failure once, at its next synchronize.
    for s in rt.streams.values_mut() {
        if s.ctx == ctx {
            s.async_error.get_or_insert(code);
            if let Some(cv) = s.cv.as_ref() {
                cv.signal();
            }
        }
    }
    rt.progress += 1;
    // Rare: every synchronize waiter re-checks (the context's streams drop their tasks).
    rt.wake_sync_waiters();
}

/// Called by a worker before it looks at the head task of `sid` (only when
/// [`Extra::intercepts`]). Returns true when it consumed the head task:
/// - the stream's context is stopped (S6): the task is dropped without running;
/// - a failure is injected on the stream and the task is a copy, memset, kernel or host
///   function: the task fails without running its body.
///
/// A task already started (a running body, a delivered blocking callback) is left alone.
pub fn intercept(rt: &mut Rt, sid: u64) -> bool {
    let (ctx, executable) = match rt.streams.get(&sid) {
        Some(s) => match s.tasks.front() {
            Some(t) if t.state == TaskState::Queued => (
                s.ctx,
                matches!(
                    t.kind,
                    TaskKind::Copy { .. }
                        | TaskKind::Set { .. }
                        | TaskKind::Kernel { .. }
                        | TaskKind::HostFunc { .. }
                        | TaskKind::Model(_)
                        | TaskKind::Dvpp(_)
                ),
            ),
            _ => return false,
        },
        None => return false,
    };
    if let Some(code) = rt.extra.stopped.get(&ctx).copied() {
        let Some(s) = rt.streams.get_mut(&sid) else {
            return false;
        };
        s.blocked_on = None;
        s.async_error.get_or_insert(code);
        let Some(t) = s.tasks.pop_front() else {
            return false;
        };
        if let TaskKind::Record { ev } = t.kind {
            rt.extra.failed_records.insert(ev, code);
        }
        crate::rules::task::release_task(rt, sid, &t, false);
        rt.extra.task_fail.remove(&t.id);
        rt.progress += 1;
        rt.wake_if_idle(sid);
        return true;
    }
    if !executable {
        return false;
    }
    let code = match rt.extra.streams.get_mut(&sid) {
        Some(x) => x.inject.pop_front(),
        None => None,
    };
    let Some(code) = code else {
        return false;
    };
    rt.extra.injected = rt.extra.injected.saturating_sub(1);
    // DV6: a media task's failure is in its output description too.
    let desc = match rt.streams.get(&sid).and_then(|s| s.tasks.front()) {
        Some(t) => match &t.kind {
            TaskKind::Dvpp(w) => Some(w.desc()),
            _ => None,
        },
        None => None,
    };
    if let Some(desc) = desc {
        crate::rules::dvpp::report_result(rt, desc, Err(code));
    }
    crate::rules::task::complete_front(rt, sid);
    task_failed(rt, sid, code);
    true
}

/// Called by a worker after the body of the head task of `sid` ran, before completing it:
/// a task registered in `task_fail` (a kernel stopped by the operator execution timeout,
/// P5) fails now.
pub fn after_run(rt: &mut Rt, sid: u64) {
    if rt.extra.task_fail.is_empty() {
        return;
    }
    let Some(id) = rt
        .streams
        .get(&sid)
        .and_then(|s| s.tasks.front())
        .map(|t| t.id)
    else {
        return;
    };
    if let Some(code) = rt.extra.task_fail.remove(&id) {
        task_failed(rt, sid, code);
    }
}

/// Forgets a removed stream (and its host-function subscription, C12: a thread left with
/// no stream is unsubscribed, and a parked `aclrtProcessHostFunc` of it returns 107012).
pub fn forget_stream(rt: &mut Rt, sid: u64) {
    if let Some(x) = rt.extra.streams.remove(&sid) {
        rt.extra.injected = rt.extra.injected.saturating_sub(x.inject.len());
        if let Some(th) = x.host_func_thread {
            drop_host_func_stream(rt, th, sid);
        }
    }
}

/// C12: removes `sid` from the streams of host-function thread `th`; a thread left with
/// none is unsubscribed and woken.
pub fn drop_host_func_stream(rt: &mut Rt, th: u64, sid: u64) {
    let Some(sub) = rt.extra.host_func_subs.get_mut(&th) else {
        return;
    };
    sub.streams.remove(&sid);
    if sub.streams.is_empty() {
        if let Some(w) = sub.waiter {
            crate::state::wake(w);
        }
        rt.extra.host_func_subs.remove(&th);
    }
}

/// S11 (`aclrtStreamAbort`): discards every task of `sid` that has not started (a running
/// body, or a delivered blocking callback, finishes); the stream stays usable. Returns how
/// many were discarded.
pub fn abort_stream(rt: &mut Rt, sid: u64) -> usize {
    let mut discarded = Vec::new();
    if let Some(s) = rt.streams.get_mut(&sid) {
        let keep_head = s
            .tasks
            .front()
            .is_some_and(|t| matches!(t.state, TaskState::Running | TaskState::WaitingCb));
        let skip = usize::from(keep_head);
        while s.tasks.len() > skip {
            if let Some(t) = s.tasks.pop_back() {
                discarded.push(t);
            }
        }
        if !keep_head {
            s.blocked_on = None;
        }
        if let Some(cv) = s.cv.as_ref() {
            cv.signal();
        }
    }
    for t in &discarded {
        rt.extra.task_fail.remove(&t.id);
        crate::rules::task::release_task(rt, sid, t, false);
    }
    rt.progress += 1;
    rt.wake_if_idle(sid);
    rt.wake_sync_waiters();
    discarded.len()
}
