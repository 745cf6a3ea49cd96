//! Completing and releasing tasks (S1, S2, E2, M2, P3): what an issued task holds (event
//! references, allocation uses, a model execution) is given back when it ran or was dropped.
//! Shared by the executor (`exec`) and the rules that drop tasks (`extra`, S6).
//!
//! Layer: rules; imports the plain data (`state`) and `rules::model`, nothing above.

use std::time::Instant;

use crate::state::{Rt, Task, TaskKind, task_name, wake};

/// Releases what an issued task holds (event references, allocation uses). `executed` is
/// false for a task discarded without running.
pub(crate) fn release_task(rt: &mut Rt, sid: u64, t: &Task, executed: bool) {
    for a in &t.allocs {
        let mut free_now = false;
        if let Some(al) = rt.allocs.get_mut(a) {
            al.uses = al.uses.saturating_sub(1);
            free_now = al.uses == 0 && al.freed;
        }
        if free_now {
            // SAFETY: its deferred free (M2) happens now that no task uses it.
            unsafe { rt.release_alloc(*a) };
        }
    }
    let ev = match &t.kind {
        TaskKind::Record { ev } => {
            // P3: the record captures an unreported error of a task before it (on its stream,
            // or on a stream its stream waited for): synchronising the event reports it.
            let captured = rt
                .streams
                .get(&sid)
                .and_then(|s| s.async_error.or(s.inherited_error));
            if let Some(e) = rt.events.get_mut(ev) {
                if executed {
                    e.record_error = captured;
                    e.record_error_reported = false;
                    e.records_finished += 1;
                } else {
                    // A dropped record (S6, S8, teardown) never completes its event: the
                    // event is as if it had never been issued.
                    e.records_issued = e.records_issued.saturating_sub(1);
                }
                // aclrtSynchronizeEvent waiters count finished (and issued) records (E2).
                for w in &e.waiters {
                    wake(*w);
                }
            }
            Some(*ev)
        }
        TaskKind::Wait { ev, .. } => {
            let mut inherited = None;
            if let Some(e) = rt.events.get_mut(ev) {
                e.pending_waits.remove(&t.id);
                inherited = e.record_error.filter(|_| executed);
            }
            // P3: a wait that passed on a record capturing an error carries it on.
            if let Some(code) = inherited
                && let Some(s) = rt.streams.get_mut(&sid)
            {
                s.inherited_error.get_or_insert(code);
            }
            Some(*ev)
        }
        TaskKind::Reset { ev } => Some(*ev),
        TaskKind::Model(x) => {
            crate::rules::model::release(rt, t.id, x);
            None
        }
        TaskKind::Dvpp(_) => {
            crate::rules::dvpp::release(rt, t.id);
            None
        }
        TaskKind::Callback { thread, .. } => {
            if !executed {
                // Drop a delivered-but-not-run item too (only possible for blocking ones).
                if let Some(sub) = rt.subs.get_mut(thread) {
                    sub.queue.retain(|i| i.task != t.id);
                }
                if let Some(s) = rt.streams.get_mut(&sid) {
                    s.cb_outstanding = s.cb_outstanding.saturating_sub(1);
                }
            }
            None
        }
        _ => None,
    };
    if let Some(ev) = ev {
        let mut remove = false;
        if let Some(e) = rt.events.get_mut(&ev) {
            e.refs = e.refs.saturating_sub(1);
            remove = e.destroyed && e.refs == 0;
        }
        if remove && let Some(e) = rt.events.remove(&ev) {
            // An event synchronize whose event is gone returns.
            for w in &e.waiters {
                wake(*w);
            }
        }
    }
}

/// Pops the head task of `sid` after it ran, releases it and wakes host waiters.
pub(crate) fn complete_front(rt: &mut Rt, sid: u64) {
    complete_front_from(rt, sid, None);
}

/// [`complete_front`] of a wait released by the record task `released_by` (the trace draws
/// an arrow from that record to the end of the wait).
pub(crate) fn complete_front_from(rt: &mut Rt, sid: u64, released_by: Option<u64>) {
    let Some(t) = rt.streams.get_mut(&sid).and_then(|s| s.tasks.pop_front()) else {
        return;
    };
    if rt.trace.is_some() {
        let name = task_name(rt, &t);
        let now = Instant::now();
        let start = t.started.unwrap_or(now);
        let flow_from = released_by;
        let t0 = rt.t0;
        if let Some(tr) = rt.trace.as_mut() {
            tr.span(
                sid,
                t.id,
                name,
                start.duration_since(t0),
                now.duration_since(start),
                flow_from,
                matches!(t.kind, TaskKind::Record { .. }),
            );
        }
    }
    release_task(rt, sid, &t, true);
    rt.progress += 1;
    rt.wake_if_idle(sid);
}
