//! The executor: stream workers (S1: one thread per stream, tasks in issue order) in
//! `worker`, the task state machine in `step`, stream teardown in `teardown`, host-side
//! waiting and the deadlock watchdog in `wait`; here, creating streams and issuing tasks.
//!
//! Layer: executor, above the rules (`rules`, `extra`) and the plain data (`state`,
//! `model`, `errmsg`, `calls`, `pt`, `trace`), below the C entry points (`api`): it may
//! import only those lower layers and its own children.

use step::step;
use worker::worker;

use crate::pt::{PCond, spawn};
use crate::state::{Rt, STREAM_BASE, Stream, Task, TaskKind, TaskState, code, handle};

mod step;
mod teardown;
mod wait;
mod worker;

pub use crate::state::wake;
pub use teardown::{
    Reaper, kill_streams, pinned, reap, remove_streams, teardown_streams, wait_reaped,
    wait_unpinned,
};
pub use wait::{WaitEnd, Watch, host_wait, wait_streams_idle, with_wait_cv};

/// Creates a stream with its worker thread. Caller holds the lock.
pub fn create_stream(rt: &mut Rt, ctx: u64, is_default: bool) -> Result<u64, i32> {
    let device = rt
        .contexts
        .get(&ctx)
        .map(|c| c.device)
        .ok_or(code::RT_CONTEXT_NULL)?;
    let id = rt.new_id();
    let cv = Box::new(PCond::new());
    let cv_addr = &*cv as *const PCond as usize;
    let thread = spawn(move || worker(id, cv_addr)).map_err(|_| code::RT_NO_STREAM_RESOURCE)?;
    rt.streams.insert(
        id,
        Stream {
            ctx,
            device,
            is_default,
            tasks: Default::default(),
            blocked_on: None,
            stop: false,
            dead: false,
            cv: Some(cv),
            thread: Some(thread),
            async_error: None,
            inherited_error: None,
            cb_outstanding: 0,
            subscriber: None,
            waiters: Vec::new(),
        },
    );
    if let Some(tr) = rt.trace.as_mut() {
        let name = if is_default {
            format!("default stream (device {device}, ctx c{ctx})")
        } else {
            format!(
                "stream s{id} {:#x} (device {device}, ctx c{ctx})",
                handle(STREAM_BASE, id)
            )
        };
        tr.tracks.push((id, name));
    }
    Ok(id)
}

/// Appends a task to a stream and wakes its worker.
pub fn enqueue(rt: &mut Rt, sid: u64, kind: TaskKind, allocs: Vec<usize>) -> u64 {
    let id = rt.new_id();
    for a in &allocs {
        if let Some(al) = rt.allocs.get_mut(a) {
            al.uses += 1;
        }
    }
    match &kind {
        TaskKind::Record { ev } => {
            if let Some(e) = rt.events.get_mut(ev) {
                e.refs += 1;
                e.records_issued += 1;
            }
        }
        TaskKind::Wait { ev, .. } => {
            if let Some(e) = rt.events.get_mut(ev) {
                e.refs += 1;
                e.unreset_waits += 1;
                e.pending_waits.insert(id, sid);
            }
        }
        TaskKind::Reset { ev } => {
            if let Some(e) = rt.events.get_mut(ev) {
                e.refs += 1;
                e.unreset_waits = 0;
            }
        }
        TaskKind::Callback { .. } => {
            if let Some(s) = rt.streams.get_mut(&sid) {
                s.cb_outstanding += 1;
            }
        }
        _ => {}
    }
    let is_callback = matches!(kind, TaskKind::Callback { .. });
    let mut at_head = false;
    if let Some(s) = rt.streams.get_mut(&sid) {
        s.tasks.push_back(Task {
            id,
            kind,
            state: TaskState::Queued,
            allocs,
            started: None,
        });
        at_head = s.tasks.len() == 1;
        if !(is_callback && at_head)
            && let Some(cv) = s.cv.as_ref()
        {
            cv.signal();
        }
    }
    rt.progress += 1;
    if is_callback && at_head {
        // An idle stream reaching a callback only hands it to the report thread: do it
        // here, exactly as the worker would, and save waking the worker just for that.
        // Its next step happens when the callback has run (or the next task is queued).
        let _ = step(rt, sid);
    }
    id
}
