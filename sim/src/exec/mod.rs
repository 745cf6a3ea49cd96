//! Stream workers (S1: one thread per stream, tasks in issue order), task completion and
//! stream teardown; host-side waiting and the deadlock watchdog are in `wait`.
//!
//! Longer than the other files because `step`, one match over the task kinds, is the
//! simulator's whole task state machine: it reads best in one place.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::pt::{PCond, PGuard, PThread, spawn};
use crate::rules::task::{complete_front, complete_front_from, release_task};
use crate::state::{
    CUR_CTX, CbFn, CbItem, EVENT_BASE, G, Global, HOST_CV, IN_CALLBACK, KernelFn, Rt, STREAM_BASE,
    Stream, Task, TaskKind, TaskState, code, handle,
};

/// What a worker found at the head of its queue.
enum Step {
    Idle,
    WaitFor(Duration),
    Continue,
    Run(Job),
}

/// A task body executed with the global lock released.
enum Job {
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
}

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

/// Worker loop of stream `sid`. `cv_addr` is the address of the stream's boxed condvar,
/// which outlives this thread (it is dropped only after the thread is joined).
fn worker(sid: u64, cv_addr: usize) {
    // SAFETY: see above: the Box<PCond> is owned by the stream (or by whoever tears the
    // stream down) until after pthread_join on this thread returns.
    let cv: &PCond = unsafe { &*(cv_addr as *const PCond) };
    let mut g = G.lock();
    loop {
        let step = {
            let Some(rt) = g.rt.as_deref_mut() else {
                return;
            };
            match rt.streams.get(&sid) {
                None => return,
                Some(s) if s.stop => return,
                Some(_) => {}
            }
            step(rt, sid)
        };
        match step {
            Step::Idle => cv.wait(&mut g),
            Step::WaitFor(d) => cv.wait_timeout(&mut g, d),
            Step::Continue => {}
            Step::Run(job) => {
                let failed = g.unlocked(|| run_job(job));
                let Some(rt) = g.rt.as_deref_mut() else {
                    return;
                };
                if let Some(msg) = failed {
                    crate::extra::task_failed(rt, sid, code::RT_INTERNAL_ERROR);
                    rt.report(
                        "C8",
                        format!(
                            "{msg} on stream {:#x}; a kernel function or host function must not panic",
                            handle(STREAM_BASE, sid)
                        ),
                    );
                }
                crate::extra::after_run(rt, sid);
                complete_front(rt, sid);
            }
        }
    }
}

/// Runs a job without the lock. Returns a panic message if a kernel body panicked.
fn run_job(job: Job) -> Option<String> {
    match job {
        Job::Copy { dst, src, count } => {
            // SAFETY: both ranges were validated at issue (M1) to lie inside live tracked
            // allocations, kept alive by their use count (M2), or in untracked host memory
            // the caller must keep alive until the stream is synchronized (M1 contract).
            unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, count) };
            None
        }
        Job::Set { ptr, value, count } => {
            // SAFETY: as for Copy.
            unsafe { std::ptr::write_bytes(ptr as *mut u8, value, count) };
            None
        }
        Job::Kernel {
            dur_us,
            f,
            ud,
            bufs,
        } => {
            if dur_us > 0 {
                std::thread::sleep(Duration::from_micros(dur_us));
            }
            let f = f?;
            let ptrs: Vec<*mut libc::c_void> = bufs.iter().map(|b| *b as *mut _).collect();
            IN_CALLBACK.with(|c| c.set(true));
            let r = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: a kernel body supplied by the caller through aclsimLaunchKernel,
                // called with the user data and buffer list it registered.
                unsafe { f(ud as *mut libc::c_void, ptrs.as_ptr(), ptrs.len()) }
            }));
            IN_CALLBACK.with(|c| c.set(false));
            r.err().map(|_| "kernel body panicked".to_string())
        }
        Job::Host { f, ud, ctx } => {
            // C10: C8 applies inside a host function as inside a callback; it runs in the
            // stream's context (so queries such as aclrtStreamQuery(NULL) resolve).
            let saved = CUR_CTX.with(|c| c.replace(ctx));
            IN_CALLBACK.with(|c| c.set(true));
            let r = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: a host function and its argument as registered by
                // aclrtLaunchHostFunc, called once.
                unsafe { f(ud as *mut libc::c_void) }
            }));
            IN_CALLBACK.with(|c| c.set(false));
            CUR_CTX.with(|c| c.set(saved));
            r.err().map(|_| "host function panicked".to_string())
        }
        Job::Model(run) => {
            run.run();
            None
        }
    }
}

fn step(rt: &mut Rt, sid: u64) -> Step {
    // S6 (a stopped context), aclsimInjectTaskFailure.
    if rt.extra.intercepts() && crate::extra::intercept(rt, sid) {
        return Step::Continue;
    }
    let now = Instant::now();
    let op_ev;
    let model_run;
    {
        let Some(s) = rt.streams.get_mut(&sid) else {
            return Step::Idle;
        };
        let Some(t) = s.tasks.front_mut() else {
            return Step::Idle;
        };
        if t.started.is_none() {
            t.started = Some(now);
        }
        match &t.kind {
            TaskKind::Copy {
                dst, src, count, ..
            } => {
                if t.state == TaskState::Running {
                    return Step::Idle;
                }
                t.state = TaskState::Running;
                let (tid, dst, src, count) = (t.id, *dst, *src, *count);
                // MD6: a model execution running on another stream uses this memory.
                if !rt.models.execs.is_empty() {
                    crate::rules::model::async_access_starts(
                        rt,
                        sid,
                        tid,
                        "aclrtMemcpyAsync",
                        &[(dst, count, true), (src, count, false)],
                    );
                }
                return Step::Run(Job::Copy { dst, src, count });
            }
            TaskKind::Set { ptr, value, count } => {
                if t.state == TaskState::Running {
                    return Step::Idle;
                }
                t.state = TaskState::Running;
                let (tid, ptr, value, count) = (t.id, *ptr, *value, *count);
                if !rt.models.execs.is_empty() {
                    crate::rules::model::async_access_starts(
                        rt,
                        sid,
                        tid,
                        "aclrtMemsetAsync",
                        &[(ptr, count, true)],
                    );
                }
                return Step::Run(Job::Set { ptr, value, count });
            }
            TaskKind::Kernel {
                dur_us,
                f,
                ud,
                bufs,
            } => {
                if t.state == TaskState::Running {
                    return Step::Idle;
                }
                t.state = TaskState::Running;
                return Step::Run(Job::Kernel {
                    dur_us: *dur_us,
                    f: *f,
                    ud: *ud,
                    bufs: bufs.clone(),
                });
            }
            TaskKind::HostFunc { f, ud } => {
                if t.state == TaskState::Running {
                    return Step::Idle;
                }
                t.state = TaskState::Running;
                let (f, ud, ctx) = (*f, *ud, s.ctx);
                return Step::Run(Job::Host { f, ud, ctx });
            }
            TaskKind::Callback {
                f,
                ud,
                block,
                thread,
            } => {
                match t.state {
                    TaskState::WaitingCb => return Step::Idle,
                    TaskState::CbDone => {
                        complete_front(rt, sid);
                        return Step::Continue;
                    }
                    _ => {}
                }
                let item = CbItem {
                    f: *f,
                    ud: *ud,
                    stream: sid,
                    task: t.id,
                    block: *block,
                };
                let block = *block;
                let thread = *thread;
                let tid = t.id;
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
                        if let Some(t) = rt.streams.get_mut(&sid).and_then(|s| s.tasks.front_mut())
                        {
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
                return Step::Continue;
            }
            TaskKind::Model(x) => {
                if t.state == TaskState::Running {
                    return Step::Idle;
                }
                model_run = Some((x.model_id, t.id, x.run()));
                op_ev = 0;
            }
            TaskKind::Record { ev } | TaskKind::Wait { ev, .. } | TaskKind::Reset { ev } => {
                model_run = None;
                op_ev = *ev;
            }
        }
    }
    if let Some((model_id, tid, run)) = model_run {
        // MD8: an execution of the same model issued earlier on another stream runs first.
        if crate::rules::model::must_wait(rt, model_id, tid) {
            return Step::Idle;
        }
        if let Some(t) = rt.streams.get_mut(&sid).and_then(|s| s.tasks.front_mut()) {
            t.state = TaskState::Running;
        }
        crate::rules::model::exec_starts(rt, tid); // MD2, MD6
        return Step::Run(Job::Model(run));
    }
    // Event tasks (E1-E5).
    let (kind_is, timeout, after, tid, started) = {
        let Some(t) = rt.streams.get(&sid).and_then(|s| s.tasks.front()) else {
            return Step::Idle;
        };
        let (k, to, after) = match &t.kind {
            TaskKind::Record { .. } => (0, None, None),
            TaskKind::Wait { timeout, after, .. } => (1, *timeout, *after),
            _ => (2, None, None),
        };
        (k, to, after, t.id, t.started.unwrap_or(now))
    };
    match kind_is {
        0 => {
            // Record: the hardware flag is set with a timestamp (E2, E8).
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
        1 => {
            // Wait: blocks this stream (never the host) until the flag is set (E3); on a
            // plain event, until the records issued before the wait have executed.
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
        _ => {
            // Reset: clears the flag. E5: a wait on another stream issued before this reset
            // that has not run yet would never end.
            // Only waits issued before the reset (the map is ordered by task id); those of
            // this stream already ran, since the reset is at the head of it.
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
                    .map(|(wt, ws)| {
                        format!("wait task {wt} on stream {:#x}", handle(STREAM_BASE, *ws))
                    })
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
                // A reset releases what was recorded before it was issued. A record issued
                // after it (re-recording after the reset is the legal E1 cycle) that already
                // ran on another stream is not undone: that would make a legal program hang.
                let set_by_later_record = e.last_record.is_some_and(|(record, _)| record > tid);
                if !set_by_later_record {
                    e.flag_set = false;
                }
                e.last_reset_exec = tid;
            }
            complete_front(rt, sid);
            Step::Continue
        }
    }
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
fn run_released(rt: &mut Rt, sid: u64) {
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

/// Marks streams dead, discards their queued tasks and takes their threads and condvars.
/// The caller must join them with the lock released ([`reap`]), then call [`remove_streams`].
pub fn kill_streams(rt: &mut Rt, ids: &[u64]) -> Vec<Reaper> {
    let mut out = Vec::new();
    for &sid in ids {
        let mut discarded = Vec::new();
        if let Some(s) = rt.streams.get_mut(&sid) {
            s.dead = true;
            s.stop = true;
            // The head task may be running right now (memcpy/kernel): the worker completes
            // it itself. Everything else is discarded.
            let keep_head = s
                .tasks
                .front()
                .is_some_and(|t| t.state == TaskState::Running);
            let skip = usize::from(keep_head);
            while s.tasks.len() > skip {
                if let Some(t) = s.tasks.pop_back() {
                    discarded.push(t);
                }
            }
            if let Some(cv) = s.cv.as_ref() {
                cv.signal();
            }
        }
        for t in &discarded {
            release_task(rt, sid, t, false);
        }
        // Unsubscribe a dying stream.
        let sub = rt.streams.get_mut(&sid).and_then(|s| s.subscriber.take());
        if let Some(th) = sub {
            let mut drop_sub = false;
            if let Some(ts) = rt.subs.get_mut(&th) {
                ts.streams.remove(&sid);
                ts.queue.retain(|i| i.stream != sid);
                drop_sub = ts.streams.is_empty();
            }
            if drop_sub {
                // A parked aclrtProcessReport of that thread now returns 107012 (C6).
                rt.wake_reporter(th);
                rt.subs.remove(&th);
            }
        }
        if let Some(s) = rt.streams.get_mut(&sid) {
            s.cb_outstanding = 0;
            if let (Some(t), Some(cv)) = (s.thread.take(), s.cv.take()) {
                out.push(Reaper { sid, thread: t, cv });
            }
        }
    }
    rt.progress += 1;
    rt.wake_sync_waiters();
    out
}

/// A killed stream's worker thread and condvar, to be joined and dropped.
pub struct Reaper {
    pub sid: u64,
    thread: PThread,
    cv: Box<PCond>,
}

/// Joins killed workers; call with the lock released.
pub fn reap(v: Vec<Reaper>) {
    for r in v {
        r.thread.join();
        drop(r.cv);
    }
}

/// Waits (lock released while waiting) until no other thread is still joining the worker of
/// one of `ids`: until then that worker may be running a task that uses memory of the
/// stream's device, which must not be freed under it.
pub fn wait_reaped(g: &mut PGuard<'_, Global>, ids: &[u64]) {
    while g.reaping.iter().any(|s| ids.contains(s)) {
        HOST_CV.wait(g);
    }
}

/// Runs `f` with the lock released while the tracked allocations `allocs` are pinned
/// ([`Global::pinned`]): a device reset or `aclFinalize` waits until `f` is done before it
/// frees them. The caller validated them and holds a use of each (so a free is deferred),
/// and pins them in the same hold of the lock; `f` only reads or writes them (a copy).
pub fn pinned<R>(g: &mut PGuard<'_, Global>, allocs: &[usize], f: impl FnOnce() -> R) -> R {
    g.pinned.extend_from_slice(allocs);
    let r = g.unlocked(|| catch_unwind(AssertUnwindSafe(f)));
    for a in allocs {
        if let Some(i) = g.pinned.iter().position(|p| p == a) {
            g.pinned.swap_remove(i);
        }
    }
    if !allocs.is_empty() {
        HOST_CV.broadcast();
    }
    r.unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Waits (lock released while waiting) until no allocation that `frees` selects is pinned
/// by a host thread copying it without the lock ([`pinned`]). Returns with the lock held:
/// free them before releasing it.
pub fn wait_unpinned(g: &mut PGuard<'_, Global>, frees: impl Fn(&Rt, usize) -> bool) {
    loop {
        let busy = {
            let global: &Global = g;
            match global.rt.as_deref() {
                Some(rt) => global.pinned.iter().any(|p| frees(rt, *p)),
                None => false,
            }
        };
        if !busy {
            return;
        }
        HOST_CV.wait(g);
    }
}

pub fn remove_streams(rt: &mut Rt, ids: &[u64]) {
    for sid in ids {
        // The worker completed (or we discarded) every task: nothing refers to it.
        let leftover = rt.streams.remove(sid);
        if let Some(mut s) = leftover {
            while let Some(t) = s.tasks.pop_front() {
                release_task(rt, *sid, &t, false);
            }
        }
        crate::extra::forget_stream(rt, *sid);
        for c in rt.contexts.values_mut() {
            if c.default_stream == Some(*sid) {
                c.default_stream = None;
            }
        }
    }
    rt.wake_sync_waiters();
}

/// Kills, joins and removes streams; the lock is released while joining.
pub fn teardown_streams(g: &mut PGuard<'_, Global>, ids: Vec<u64>) {
    if ids.is_empty() {
        return;
    }
    let reapers = match g.rt.as_deref_mut() {
        Some(rt) => kill_streams(rt, &ids),
        None => return,
    };
    let mine: Vec<u64> = reapers.iter().map(|r| r.sid).collect();
    g.reaping.extend_from_slice(&mine);
    g.unlocked(|| reap(reapers));
    g.reaping.retain(|s| !mine.contains(s));
    HOST_CV.broadcast();
    // A stream another thread is joining (a concurrent destroy): its worker may still run.
    wait_reaped(g, &ids);
    if let Some(rt) = g.rt.as_deref_mut() {
        remove_streams(rt, &ids);
    }
}

mod wait;
pub use crate::state::wake;
pub use wait::{WaitEnd, Watch, host_wait, wait_streams_idle, with_wait_cv};
