//! The task state machine (S1, E1-E5, C1, C4, MD6-MD8): what a stream does with its head
//! task ([`step`]), and the event tasks a record releases, run by the releasing thread
//! ([`run_released`]).
//!
//! Layer: executor; imports the rules (`rules`, `extra`) and the plain data (`state`),
//! nothing above.

use std::time::{Duration, Instant};

use crate::rules::task::{complete_front, complete_front_from};
use crate::state::models::Run;
use crate::state::{
    CbFn, CbItem, EVENT_BASE, KernelFn, Rt, STREAM_BASE, TaskKind, TaskState, code, handle,
};

/// What a worker found at the head of its queue.
pub(super) enum Step {
    Idle,
    WaitFor(Duration),
    Continue,
    Run(Job),
}

/// A task body executed with the global lock released.
pub(super) enum Job {
    Copy {
        dst: usize,
        src: usize,
        count: usize,
    },
    Set {
        ptr: usize,
        value: u8,
        count: usize,
    },
    Kernel {
        dur_us: u64,
        f: Option<KernelFn>,
        ud: usize,
        bufs: Vec<usize>,
    },
    /// `aclrtLaunchHostFunc` (C10), run in the stream's context.
    Host {
        f: CbFn,
        ud: usize,
        ctx: u64,
    },
    /// `aclmdlExecuteAsync` (MD6): the model's time, then its evaluation.
    Model(crate::state::models::Run),
    /// `acldvppJpegDecodeAsync`, `acldvppVpcResizeAsync` (DV6).
    Dvpp(crate::state::dvpp::Work),
}

/// One step of stream `sid`'s task state machine: acts on the head task and says what the
/// worker does next. The head is read once ([`head`]); each kind of task has its helper.
pub(super) fn step(rt: &mut Rt, sid: u64) -> Step {
    // S6 (a stopped context), aclsimInjectTaskFailure.
    if rt.extra.intercepts() && crate::extra::intercept(rt, sid) {
        return Step::Continue;
    }
    let now = Instant::now();
    match head(rt, sid, now) {
        Head::Idle => Step::Idle,
        Head::Body(tid, job) => start_body(rt, sid, tid, job),
        Head::Callback(state, item, thread) => deliver_callback(rt, sid, state, item, thread),
        Head::Model(model_id, tid, run) => start_model(rt, sid, model_id, tid, run),
        // Event tasks (E1-E5).
        Head::Record { ev, tid } => record_event(rt, sid, ev, tid, now),
        Head::Wait {
            ev,
            timeout,
            after,
            started,
        } => wait_event(rt, sid, ev, timeout, after, started, now),
        Head::Reset { ev, tid } => reset_event(rt, sid, ev, tid),
    }
}

/// The head task of a stream as [`step`] acts on it, copied out of the queue.
enum Head {
    /// Nothing to do now: no task, or the body of the head task is already running.
    Idle,
    /// A copy, memset, kernel or host function (task id, body): marked running.
    Body(u64, Job),
    /// A callback (C1, C4): its state, the item delivered to the report thread, the thread.
    Callback(TaskState, CbItem, u64),
    /// A model execution (MD6-MD8): model id, task id, body.
    Model(u32, u64, Run),
    Record {
        ev: u64,
        tid: u64,
    },
    Wait {
        ev: u64,
        timeout: Option<Duration>,
        after: Option<u64>,
        started: Instant,
    },
    Reset {
        ev: u64,
        tid: u64,
    },
}

/// Reads the head task of `sid` (noting when it started); a copy, memset, kernel or host
/// function not running yet is marked running.
fn head(rt: &mut Rt, sid: u64, now: Instant) -> Head {
    let Some(s) = rt.streams.get_mut(&sid) else {
        return Head::Idle;
    };
    let ctx = s.ctx;
    let Some(t) = s.tasks.front_mut() else {
        return Head::Idle;
    };
    if t.started.is_none() {
        t.started = Some(now);
    }
    let has_body = matches!(
        t.kind,
        TaskKind::Copy { .. }
            | TaskKind::Set { .. }
            | TaskKind::Kernel { .. }
            | TaskKind::HostFunc { .. }
            | TaskKind::Model(_)
            | TaskKind::Dvpp(_)
    );
    if has_body && t.state == TaskState::Running {
        return Head::Idle;
    }
    let job = match &t.kind {
        TaskKind::Copy {
            dst, src, count, ..
        } => Job::Copy {
            dst: *dst,
            src: *src,
            count: *count,
        },
        TaskKind::Set { ptr, value, count } => Job::Set {
            ptr: *ptr,
            value: *value,
            count: *count,
        },
        TaskKind::Kernel {
            dur_us,
            f,
            ud,
            bufs,
        } => Job::Kernel {
            dur_us: *dur_us,
            f: *f,
            ud: *ud,
            bufs: bufs.clone(),
        },
        TaskKind::Dvpp(w) => Job::Dvpp((**w).clone()),
        TaskKind::HostFunc { f, ud } => Job::Host {
            f: *f,
            ud: *ud,
            ctx,
        },
        TaskKind::Callback {
            f,
            ud,
            block,
            thread,
        } => {
            let item = CbItem {
                f: *f,
                ud: *ud,
                stream: sid,
                task: t.id,
                block: *block,
            };
            return Head::Callback(t.state, item, *thread);
        }
        // Marked running only once MD8 lets it start (`start_model`).
        TaskKind::Model(x) => return Head::Model(x.model_id, t.id, x.run()),
        TaskKind::Record { ev } => return Head::Record { ev: *ev, tid: t.id },
        TaskKind::Wait { ev, timeout, after } => {
            return Head::Wait {
                ev: *ev,
                timeout: *timeout,
                after: *after,
                started: t.started.unwrap_or(now),
            };
        }
        TaskKind::Reset { ev } => return Head::Reset { ev: *ev, tid: t.id },
    };
    t.state = TaskState::Running;
    Head::Body(t.id, job)
}

/// A copy, memset, kernel or host function starts: its body runs without the lock.
fn start_body(rt: &mut Rt, sid: u64, tid: u64, job: Job) -> Step {
    // MD6: a model execution running on another stream uses this memory.
    if !rt.models.execs.is_empty() {
        match &job {
            Job::Copy { dst, src, count } => crate::rules::model::async_access_starts(
                rt,
                sid,
                tid,
                "aclrtMemcpyAsync",
                &[(*dst, *count, true), (*src, *count, false)],
            ),
            Job::Set { ptr, count, .. } => crate::rules::model::async_access_starts(
                rt,
                sid,
                tid,
                "aclrtMemsetAsync",
                &[(*ptr, *count, true)],
            ),
            _ => {}
        }
    }
    Step::Run(job)
}

/// A callback task (C1, C4): delivered to the subscribed report thread (a blocking one
/// holds the stream until it has run), or dropped with a C1 finding if the thread is no
/// longer subscribed to the stream.
fn deliver_callback(rt: &mut Rt, sid: u64, state: TaskState, item: CbItem, thread: u64) -> Step {
    match state {
        TaskState::WaitingCb => return Step::Idle,
        TaskState::CbDone => {
            complete_front(rt, sid);
            return Step::Continue;
        }
        _ => {}
    }
    let block = item.block;
    let tid = item.task;
    let subscribed = rt
        .subs
        .get(&thread)
        .is_some_and(|sub| sub.streams.contains(&sid));
    if subscribed {
        if let Some(sub) = rt.subs.get_mut(&thread) {
            sub.queue.push_back(item);
        }
        rt.wake_reporter(thread);
        if block {
            if let Some(t) = rt.streams.get_mut(&sid).and_then(|s| s.tasks.front_mut()) {
                t.state = TaskState::WaitingCb;
            }
            rt.progress += 1;
            return Step::Idle;
        }
    } else {
        if let Some(s) = rt.streams.get_mut(&sid) {
            s.cb_outstanding = s.cb_outstanding.saturating_sub(1);
        }
        rt.report(
            "C1",
            format!(
                "callback task {tid} on stream {:#x} dropped: thread {thread:#x} is no longer subscribed to it; unsubscribe only after every launched callback has run",
                handle(STREAM_BASE, sid)
            ),
        );
    }
    complete_front(rt, sid);
    Step::Continue
}

/// A model execution starts, unless an execution of the same model issued earlier is not
/// done (MD8).
fn start_model(rt: &mut Rt, sid: u64, model_id: u32, tid: u64, run: Run) -> Step {
    // MD8: an execution of the same model issued earlier on another stream runs first.
    if crate::rules::model::must_wait(rt, model_id, tid) {
        return Step::Idle;
    }
    if let Some(t) = rt.streams.get_mut(&sid).and_then(|s| s.tasks.front_mut()) {
        t.state = TaskState::Running;
    }
    crate::rules::model::exec_starts(rt, tid); // MD2, MD6
    Step::Run(Job::Model(run))
}

/// Record: the hardware flag is set with a timestamp (E2, E8).
fn record_event(rt: &mut Rt, sid: u64, op_ev: u64, tid: u64, now: Instant) -> Step {
    let blocked = match rt.events.get_mut(&op_ev) {
        Some(e) => {
            e.flag_set = true;
            e.ts = Some(now);
            e.last_record = Some((tid, sid));
            std::mem::take(&mut e.blocked)
        }
        None => Vec::new(),
    };
    // Only the streams parked on this event, not every stream.
    let mut released = Vec::with_capacity(blocked.len());
    for b in blocked {
        if let Some(s) = rt.streams.get_mut(&b)
            && s.blocked_on == Some(op_ev)
        {
            s.blocked_on = None;
            released.push(b);
        }
    }
    complete_front(rt, sid);
    for b in released {
        run_released(rt, b);
    }
    Step::Continue
}

/// Wait: blocks this stream (never the host) until the flag is set (E3); on a plain event,
/// until the records issued before the wait have executed.
fn wait_event(
    rt: &mut Rt,
    sid: u64,
    op_ev: u64,
    timeout: Option<Duration>,
    after: Option<u64>,
    started: Instant,
    now: Instant,
) -> Step {
    let set = rt.events.get(&op_ev).is_some_and(|e| match after {
        Some(n) => e.records_finished >= n,
        None => e.flag_set,
    });
    if set {
        if let Some(s) = rt.streams.get_mut(&sid) {
            s.blocked_on = None;
        }
        // The record that set the flag (or made the count) released this wait.
        let by = rt
            .events
            .get(&op_ev)
            .and_then(|e| e.last_record)
            .map(|(record, _)| record);
        complete_front_from(rt, sid, by);
        return Step::Continue;
    }
    if let Some(to) = timeout {
        let waited = now.duration_since(started);
        if waited >= to {
            // P3: the wait ends with an error the next synchronize reports.
            if let Some(s) = rt.streams.get_mut(&sid) {
                s.blocked_on = None;
            }
            crate::extra::task_failed(rt, sid, code::RT_WAIT_TIMEOUT);
            complete_front(rt, sid);
            return Step::Continue;
        }
        block_on(rt, sid, op_ev);
        return Step::WaitFor(to - waited);
    }
    block_on(rt, sid, op_ev);
    Step::Idle
}

/// Reset: clears the flag. E5: a wait on another stream issued before this reset that has
/// not run yet would never end.
fn reset_event(rt: &mut Rt, sid: u64, op_ev: u64, tid: u64) -> Step {
    // Only waits issued before the reset (the map is ordered by task id); those of this
    // stream already ran, since the reset is at the head of it.
    let overtaken: Vec<(u64, u64)> = rt
        .events
        .get(&op_ev)
        .map(|e| {
            e.pending_waits
                .range(..tid)
                .filter(|(_, ws)| **ws != sid)
                .map(|(wt, ws)| (*wt, *ws))
                .collect()
        })
        .unwrap_or_default();
    if !overtaken.is_empty() {
        let list: Vec<String> = overtaken
            .iter()
            .map(|(wt, ws)| format!("wait task {wt} on stream {:#x}", handle(STREAM_BASE, *ws)))
            .collect();
        rt.report(
            "E5",
            format!(
                "reset of event {:#x} (task {tid}) on stream {:#x} executed before {} had run: that wait can now only be released by a new record. Order the reset after every wait on the event (record another event on the waiting streams and wait for it first), or do not reset an event that several streams wait on",
                handle(EVENT_BASE, op_ev),
                handle(STREAM_BASE, sid),
                list.join(", ")
            ),
        );
    }
    if let Some(e) = rt.events.get_mut(&op_ev) {
        // A reset releases what was recorded before it was issued. A record issued after it
        // (re-recording after the reset is the legal E1 cycle) that already ran on another
        // stream is not undone: that would make a legal program hang.
        let set_by_later_record = e.last_record.is_some_and(|(record, _)| record > tid);
        if !set_by_later_record {
            e.flag_set = false;
        }
        e.last_reset_exec = tid;
    }
    complete_front(rt, sid);
    Step::Continue
}

thread_local! {
    /// How deep [`run_released`] is nested on this thread (a record it runs may release
    /// more streams).
    static INLINE_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A stream whose wait a record just released: its leading event tasks (the wait, then
/// resets, records and waits that are already satisfied) take no time, so the releasing
/// thread runs them itself instead of handing them to the stream's worker, which costs two
/// thread wake-ups per hop of an event ping-pong. The worker is woken only for what is left
/// (a copy, a kernel, a callback, a wait still blocked). Same order and semantics: the
/// global lock is held throughout, and each task runs at the head of its stream.
pub(super) fn run_released(rt: &mut Rt, sid: u64) {
    let depth = INLINE_DEPTH.with(|d| d.get());
    if depth < 8 {
        INLINE_DEPTH.with(|d| d.set(depth + 1));
        loop {
            let event_task = rt.streams.get(&sid).is_some_and(|s| {
                !s.stop
                    && !s.dead
                    && s.blocked_on.is_none()
                    && s.tasks.front().is_some_and(|t| {
                        t.state == TaskState::Queued
                            && matches!(
                                t.kind,
                                TaskKind::Record { .. }
                                    | TaskKind::Wait { .. }
                                    | TaskKind::Reset { .. }
                            )
                    })
            });
            if !event_task || !matches!(step(rt, sid), Step::Continue) {
                break;
            }
        }
        INLINE_DEPTH.with(|d| d.set(depth));
    }
    if let Some(s) = rt.streams.get(&sid) {
        // Parked again on an untimed wait: the next record handles it; else the worker.
        let parked = s.blocked_on.is_some()
            && s.tasks
                .front()
                .is_some_and(|t| matches!(t.kind, TaskKind::Wait { timeout: None, .. }));
        if !s.tasks.is_empty()
            && !parked
            && let Some(cv) = s.cv.as_ref()
        {
            cv.signal();
        }
    }
}

/// Parks stream `sid` on event `ev`: the next record of `ev` wakes it.
fn block_on(rt: &mut Rt, sid: u64, ev: u64) {
    let Some(s) = rt.streams.get_mut(&sid) else {
        return;
    };
    if s.blocked_on == Some(ev) {
        return; // already in the event's list (a timed wait woke up early)
    }
    s.blocked_on = Some(ev);
    if let Some(e) = rt.events.get_mut(&ev) {
        e.blocked.push(sid);
    }
}
