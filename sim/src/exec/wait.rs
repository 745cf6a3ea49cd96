//! Host-side waiting (synchronize, destroy, process report): each waiter parks on its own
//! condvar and is woken only by the change it waits for; and the deadlock watchdog.
//!
//! Layer: executor; imports the plain data (`state`) and the base (`pt`), nothing above.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::pt::{PCond, PGuard, self_id};
use crate::state::{EVENT_BASE, Global, Rt, STREAM_BASE, TaskKind, TaskState, handle};

pub enum WaitEnd {
    Timeout,
    Deadlock,
    Gone,
}

thread_local! {
    /// This thread's condvar for host waits (synchronize, destroy stream,
    /// aclrtProcessReport). A thread is in at most one host wait at a time, and the
    /// thread-local lives as long as the thread, so its address can be registered.
    static WAIT_CV: PCond = const { PCond::new() };
}

/// Runs `f` with this thread's host-wait condvar and its address (for waiter lists).
pub fn with_wait_cv<R>(f: impl FnOnce(&PCond, usize) -> R) -> R {
    WAIT_CV.with(|cv| f(cv, cv as *const PCond as usize))
}

/// What a host wait waits for: who must wake it.
pub enum Watch<'a> {
    /// Streams becoming idle (or dying).
    Streams(&'a [u64]),
    /// Records of an event finishing.
    Event(u64),
}

fn register(rt: &mut Rt, cv: usize, watch: &Watch) {
    rt.sync_waiters.push(cv);
    match watch {
        Watch::Streams(ids) => {
            for sid in ids.iter() {
                if let Some(s) = rt.streams.get_mut(sid) {
                    s.waiters.push(cv);
                }
            }
        }
        Watch::Event(eid) => {
            if let Some(e) = rt.events.get_mut(eid) {
                e.waiters.push(cv);
            }
        }
    }
}

fn remove_one(v: &mut Vec<usize>, cv: usize) {
    if let Some(i) = v.iter().position(|w| *w == cv) {
        v.swap_remove(i);
    }
}

fn unregister(rt: &mut Rt, cv: usize, watch: &Watch) {
    remove_one(&mut rt.sync_waiters, cv);
    match watch {
        Watch::Streams(ids) => {
            for sid in ids.iter() {
                if let Some(s) = rt.streams.get_mut(sid) {
                    remove_one(&mut s.waiters, cv);
                }
            }
        }
        Watch::Event(eid) => {
            if let Some(e) = rt.events.get_mut(eid) {
                remove_one(&mut e.waiters, cv);
            }
        }
    }
}

/// Blocks the host until `done` holds. `deadline` None waits forever, with the deadlock
/// watchdog: when nothing in the runtime progressed for `deadlock_after` and the target
/// streams (`targets`, computed only then) provably cannot finish, a finding (E1/E5/C1)
/// is made and `Deadlock` returned. `what` names the blocked call in that finding; it is
/// called only then, so a wait that ends normally formats nothing. The waiter parks on
/// its own condvar, registered per `watch`: only a change it waits for wakes it.
pub fn host_wait(
    g: &mut PGuard<'_, Global>,
    deadline: Option<Instant>,
    watch: Watch,
    targets: impl Fn(&Rt) -> Vec<u64>,
    what: impl Fn() -> String,
    done: impl Fn(&Rt) -> bool,
) -> Result<(), WaitEnd> {
    match g.rt.as_deref() {
        None => return Err(WaitEnd::Gone),
        Some(rt) if done(rt) => return Ok(()),
        Some(_) => {}
    }
    WAIT_CV.with(|cv| {
        let addr = cv as *const PCond as usize;
        if let Some(rt) = g.rt.as_deref_mut() {
            register(rt, addr, &watch);
        }
        let r = wait_loop(g, cv, deadline, &targets, &what, &done);
        // After aclFinalize (and maybe a new aclInit) there is nothing to unregister from:
        // the lists died with the old state, and the new one never had this address.
        if let Some(rt) = g.rt.as_deref_mut() {
            unregister(rt, addr, &watch);
        }
        r
    })
}

fn wait_loop(
    g: &mut PGuard<'_, Global>,
    cv: &PCond,
    deadline: Option<Instant>,
    targets: &dyn Fn(&Rt) -> Vec<u64>,
    what: &dyn Fn() -> String,
    done: &dyn Fn(&Rt) -> bool,
) -> Result<(), WaitEnd> {
    let me = self_id();
    let mut last_progress = u64::MAX;
    let mut since = Instant::now();
    loop {
        let Some(rt) = g.rt.as_deref_mut() else {
            return Err(WaitEnd::Gone);
        };
        if done(rt) {
            return Ok(());
        }
        let now = Instant::now();
        let step = match deadline {
            Some(d) => {
                if now >= d {
                    return Err(WaitEnd::Timeout);
                }
                d - now
            }
            None => {
                if rt.progress != last_progress {
                    last_progress = rt.progress;
                    since = now;
                } else if now.duration_since(since) >= rt.deadlock_after {
                    let targets = targets(rt);
                    if let Some((rule, msg)) = diagnose(rt, &targets, me) {
                        rt.report(
                            rule,
                            format!(
                                "deadlock: {} can never return: {msg}; the call returns 507000",
                                what()
                            ),
                        );
                        return Err(WaitEnd::Deadlock);
                    }
                    since = now;
                }
                // The watchdog's period: progress elsewhere does not wake this waiter.
                Duration::from_millis(100)
            }
        };
        cv.wait_timeout(g, step);
    }
}

/// Optimistic simulation of every stream: a wait passes if its event's flag is set or a
/// record reachable on some stream sets it (resets ignored), a timed wait always passes,
/// a callback passes unless it must run on the blocked caller thread, a model execution
/// passes once every earlier pending execution of its model on a stream has passed (the
/// simulator runs them in issue order, MD8; a synchronous one always ends). Streams in
/// `targets` that still cannot finish are deadlocked.
fn diagnose(rt: &Rt, targets: &[u64], me: u64) -> Option<(&'static str, String)> {
    let sim = Simulation::run(rt, me);
    let target_stuck = targets.iter().any(|sid| {
        let Some(s) = rt.streams.get(sid) else {
            return false;
        };
        let p = sim.pos.get(sid).copied().unwrap_or(0);
        p < s.tasks.len()
            || (s.cb_outstanding > 0
                && rt
                    .subs
                    .get(&me)
                    .is_some_and(|sub| sub.streams.contains(sid)))
    });
    if !target_stuck {
        return None;
    }
    let (mut rule, mut stuck, md8) = sim.stuck(rt, targets, me);
    if md8 {
        rule = "MD8";
    }
    if stuck.is_empty() {
        rule = "C1";
        stuck.push(format!(
            "callbacks of the synchronized stream are pending for the calling thread {me:#x}, which is blocked here instead of calling aclrtProcessReport"
        ));
    }
    Some((rule, stuck.join("; ")))
}

/// Where [`diagnose`]'s optimistic simulation leaves every stream.
struct Simulation {
    /// Stream ids, in the order they were simulated.
    ids: Vec<u64>,
    /// The first task of each stream the simulation could not pass.
    pos: HashMap<u64, usize>,
    /// Model executions the simulation passed (MD8 order).
    passed: HashSet<u64>,
}

/// The pending executions of `model_id` issued before task `tid` on a stream and not
/// passed yet (execution id, stream).
fn earlier(rt: &Rt, model_id: u32, tid: u64, passed: &HashSet<u64>) -> Vec<(u64, u64)> {
    rt.models
        .loaded
        .get(&model_id)
        .map(|l| {
            l.pending
                .range(..tid)
                .filter_map(|(e, s)| s.map(|s| (*e, s)))
                .filter(|(e, _)| !passed.contains(e))
                .collect()
        })
        .unwrap_or_default()
}

impl Simulation {
    /// Passes every task that can pass, until nothing changes.
    fn run(rt: &Rt, me: u64) -> Simulation {
        let mut flags: HashMap<u64, bool> =
            rt.events.iter().map(|(k, e)| (*k, e.flag_set)).collect();
        let mut finished: HashMap<u64, u64> = rt
            .events
            .iter()
            .map(|(k, e)| (*k, e.records_finished))
            .collect();
        let ids: Vec<u64> = rt.streams.keys().copied().collect();
        let mut pos: HashMap<u64, usize> = ids.iter().map(|s| (*s, 0)).collect();
        let mut passed: HashSet<u64> = HashSet::new();
        let mut changed = true;
        while changed {
            changed = false;
            for sid in &ids {
                let Some(s) = rt.streams.get(sid) else {
                    continue;
                };
                let p = pos.entry(*sid).or_insert(0);
                while let Some(t) = s.tasks.get(*p) {
                    let pass = match &t.kind {
                        TaskKind::Wait { ev, timeout, after } => {
                            timeout.is_some()
                                || match after {
                                    Some(n) => finished.get(ev).copied().unwrap_or(0) >= *n,
                                    None => flags.get(ev).copied().unwrap_or(false),
                                }
                        }
                        TaskKind::Record { ev } => {
                            flags.insert(*ev, true);
                            *finished.entry(*ev).or_insert(0) += 1;
                            true
                        }
                        TaskKind::Callback { thread, .. } => *thread != me,
                        TaskKind::Model(x) => {
                            let go = t.state == TaskState::Running
                                || earlier(rt, x.model_id, t.id, &passed).is_empty();
                            if go {
                                passed.insert(t.id);
                            }
                            go
                        }
                        _ => true,
                    };
                    if !pass {
                        break;
                    }
                    *p += 1;
                    changed = true;
                }
            }
        }
        Simulation { ids, pos, passed }
    }

    /// Why each stream stopped where it did: the rule (E1, E5 or C1), one line per stuck
    /// stream, and whether a model execution is among them (MD8).
    fn stuck(&self, rt: &Rt, targets: &[u64], me: u64) -> (&'static str, Vec<String>, bool) {
        let mut stuck = Vec::new();
        let mut rule = "E1";
        let mut md8 = false;
        let tset: HashSet<u64> = targets.iter().copied().collect();
        let synchronized = |sid: &u64| {
            if tset.contains(sid) {
                " (synchronized)"
            } else {
                ""
            }
        };
        for sid in &self.ids {
            let Some(s) = rt.streams.get(sid) else {
                continue;
            };
            let p = self.pos.get(sid).copied().unwrap_or(0);
            let Some(t) = s.tasks.get(p) else {
                continue;
            };
            let sh = handle(STREAM_BASE, *sid);
            match &t.kind {
                TaskKind::Wait { ev, .. } => {
                    let eh = handle(EVENT_BASE, *ev);
                    let why = match rt.events.get(ev) {
                        Some(e) if e.records_finished > 0 && e.last_reset_exec > t.id => {
                            rule = "E5";
                            "a reset executed after this wait was issued cleared the flag before the wait ran (E5)".to_string()
                        }
                        Some(e) if e.records_issued == 0 => {
                            "the event was never recorded (E1: record before waiting)".to_string()
                        }
                        _ => "no issued record can run before it (cycle of waits, E1)".to_string(),
                    };
                    stuck.push(format!(
                        "stream {sh:#x}{} waits (task {}) for event {eh:#x}: {why}",
                        synchronized(sid),
                        t.id
                    ));
                }
                TaskKind::Callback { .. } => {
                    rule = "C1";
                    stuck.push(format!(
                        "stream {sh:#x} holds a callback (task {}) that only the synchronizing thread {me:#x} could process",
                        t.id
                    ));
                }
                TaskKind::Model(x) => {
                    md8 = true;
                    let before: Vec<String> = earlier(rt, x.model_id, t.id, &self.passed)
                        .iter()
                        .map(|(e, s)| format!("task {e} on stream {:#x}", handle(STREAM_BASE, *s)))
                        .collect();
                    stuck.push(format!(
                        "stream {sh:#x}{} holds an execution (task {}) of model {} that the simulator runs only after the earlier execution(s) of that model ({}), which cannot run first: executing one model on two streams at once breaks MD8, and the order the simulator imposes then closes a cycle with the event waits",
                        synchronized(sid),
                        t.id,
                        x.model_id,
                        before.join(", ")
                    ));
                }
                _ => {}
            }
        }
        (rule, stuck, md8)
    }
}

/// Waits until every stream of `ids` is idle (no task, no callback outstanding) or dead:
/// the host side of a stream synchronize, a stream destroy and a device reset (S2, S4, D5).
pub fn wait_streams_idle(
    g: &mut PGuard<'_, Global>,
    deadline: Option<Instant>,
    ids: &[u64],
    what: impl Fn() -> String,
) -> Result<(), WaitEnd> {
    let (watched, targets) = (ids.to_vec(), ids.to_vec());
    host_wait(
        g,
        deadline,
        Watch::Streams(ids),
        move |_| targets.clone(),
        what,
        move |rt| {
            watched.iter().all(|sid| {
                rt.streams
                    .get(sid)
                    .is_none_or(|s| s.dead || (s.tasks.is_empty() && s.cb_outstanding == 0))
            })
        },
    )
}
