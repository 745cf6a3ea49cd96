//! The model rules the executor and the entry points share (MD2, MD3, MD6, MD7, MD8):
//! holding and releasing what an execution uses, the memory a loaded model holds, and the
//! findings of an access to memory an execution reads or writes.
//!
//! Layer: rules; imports the plain data (`state`, `model`, `errmsg`), nothing above.

use crate::state::models::{Exec, ExecUse};
use crate::state::{Rt, STREAM_BASE, TaskKind, TaskState, handle};
/// Where a pending execution runs, for MD8's messages: its stream, or none (synchronous).
pub(crate) fn pending_on(stream: Option<u64>) -> String {
    match stream {
        Some(s) => format!("stream {:#x}", handle(STREAM_BASE, s)),
        None => "a synchronous aclmdlExecute".to_string(),
    }
}

/// MD8, when asynchronous execution `id` reaches the front of its stream: an execution of the
/// same model issued earlier is not done (on another stream, or a synchronous one), so the
/// hardware would run the two at once. Reported once per execution; the simulator runs this
/// one after the other. An execution ordered after the other (its stream waits for an event
/// recorded after it) reaches the front only once the other is done: no finding.
pub(crate) fn must_wait(rt: &mut Rt, model_id: u32, id: u64) -> bool {
    let others: Vec<Option<u64>> = match rt.models.loaded.get(&model_id) {
        Some(l) => l.pending.range(..id).map(|(_, s)| *s).collect(),
        None => return false,
    };
    if others.is_empty() {
        return false;
    }
    let (first, here) = match rt.models.execs.get_mut(&id) {
        Some(u) => (!std::mem::replace(&mut u.md8_reported, true), u.stream),
        None => (false, None),
    };
    if first {
        let others: Vec<String> = others.into_iter().map(pending_on).collect();
        rt.report(
            "MD8",
            format!(
                "aclmdlExecuteAsync: model {model_id} reached the front of {} while an execution of it issued earlier is not done, on {}: never run one model concurrently (order the two with an event, synchronize first, or load it twice); the simulator runs this one after it",
                pending_on(here),
                others.join(", ")
            ),
        );
    }
    true
}

/// Holds what execution `id` uses (MD6, MD7).
pub(crate) fn acquire(rt: &mut Rt, id: u64, x: &Exec, sid: Option<u64>) {
    let m = &mut rt.models;
    for d in x.datasets {
        if let Some(ds) = m.datasets.get_mut(&d) {
            ds.uses += 1;
        }
    }
    for b in &x.bufs {
        if let Some(buf) = m.bufs.get_mut(b) {
            buf.uses += 1;
        }
    }
    if let Some(l) = m.loaded.get_mut(&x.model_id) {
        l.pending.insert(id, sid);
    }
    m.execs.insert(id, x.uses(sid));
}

/// Execution `id` is done (or dropped): releases what it held; objects destroyed meanwhile
/// (MD6) go now; executions of the model waiting for it (MD8) may run.
pub(crate) fn release(rt: &mut Rt, id: u64, x: &Exec) {
    let m = &mut rt.models;
    m.execs.remove(&id);
    for d in x.datasets {
        if let Some(ds) = m.datasets.get_mut(&d) {
            ds.uses = ds.uses.saturating_sub(1);
            if ds.destroyed && ds.uses == 0 {
                m.datasets.remove(&d);
            }
        }
    }
    for b in &x.bufs {
        if let Some(buf) = m.bufs.get_mut(b) {
            buf.uses = buf.uses.saturating_sub(1);
            if buf.destroyed && buf.uses == 0 {
                m.bufs.remove(b);
            }
        }
    }
    let waiting: Vec<u64> = match m.loaded.get_mut(&x.model_id) {
        Some(l) => {
            l.pending.remove(&id);
            l.pending.values().flatten().copied().collect()
        }
        None => Vec::new(),
    };
    for sid in waiting {
        if let Some(cv) = rt.streams.get(&sid).and_then(|s| s.cv.as_ref()) {
            cv.signal();
        }
    }
}

/// Drops one use of a tracked allocation; releases it if it was freed meanwhile (M2, MD2).
pub(crate) fn unuse(rt: &mut Rt, start: usize) {
    let free_now = match rt.allocs.get_mut(&start) {
        Some(a) => {
            a.uses = a.uses.saturating_sub(1);
            a.uses == 0 && a.freed
        }
        None => false,
    };
    if free_now {
        // SAFETY: its deferred free happens now that nothing uses it.
        unsafe { rt.release_alloc(start) };
    }
}

/// A device reset (D3) releases the work and weight memory the runtime allocated for the
/// models of the device (they stay loaded, as leaks: their context is gone).
pub(crate) fn release_device_memory(rt: &mut Rt, device: i32) {
    for l in rt.models.loaded.values_mut() {
        if let Some((d, bytes)) = l.memory.take_if(|(d, _)| *d == device) {
            rt.extra.uncharge(false, d, bytes);
        }
    }
}

/// Tracked allocations released by a device reset (D3): no model holds them any more.
pub(crate) fn forget_allocs(rt: &mut Rt, starts: &[usize]) {
    for l in rt.models.loaded.values_mut() {
        l.regions.retain(|r| !starts.contains(&r.alloc));
    }
}

/// MD2 / MD3: the model holding allocation `start`, as the rule a free breaks and a text.
pub(crate) fn holder(rt: &Rt, start: usize) -> Option<(&'static str, String)> {
    rt.models.loaded.iter().find_map(|(id, l)| {
        l.regions.iter().find(|r| r.alloc == start).map(|r| {
            let rule = r.rule;
            let what = if rule == "MD2" {
                "work or weight memory of a ...WithMem load"
            } else {
                "the bytes given to aclmdlLoadFromMem"
            };
            (
                rule,
                format!("model {id} is loaded with it as {what} ({rule})"),
            )
        })
    })
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.1 > 0 && b.1 > 0 && a.0 < b.0.saturating_add(b.1) && b.0 < a.0.saturating_add(a.1)
}

fn range(r: (usize, usize)) -> String {
    format!("[{:#x}, +{})", r.0, r.1)
}

fn exec_where(e: &ExecUse) -> String {
    match e.stream {
        Some(s) => format!("on stream {:#x}", handle(STREAM_BASE, s)),
        None => "synchronous (aclmdlExecute)".to_string(),
    }
}

/// MD2 / MD3: `call` writes (or uses, `how`) `[p, +n)`, which lies in the work or weight
/// memory of a `...WithMem` load (MD2) or in the tracked model bytes of a loaded model
/// (MD3). Finding only: the call goes on.
pub(crate) fn touch_model_memory(rt: &mut Rt, call: &str, p: usize, n: usize, how: &str) {
    if rt.models.loaded.is_empty() {
        return;
    }
    let hits: Vec<(&'static str, String)> = rt
        .models
        .loaded
        .iter()
        .flat_map(|(id, l)| {
            l.regions
                .iter()
                .filter(|r| overlaps((p, n), (r.start, r.len)))
                .map(move |r| {
                    let advice = if r.rule == "MD2" {
                        "memory given to a ...WithMem load stays untouched while the model is loaded: only the model uses it"
                    } else {
                        "the bytes given to aclmdlLoadFromMem stay alive and unchanged until aclmdlUnload: the runtime may use them in place"
                    };
                    (
                        r.rule,
                        format!(
                            "{call} {how} {}, inside the {} {} of loaded model {id}: {advice}",
                            range((p, n)),
                            r.what,
                            range((r.start, r.len))
                        ),
                    )
                })
        })
        .collect();
    for (rule, msg) in hits {
        rt.report(rule, msg);
    }
}

/// What `call`, a synchronous host access, does to the memory of pending executions: the
/// MD6 findings for `[write]` written and `[read]` read (a pending execution reads its
/// inputs and writes its output until it is done). Writes into model memory: MD2 / MD3.
pub(crate) fn host_access(
    rt: &mut Rt,
    call: &str,
    write: (usize, usize),
    read: Option<(usize, usize)>,
) {
    touch_model_memory(rt, call, write.0, write.1, "writes");
    if rt.models.execs.is_empty() {
        return;
    }
    let mut hits = Vec::new();
    for (id, e) in &rt.models.execs {
        let mut what = Vec::new();
        if e.inputs.iter().any(|i| overlaps(write, *i)) {
            what.push(format!("writes {}, an input of", range(write)));
        } else if e.outputs.iter().any(|o| overlaps(write, *o)) {
            what.push(format!("writes {}, the output of", range(write)));
        }
        if let Some(r) = read.filter(|r| e.outputs.iter().any(|o| overlaps(*r, *o))) {
            what.push(format!(
                "reads {}, the output (not yet written) of",
                range(r)
            ));
        }
        if !what.is_empty() {
            hits.push(format!(
                "{call} {} execution {id} of model {} ({}), which is pending: the I/O memory of an execution stays untouched until it is done (synchronize the stream, or an event recorded after it, first)",
                what.join(" and "),
                e.model_id,
                exec_where(e)
            ));
        }
    }
    for msg in hits {
        rt.report("MD6", msg);
    }
}

/// MD6: an asynchronous copy or memset (task `tid`, `call`) starts on stream `sid` while
/// an execution on another stream (or a synchronous one) is running and uses its memory:
/// `ranges` are (address, bytes, written). Checked when both run, not at issue: event
/// ordering between the streams is legal and leaves them never running together.
pub(crate) fn async_access_starts(
    rt: &mut Rt,
    sid: u64,
    tid: u64,
    call: &str,
    ranges: &[(usize, usize, bool)],
) {
    let mut hits = Vec::new();
    for (id, e) in &rt.models.execs {
        if !e.running || e.stream == Some(sid) {
            continue;
        }
        if let Some(msg) = conflict(e, ranges) {
            hits.push(format!(
                "{call} (task {tid}) on stream {:#x} {msg} while execution {id} of model {} ({}) runs: order the streams (an event) or synchronize first",
                handle(STREAM_BASE, sid),
                e.model_id,
                exec_where(e)
            ));
        }
    }
    for msg in hits {
        rt.report("MD6", msg);
    }
}

/// How an access to `ranges` (address, bytes, written) conflicts with execution `e`.
fn conflict(e: &ExecUse, ranges: &[(usize, usize, bool)]) -> Option<String> {
    ranges.iter().find_map(|(p, n, w)| {
        let r = (*p, *n);
        if *w && e.inputs.iter().any(|i| overlaps(r, *i)) {
            Some(format!("writes {}, an input of the execution", range(r)))
        } else if e.outputs.iter().any(|o| overlaps(r, *o)) {
            Some(format!(
                "{} {}, the output of the execution",
                if *w { "writes" } else { "reads" },
                range(r)
            ))
        } else {
            None
        }
    })
}

/// Execution `id` starts running: MD2 when an execution of another model sharing its work
/// memory is running too; MD6 when a copy or memset on another stream is running on its
/// memory.
pub(crate) fn exec_starts(rt: &mut Rt, id: u64) {
    let Some(me) = rt.models.execs.get_mut(&id) else {
        return;
    };
    me.running = true;
    let (model_id, stream) = (me.model_id, me.stream);
    let mut findings = Vec::new();
    let work = |m: u32| -> Vec<(usize, usize)> {
        rt.models.loaded.get(&m).map_or_else(Vec::new, |l| {
            l.regions
                .iter()
                .filter(|r| r.what == "work memory")
                .map(|r| (r.start, r.len))
                .collect()
        })
    };
    let mine = work(model_id);
    if !mine.is_empty() {
        for (other, e) in &rt.models.execs {
            if *other == id || !e.running || e.model_id == model_id {
                continue;
            }
            let theirs = work(e.model_id);
            if mine.iter().any(|a| theirs.iter().any(|b| overlaps(*a, *b))) {
                findings.push((
                    "MD2",
                    format!(
                        "execution {id} of model {model_id} ({}) started while execution {other} of model {} ({}) runs, and the two models share work memory: work memory may only be shared by models whose executions never overlap (order them, or give each its own)",
                        exec_where(&rt.models.execs[&id]),
                        e.model_id,
                        exec_where(e)
                    ),
                ));
            }
        }
    }
    for (sid, s) in &rt.streams {
        if Some(*sid) == stream {
            continue;
        }
        let Some(t) = s.tasks.front().filter(|t| t.state == TaskState::Running) else {
            continue;
        };
        let (call, ranges) = match &t.kind {
            TaskKind::Copy {
                dst, src, count, ..
            } => (
                "aclrtMemcpyAsync",
                vec![(*dst, *count, true), (*src, *count, false)],
            ),
            TaskKind::Set { ptr, count, .. } => ("aclrtMemsetAsync", vec![(*ptr, *count, true)]),
            _ => continue,
        };
        if let Some(msg) = conflict(&rt.models.execs[&id], &ranges) {
            findings.push((
                "MD6",
                format!(
                    "execution {id} of model {model_id} ({}) started while {call} (task {}) on stream {:#x}, which {msg}, runs: order the streams (an event) or synchronize first",
                    exec_where(&rt.models.execs[&id]),
                    t.id,
                    handle(STREAM_BASE, *sid)
                ),
            ));
        }
    }
    for (rule, msg) in findings {
        rt.report(rule, msg);
    }
}
