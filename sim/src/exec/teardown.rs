//! Stream teardown (S4, D3, P2): killing and joining stream workers, removing streams, and
//! the pins that keep memory alive while a synchronous copy runs without the lock.
//!
//! Layer: executor; imports the rules and the plain data, nothing above.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::pt::{PCond, PGuard, PThread};
use crate::rules::task::release_task;
use crate::state::{Global, HOST_CV, Rt, TaskState};

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
