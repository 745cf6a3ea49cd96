//! Models (`aclmdl*`, MD1-MD13) and data buffers: loading the simulator's text format
//! (`crate::model`), descriptions, datasets, synchronous and asynchronous execution.
//!
//! Descriptions, datasets and data buffers are host objects behind fake handles like the
//! runtime's (never dereferenced). A loaded model is bound to its context (MD1); each
//! execution holds the model (MD7), its datasets and data buffers (MD6) and the memory it
//! uses (M2) until it is done, and is registered with the memory it reads and writes, so
//! that a copy or memset touching that memory meanwhile is an MD6 finding. The work, weight
//! and model-byte regions a loaded model holds are registered too (MD2, MD3).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::memory::{Loc, check_stream_device, locate};
use super::*;
use crate::model::{DYNAMIC_INPUT, Model, Tensor, acl_dt, acl_format};

/// Model ids start at 1 and are never reused, not even across `aclFinalize`.
static NEXT_MODEL_ID: AtomicU32 = AtomicU32::new(1);

/// Everything the runtime knows about models.
#[derive(Default)]
pub struct Models {
    pub loaded: BTreeMap<u32, Loaded>,
    pub descs: HashMap<u64, Desc>,
    pub datasets: HashMap<u64, Dataset>,
    pub bufs: HashMap<u64, DataBuf>,
    /// Executions issued and not done (asynchronous or synchronous): the memory each reads
    /// and writes (MD6), whether its body is running (MD2, MD6).
    pub execs: BTreeMap<u64, ExecUse>,
    /// Recently destroyed descriptions, datasets and data buffers: id -> kind (MD5). Ids are
    /// never reused, so a handle found here was destroyed, never merely invalid; bounded
    /// (`TOMBS`): a use of one forgotten is only "unknown" (100000, no finding).
    pub tombs: BTreeMap<u64, &'static str>,
}

/// At most this many destroyed handles are remembered for MD5 findings.
const TOMBS: usize = 1 << 16;

/// What a pending execution uses (MD6).
pub struct ExecUse {
    pub model_id: u32,
    /// Its stream; `None` for a synchronous `aclmdlExecute`.
    pub stream: Option<u64>,
    /// (address, bytes) the execution reads: the data input and the dynamic-batch buffer.
    pub inputs: Vec<(usize, usize)>,
    /// (address, bytes) it writes.
    pub output: (usize, usize),
    /// Its body is running now (not only issued).
    pub running: bool,
    /// MD8 was reported for it (once).
    pub md8_reported: bool,
}

/// Memory a loaded model holds until unload (MD2 work / weight, MD3 model bytes).
pub struct Region {
    /// The tracked allocation it lies in (its start).
    pub alloc: usize,
    pub start: usize,
    pub len: usize,
    /// "work memory", "weight memory" or "model bytes".
    pub what: &'static str,
    /// The rule a free or a write breaks: "MD2" or "MD3".
    pub rule: &'static str,
}

pub struct Loaded {
    pub model: Arc<Model>,
    /// MD1: the context the model was loaded in.
    pub ctx: u64,
    /// Executions issued and not done: execution id (the task id of an asynchronous one) ->
    /// its stream (`None`: a synchronous `aclmdlExecute`). MD7, MD8.
    pub pending: BTreeMap<u64, Option<u64>>,
    /// MD12: the last batch set on any dataset of the model.
    pub cur_batch: Option<u64>,
    /// Tracked memory the model holds until unload (MD2 work/weight, MD3 model bytes): a
    /// free or a write breaks the region's rule.
    pub regions: Vec<Region>,
    /// Work and weight memory the runtime allocated at load (no `...WithMem`): (device,
    /// bytes) counted against that device's memory until unload (D8).
    pub memory: Option<(i32, u64)>,
}

pub struct Desc {
    /// The model `aclmdlGetDesc` filled it from.
    pub model: Option<u32>,
}

pub struct Dataset {
    pub bufs: Vec<u64>,
    /// The batch `aclmdlSetDynamicBatchSize` set, and for which model (MD11).
    pub batch: Option<(u32, u64)>,
    /// Pending executions using it (MD6).
    pub uses: u32,
    pub destroyed: bool,
}

pub struct DataBuf {
    pub data: usize,
    pub size: usize,
    pub uses: u32,
    pub destroyed: bool,
}

impl Models {
    pub fn live_count(&self) -> usize {
        self.loaded.len()
            + self.descs.len()
            + self.datasets.values().filter(|d| !d.destroyed).count()
            + self.bufs.values().filter(|b| !b.destroyed).count()
    }

    /// The leak report's lines (P2).
    pub fn describe_live(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .loaded
            .keys()
            .map(|id| format!("model {id} (loaded, never unloaded)"))
            .collect();
        let mut sorted = |kind: &str, base: usize, ids: Vec<u64>| {
            let mut ids = ids;
            ids.sort_unstable();
            v.extend(
                ids.iter()
                    .map(|id| format!("{kind} {:#x}", handle(base, *id))),
            );
        };
        sorted(
            "model description",
            DESC_BASE,
            self.descs.keys().copied().collect(),
        );
        sorted(
            "dataset",
            DATASET_BASE,
            self.datasets
                .iter()
                .filter(|(_, d)| !d.destroyed)
                .map(|(k, _)| *k)
                .collect(),
        );
        sorted(
            "data buffer",
            DATABUF_BASE,
            self.bufs
                .iter()
                .filter(|(_, b)| !b.destroyed)
                .map(|(k, _)| *k)
                .collect(),
        );
        v
    }
}

/// One execution: what it holds and what it computes.
pub struct Exec {
    pub model_id: u32,
    pub model: Arc<Model>,
    pub datasets: [u64; 2],
    pub bufs: Vec<u64>,
    /// (address, bytes) of the data input and of the output.
    pub input: (usize, usize),
    pub output: (usize, usize),
    /// The batch at issue: the one set on the input dataset, or the largest gear (MD11).
    pub batch: u64,
    /// The dynamic-batch buffer (8 bytes) when a batch was set on the input dataset: the
    /// execution reads its batch there when it runs, as it reads its input.
    pub batch_at: Option<usize>,
}

/// The body of an execution, run without the lock by a stream worker.
pub struct Run {
    model: Arc<Model>,
    input: (usize, usize),
    output: (usize, usize),
    batch: u64,
    batch_at: Option<usize>,
}

impl Exec {
    pub fn run(&self) -> Run {
        Run {
            model: self.model.clone(),
            input: self.input,
            output: self.output,
            batch: self.batch,
            batch_at: self.batch_at,
        }
    }

    /// What it reads and writes (MD6).
    fn uses(&self, stream: Option<u64>) -> ExecUse {
        let mut inputs = vec![self.input];
        inputs.extend(self.batch_at.map(|a| (a, 8)));
        ExecUse {
            model_id: self.model_id,
            stream,
            inputs,
            output: self.output,
            running: false,
            md8_reported: false,
        }
    }
}

impl Run {
    /// The batch, read when the execution starts, then the model's time (`time` µs per
    /// batch item), then its evaluation. Run by a stream worker without the lock: the
    /// memory is held by the task (M2) and a teardown joins the worker before freeing it.
    pub fn run(self) {
        let batch = self.batch();
        self.sleep(batch);
        let input = self.read_input();
        let output = self.compute(&input, batch);
        self.write_output(&output);
    }

    /// The batch this execution runs with: what the dynamic-batch buffer holds now (the
    /// device reads it when the execution starts; `aclmdlSetDynamicBatchSize` wrote it),
    /// or the batch of the issue if that memory holds no gear any more.
    fn batch(&self) -> u64 {
        let Some(at) = self.batch_at else {
            return self.batch;
        };
        let mut b = [0u8; 8];
        // SAFETY: 8 bytes validated at issue inside a live device allocation (MD9), kept
        // alive by its use count (M2) until this execution is done.
        unsafe { std::ptr::copy(at as *const u8, b.as_mut_ptr(), 8) };
        let v = u64::from_ne_bytes(b);
        if self.model.gears.contains(&v) {
            v
        } else {
            self.batch
        }
    }

    fn sleep(&self, batch: u64) {
        let us = self.model.time_us.saturating_mul(batch);
        if us > 0 {
            std::thread::sleep(Duration::from_micros(us));
        }
    }

    /// A copy of the input buffer.
    fn read_input(&self) -> Vec<u8> {
        let mut input = vec![0u8; self.input.1];
        // SAFETY: validated at issue (MD9): the input lies in a live device allocation,
        // kept alive by its use count (M2) until this execution is done, and not freed by a
        // teardown meanwhile (a stream worker is joined first; a synchronous execution pins
        // it, `exec::pinned`).
        unsafe { std::ptr::copy(self.input.0 as *const u8, input.as_mut_ptr(), input.len()) };
        input
    }

    /// The evaluation, on copies: touches no runtime memory.
    fn compute(&self, input: &[u8], batch: u64) -> Vec<u8> {
        let mut output = vec![0u8; self.output.1];
        self.model.eval(input, batch, &mut output);
        output
    }

    fn write_output(&self, output: &[u8]) {
        // SAFETY: as for the input (the output range was validated the same way).
        unsafe { std::ptr::copy(output.as_ptr(), self.output.0 as *mut u8, output.len()) };
    }
}

/// Where a pending execution runs, for MD8's messages: its stream, or none (synchronous).
fn pending_on(stream: Option<u64>) -> String {
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
fn acquire(rt: &mut Rt, id: u64, x: &Exec, sid: Option<u64>) {
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
fn unuse(rt: &mut Rt, start: usize) {
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
        } else if overlaps(write, e.output) {
            what.push(format!("writes {}, the output of", range(write)));
        }
        if let Some(r) = read.filter(|r| overlaps(*r, e.output)) {
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
        } else if overlaps(r, e.output) {
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

/// As [`ffi`] for the functions that return a value instead of an error code (0 or NULL
/// on failure, which sets the recent error message).
fn ffi_val<T: Copy>(default: T, f: impl FnOnce() -> Result<T, i32>) -> T {
    let mut v = default;
    let _ = ffi(|| {
        v = f()?;
        Ok(())
    });
    v
}

fn bad(what: &str, h: usize) -> i32 {
    errmsg::why(
        code::INVALID_PARAM,
        format!("{what} {h:#x} is unknown or destroyed"),
    )
}

/// Remembers a destroyed description, dataset or data buffer (MD5).
fn bury(m: &mut Models, id: u64, kind: &'static str) {
    m.tombs.insert(id, kind);
    if m.tombs.len() > TOMBS {
        m.tombs.pop_first();
    }
}

/// MD5: `call` uses the destroyed `kind` handle `h`; the call returns 100000.
fn destroyed(rt: &mut Rt, call: &str, kind: &str, h: usize) -> i32 {
    rt.report(
        "MD5",
        format!(
            "{call}: {kind} {h:#x} was destroyed: a destroyed {kind} must not be used (nor destroyed) again; the call returns 100000"
        ),
    );
    errmsg::why(
        code::INVALID_PARAM,
        format!("{kind} {h:#x} was destroyed (MD5)"),
    )
}

/// The id of a live handle of `kind`; a destroyed one (remembered) is an MD5 finding, an
/// unknown one only 100000.
fn live_id(
    rt: &mut Rt,
    call: &str,
    (base, kind): (usize, &'static str),
    h: usize,
    live: impl Fn(&Models, u64) -> bool,
) -> Result<u64, i32> {
    match decode(base, h) {
        Some(id) if live(&rt.models, id) => Ok(id),
        Some(id) if rt.models.tombs.get(&id) == Some(&kind) => Err(destroyed(rt, call, kind, h)),
        _ => Err(bad(kind, h)),
    }
}

fn dataset_id(rt: &mut Rt, call: &str, h: usize) -> Result<u64, i32> {
    live_id(rt, call, (DATASET_BASE, "dataset"), h, |m, id| {
        m.datasets.get(&id).is_some_and(|d| !d.destroyed)
    })
}

fn buf_id(rt: &mut Rt, call: &str, h: usize) -> Result<u64, i32> {
    live_id(rt, call, (DATABUF_BASE, "data buffer"), h, |m, id| {
        m.bufs.get(&id).is_some_and(|b| !b.destroyed)
    })
}

fn desc_id(rt: &mut Rt, call: &str, h: usize) -> Result<u64, i32> {
    live_id(rt, call, (DESC_BASE, "model description"), h, |m, id| {
        m.descs.contains_key(&id)
    })
}

/// The live data buffer `b` a dataset holds: (address, size); one destroyed since it was
/// added is an MD5 finding (ids are never reused: it was live when added).
fn held_buf(rt: &mut Rt, call: &str, ds: u64, b: u64) -> Result<(usize, usize), i32> {
    match rt.models.bufs.get(&b).filter(|x| !x.destroyed) {
        Some(x) => Ok((x.data, x.size)),
        None => {
            let h = handle(DATABUF_BASE, b);
            rt.report(
                "MD5",
                format!(
                    "{call}: dataset {:#x} holds data buffer {h:#x}, which was destroyed: destroy the data buffers only when the dataset is no longer used; the call returns 100000",
                    handle(DATASET_BASE, ds)
                ),
            );
            Err(errmsg::why(
                code::INVALID_PARAM,
                format!("data buffer {h:#x} of the dataset was destroyed (MD5)"),
            ))
        }
    }
}

fn loaded(rt: &Rt, id: u32) -> Result<&Loaded, i32> {
    rt.models.loaded.get(&id).ok_or_else(|| {
        errmsg::why(
            code::INVALID_MODEL_ID,
            format!("no model is loaded with id {id}"),
        )
    })
}

/// The model a description describes; MD4 when it was unloaded.
fn described(rt: &mut Rt, h: usize, call: &str) -> Result<(Arc<Model>, Option<u64>), i32> {
    let id = desc_id(rt, call, h)?;
    let Some(model_id) = rt.models.descs.get(&id).and_then(|d| d.model) else {
        return Err(errmsg::why(
            code::INVALID_PARAM,
            "the description was never filled by aclmdlGetDesc",
        ));
    };
    match rt.models.loaded.get(&model_id) {
        Some(l) => Ok((l.model.clone(), l.cur_batch)),
        None => {
            rt.report(
                "MD4",
                format!(
                    "{call}: model description {h:#x} describes model {model_id}, which was unloaded: query a description only while its model is loaded"
                ),
            );
            Err(errmsg::why(
                code::INVALID_MODEL_ID,
                format!("model {model_id} of this description was unloaded (MD4)"),
            ))
        }
    }
}

fn cstr(p: *const c_char) -> Vec<u8> {
    // SAFETY: the callers pass a non-NULL, NUL-terminated string (checked non-NULL first).
    unsafe { CStr::from_ptr(p) }.to_bytes().to_vec()
}

/// How many bytes of a model file are read first: a file whose first bytes cannot start a
/// model of this format (`crate::model::may_be_ours`: a real .om, a file of zeros) is
/// refused without reading the rest.
const HEAD: u64 = 4096;

/// Reads a model file, without the global lock (a slow file must not block the other
/// threads): a regular file of at most `limit` bytes (the device's memory). A directory,
/// FIFO or device, or an unreadable file: 100014 (`ACL_ERROR_READ_MODEL_FAILURE`); a
/// larger file: 100015 (`ACL_ERROR_MODEL_SIZE_INVALID`). At most the file's size + 1 bytes
/// are read: a file yielding more than its size says (a `/proc` file of size 0 whose content
/// never ends, a file growing meanwhile) is 100014 too. Its first bytes are checked before
/// the rest is read: not this format, 100013 (`ACL_ERROR_PARSE_MODEL`, as a real .om).
fn read_file(path: &[u8], limit: u64) -> Result<Vec<u8>, i32> {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
    let fail = |e: String| {
        errmsg::why(
            code::READ_MODEL_FAILURE,
            format!("cannot read {}: {e}", path.display()),
        )
    };
    // O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused below).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| fail(e.to_string()))?;
    let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    let size = meta.len();
    if size > limit {
        return Err(errmsg::why(
            code::MODEL_SIZE_INVALID,
            format!(
                "{}: {size} B, more than the device's {limit} B of memory",
                path.display()
            ),
        ));
    }
    let mut file = file.take(size.saturating_add(1));
    let mut bytes = Vec::with_capacity(usize::try_from(size.min(HEAD)).unwrap_or(0));
    let longer = || {
        fail(format!(
            "it yields more bytes than its size ({size} B) says: not a file that can be read whole"
        ))
    };
    (&mut file)
        .take(HEAD)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > size {
        return Err(longer());
    }
    if !crate::model::may_be_ours(&bytes) {
        return Err(errmsg::why(code::PARSE_MODEL, crate::model::NOT_ACLSIM));
    }
    bytes.reserve_exact(
        usize::try_from(size)
            .unwrap_or(0)
            .saturating_sub(bytes.len()),
    );
    file.read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > size {
        return Err(longer());
    }
    Ok(bytes)
}

/// Parses model bytes and checks that the model fits in a device of `limit` bytes (100015)
/// and can complete (P5, 100013). Without the lock.
fn parse(bytes: &[u8], limit: u64) -> Result<Model, i32> {
    if bytes.is_empty() {
        return Err(errmsg::why(code::MODEL_SIZE_INVALID, "model size 0"));
    }
    let model = crate::model::parse(bytes).map_err(|e| errmsg::why(e.code, e.message))?;
    model
        .check_fits(limit)
        .map_err(|e| errmsg::why(e.code, e.message))?;
    Ok(model)
}

/// Checks `size` model bytes at `p` (M1, M2); the tracked allocation they lie in, if any
/// (MD3). They are copied afterwards, without the lock (`load`).
fn check_model_bytes(rt: &mut Rt, call: &str, p: usize, size: usize) -> Result<Option<usize>, i32> {
    if size == 0 {
        return Err(errmsg::why(code::MODEL_SIZE_INVALID, "model size 0"));
    }
    let limit = rt.extra.device_memory;
    if size as u64 > limit {
        return Err(errmsg::why(
            code::MODEL_SIZE_INVALID,
            format!("model size {size} B, more than the device's {limit} B of memory"),
        ));
    }
    match locate(rt, p, size) {
        Loc::Device(s) | Loc::Host(s) => Ok(Some(s)),
        Loc::Untracked => Ok(None),
        Loc::Bad(m) => {
            let rule = if m.contains("(M2)") { "M2" } else { "M1" };
            rt.report(
                rule,
                format!("{call}: model bytes {m}; the call returns 100000"),
            );
            Err(code::INVALID_PARAM)
        }
    }
}

/// A copy of `size` bytes at `p`.
fn copy_bytes(p: usize, size: usize) -> Vec<u8> {
    let mut v = vec![0u8; size];
    // SAFETY: a tracked range validated by `check_model_bytes` and pinned while this runs,
    // or untracked memory the caller gives as `size` readable bytes for the duration of the
    // call (aclmdlLoadFromMem's contract).
    unsafe { std::ptr::copy(p as *const u8, v.as_mut_ptr(), size) };
    v
}

/// MD2: work or weight memory of a `...WithMem` load.
fn check_mem(rt: &Rt, what: &str, p: usize, size: usize, need: usize) -> Result<usize, i32> {
    if size < need {
        return Err(errmsg::why(
            code::INVALID_PARAM,
            format!("{what} size {size} is less than the {need} B aclmdlQuerySize reports (MD2)"),
        ));
    }
    match locate(rt, p, size) {
        Loc::Device(s) => Ok(s),
        _ => Err(errmsg::why(
            code::INVALID_PARAM,
            format!("{what} memory [{p:#x}, +{size}) is not inside one device allocation (MD2)"),
        )),
    }
}

/// Registers a loaded model in the current context; returns its id. A model whose memory
/// the runtime allocates (no `...WithMem`) counts its work and weight against the device's
/// free memory: 207001 (`ACL_ERROR_RT_MEMORY_ALLOCATION`) beyond it.
fn register(
    rt: &mut Rt,
    model: Model,
    regions: Vec<Region>,
    runtime_memory: bool,
) -> Result<u32, i32> {
    let ctx = rt.cur_ctx()?;
    let memory = if runtime_memory {
        let device = rt.contexts.get(&ctx).map_or(-1, |c| c.device);
        // Fits in the device (checked at parse): no overflow.
        let bytes = (model.work as u64).saturating_add(model.weight as u64);
        rt.extra.charge(false, device, bytes)?;
        Some((device, bytes))
    } else {
        None
    };
    for r in &regions {
        if let Some(a) = rt.allocs.get_mut(&r.alloc) {
            a.uses += 1;
        }
    }
    let id = NEXT_MODEL_ID.fetch_add(1, Ordering::Relaxed);
    rt.models.loaded.insert(
        id,
        Loaded {
            model: Arc::new(model),
            ctx,
            pending: BTreeMap::new(),
            cur_batch: None,
            regions,
            memory,
        },
    );
    Ok(id)
}

enum Src {
    File(*const c_char),
    Mem(usize, usize),
}

/// Loads a model. The file is read, or the model bytes copied, and parsed without the global
/// lock (a FIFO, a slow file or a large copy must not block the other threads); the lock is
/// taken again to register it. Model bytes in a tracked allocation are checked under the
/// lock (M1, M2) and held and pinned while they are copied (a free is deferred, a device
/// reset or aclFinalize waits for the copy).
fn load(name: &str, src: Src, id_out: *mut u32, mem: Option<(usize, usize, usize, usize)>) -> R {
    let mut g = enter(name, Call::Action)?;
    let rt = rt_of(&mut g)?;
    rt.cur_ctx()?; // 107002
    let limit = rt.extra.device_memory;
    let (model, region) = match src {
        Src::File(path) => {
            let path = cstr(path);
            let model = g.unlocked(|| parse(&read_file(&path, limit)?, limit))?;
            (model, None)
        }
        Src::Mem(p, size) => {
            let tracked = check_model_bytes(rt, name, p, size)?;
            let held = rt.take_uses(&tracked.into_iter().collect::<Vec<_>>());
            let starts: Vec<usize> = held.iter().map(|h| h.0).collect();
            let bytes = exec::pinned(&mut g, &starts, || copy_bytes(p, size));
            if let Some(rt) = g.rt.as_deref_mut() {
                rt.drop_uses(&held);
            }
            // The copy is dropped without the lock too (a large one takes milliseconds).
            let model = g.unlocked(move || parse(&bytes, limit))?;
            // MD3: the allocation holding the bytes, if any.
            let region = held.first().map(|&(alloc, generation)| {
                (
                    Region {
                        alloc,
                        start: p,
                        len: size,
                        what: "model bytes",
                        rule: "MD3",
                    },
                    generation,
                )
            });
            (model, region)
        }
    };
    // The runtime may have been finalized meanwhile (100001), the context destroyed (107002).
    let rt = rt_of(&mut g)?;
    rt.cur_ctx()?;
    let mut regions = Vec::new();
    // MD3: the model bytes, if their allocation is still the same (not freed meanwhile).
    regions.extend(
        region
            .filter(|(r, generation)| {
                rt.alloc_generation(r.alloc) == Some(*generation) && !rt.allocs[&r.alloc].freed
            })
            .map(|(r, _)| r),
    );
    if let Some((work, work_size, weight, weight_size)) = mem {
        let w = check_mem(rt, "work", work, work_size, model.work)?;
        let wt = check_mem(rt, "weight", weight, weight_size, model.weight)?;
        regions.push(Region {
            alloc: w,
            start: work,
            len: work_size,
            what: "work memory",
            rule: "MD2",
        });
        regions.push(Region {
            alloc: wt,
            start: weight,
            len: weight_size,
            what: "weight memory",
            rule: "MD2",
        });
    }
    let id = register(rt, model, regions, mem.is_none())?;
    out(id_out, id)
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlQuerySize(
    fileName: *const c_char,
    workSize: *mut usize,
    weightSize: *mut usize,
) -> i32 {
    calls::count(CallId::aclmdlQuerySize);
    ffi(|| {
        non_null(&[fileName as usize, workSize as usize, weightSize as usize])?;
        let mut g = enter("aclmdlQuerySize", Call::Action)?;
        let limit = rt_of(&mut g)?.extra.device_memory;
        drop(g);
        // Without the lock (see `load`).
        let model = parse(&read_file(&cstr(fileName), limit)?, limit)?;
        out(workSize, model.work)?;
        out(weightSize, model.weight)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlLoadFromFile(modelPath: *const c_char, modelId: *mut u32) -> i32 {
    calls::count(CallId::aclmdlLoadFromFile);
    ffi(|| {
        non_null(&[modelPath as usize, modelId as usize])?;
        load("aclmdlLoadFromFile", Src::File(modelPath), modelId, None)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlLoadFromMem(
    model: *const c_void,
    modelSize: usize,
    modelId: *mut u32,
) -> i32 {
    calls::count(CallId::aclmdlLoadFromMem);
    ffi(|| {
        non_null(&[model as usize, modelId as usize])?;
        load(
            "aclmdlLoadFromMem",
            Src::Mem(model as usize, modelSize),
            modelId,
            None,
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlLoadFromFileWithMem(
    modelPath: *const c_char,
    modelId: *mut u32,
    workPtr: *mut c_void,
    workSize: usize,
    weightPtr: *mut c_void,
    weightSize: usize,
) -> i32 {
    calls::count(CallId::aclmdlLoadFromFileWithMem);
    ffi(|| {
        non_null(&[
            modelPath as usize,
            modelId as usize,
            workPtr as usize,
            weightPtr as usize,
        ])?;
        load(
            "aclmdlLoadFromFileWithMem",
            Src::File(modelPath),
            modelId,
            Some((workPtr as usize, workSize, weightPtr as usize, weightSize)),
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlLoadFromMemWithMem(
    model: *const c_void,
    modelSize: usize,
    modelId: *mut u32,
    workPtr: *mut c_void,
    workSize: usize,
    weightPtr: *mut c_void,
    weightSize: usize,
) -> i32 {
    calls::count(CallId::aclmdlLoadFromMemWithMem);
    ffi(|| {
        non_null(&[
            model as usize,
            modelId as usize,
            workPtr as usize,
            weightPtr as usize,
        ])?;
        load(
            "aclmdlLoadFromMemWithMem",
            Src::Mem(model as usize, modelSize),
            modelId,
            Some((workPtr as usize, workSize, weightPtr as usize, weightSize)),
        )
    })
}

/// MD1: the model must be used from the context it was loaded in.
fn same_context(rt: &Rt, model_id: u32) -> R {
    let ctx = loaded(rt, model_id)?.ctx;
    if rt.cur_ctx()? != ctx {
        return Err(errmsg::why(
            code::RT_MODEL_CONTEXT,
            format!("model {model_id} was loaded in another context (MD1)"),
        ));
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlUnload(modelId: u32) -> i32 {
    calls::count(CallId::aclmdlUnload);
    ffi(|| {
        let mut g = enter("aclmdlUnload", Call::Action)?;
        let rt = rt_of(&mut g)?;
        same_context(rt, modelId)?;
        let pending = loaded(rt, modelId)?.pending.len();
        if pending > 0 {
            rt.report(
                "MD7",
                format!(
                    "aclmdlUnload({modelId}) while {pending} execution(s) of it are pending: synchronize the stream first; the call returns 107037 and the model stays loaded"
                ),
            );
            return Err(errmsg::why(
                code::RT_MODEL_RUNNING,
                format!("{pending} execution(s) of model {modelId} are pending (MD7)"),
            ));
        }
        if let Some(l) = rt.models.loaded.remove(&modelId) {
            for r in l.regions {
                unuse(rt, r.alloc);
            }
            if let Some((device, bytes)) = l.memory {
                rt.extra.uncharge(false, device, bytes);
            }
        }
        Ok(())
    })
}

/// The checks of an execution (MD1, MD6, MD8-MD11, sizes); returns it and the tracked
/// allocations it uses.
fn prepare(
    rt: &mut Rt,
    call: &str,
    model_id: u32,
    input: usize,
    output: usize,
    sid: Option<u64>,
) -> Result<(Exec, Vec<usize>), i32> {
    same_context(rt, model_id)?;
    let model = loaded(rt, model_id)?.model.clone();
    let din = dataset_id(rt, call, input)?;
    let dout = dataset_id(rt, call, output)?;
    let mut need_in = vec![model.input.bytes()];
    if model.dynamic() {
        need_in.push(8);
    }
    let bufs_in = rt.models.datasets[&din].bufs.clone();
    let bufs_out = rt.models.datasets[&dout].bufs.clone();
    if bufs_in.len() != need_in.len() {
        return Err(errmsg::why(
            code::MODEL_INPUT_NOT_MATCH,
            format!(
                "the input dataset has {} buffer(s), model {model_id} has {} input(s)",
                bufs_in.len(),
                need_in.len()
            ),
        ));
    }
    if bufs_out.len() != 1 {
        return Err(errmsg::why(
            code::MODEL_OUTPUT_NOT_MATCH,
            format!(
                "the output dataset has {} buffer(s), model {model_id} has 1 output",
                bufs_out.len()
            ),
        ));
    }
    let outputs = [model.output.bytes()];
    let all = bufs_in
        .iter()
        .zip(&need_in)
        .map(|(b, n)| (din, *b, *n, code::MODEL_INPUT_NOT_MATCH, "input"))
        .chain(
            bufs_out
                .iter()
                .zip(&outputs)
                .map(|(b, n)| (dout, *b, *n, code::MODEL_OUTPUT_NOT_MATCH, "output")),
        );
    let mut ranges = Vec::new();
    for (i, (ds, b, need, err, role)) in all.enumerate() {
        let (data, size) = held_buf(rt, call, ds, b)?;
        if size < need {
            return Err(errmsg::why(
                err,
                format!(
                    "{role} data buffer {:#x} holds {size} B, the model's {role} needs {need} B (MD10)",
                    handle(DATABUF_BASE, b),
                ),
            ));
        }
        ranges.push((i, b, data, size));
    }
    let mut allocs = Vec::new();
    for (_, b, data, size) in &ranges {
        match locate(rt, *data, *size) {
            Loc::Device(s) => allocs.push(s),
            other => {
                let is = match other {
                    Loc::Host(_) => "host memory".to_string(),
                    Loc::Bad(m) => m,
                    _ => "not memory of aclrtMalloc".to_string(),
                };
                rt.report(
                    "MD9",
                    format!(
                        "{call}: data buffer {:#x} ([{data:#x}, +{size})): {is}; model I/O memory must be device memory from aclrtMalloc; the call returns 100000",
                        handle(DATABUF_BASE, *b)
                    ),
                );
                return Err(errmsg::why(
                    code::INVALID_PARAM,
                    "a data buffer is not device memory (MD9)",
                ));
            }
        }
    }
    if let Some(sid) = sid {
        check_stream_device(rt, call, sid, &allocs)?;
    }
    // MD2 / MD3: model I/O in memory a loaded model holds.
    for (_, b, data, size) in &ranges {
        touch_model_memory(
            rt,
            call,
            *data,
            *size,
            &format!("uses data buffer {:#x} over", handle(DATABUF_BASE, *b)),
        );
    }
    let mut batch_at = None;
    let batch = if model.dynamic() {
        match rt.models.datasets[&din].batch {
            Some((m, b)) if m == model_id => {
                batch_at = ranges.get(1).map(|r| r.2);
                b
            }
            _ => {
                rt.report(
                    "MD11",
                    format!(
                        "{call}: dynamic model {model_id} executed without aclmdlSetDynamicBatchSize on its input dataset {:#x}: set the batch before executing; the simulator uses the largest gear ({})",
                        handle(DATASET_BASE, din),
                        model.max_batch()
                    ),
                );
                model.max_batch()
            }
        }
    } else {
        1
    };
    // A synchronous execution runs now: any execution of the model not done runs beside it.
    // An asynchronous one is checked when it reaches the front of its stream (`must_wait`),
    // since an event may order it after the others.
    if sid.is_none() {
        let others: Vec<String> = loaded(rt, model_id)?
            .pending
            .values()
            .copied()
            .map(pending_on)
            .collect();
        if !others.is_empty() {
            rt.report(
                "MD8",
                format!(
                    "{call}: model {model_id} executed synchronously while an execution of it is pending on {}: never run one model concurrently (synchronize first, or load it twice); the simulator runs it now",
                    others.join(", "),
                ),
            );
        }
    }
    let (_, _, in_addr, _) = ranges[0];
    let (_, _, out_addr, _) = ranges[ranges.len() - 1];
    Ok((
        Exec {
            model_id,
            input: (in_addr, model.input.bytes()),
            output: (out_addr, model.output.bytes()),
            model,
            datasets: [din, dout],
            bufs: ranges.iter().map(|r| r.1).collect(),
            batch,
            batch_at,
        },
        allocs,
    ))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlExecute(modelId: u32, input: *const c_void, output: *mut c_void) -> i32 {
    calls::count(CallId::aclmdlExecute);
    ffi(|| {
        non_null(&[input as usize, output as usize])?;
        let mut g = enter("aclmdlExecute", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let (x, allocs) = prepare(
            rt,
            "aclmdlExecute",
            modelId,
            input as usize,
            output as usize,
            None,
        )?;
        let id = rt.new_id();
        let held = rt.take_uses(&allocs);
        acquire(rt, id, &x, None);
        exec_starts(rt, id);
        let run = x.run();
        // The batch is read when the execution starts (under the lock). Then, all without
        // the lock: the model's time passes, the input is copied, the model evaluated on the
        // copy, the output written. Each copy first checks (under the lock) that the memory
        // is still there, since a device reset may have freed it meanwhile (then 507011),
        // and pins it (a device reset or aclFinalize waits for the copy, `exec::pinned`);
        // the evaluation touches no runtime memory, so nothing waits for it.
        let batch = run.batch();
        g.unlocked(|| run.sleep(batch));
        let starts: Vec<usize> = held.iter().map(|h| h.0).collect();
        let mut intact = rt_of(&mut g)?.still_there(&held);
        if intact {
            let input = exec::pinned(&mut g, &starts, || run.read_input());
            let output = g.unlocked(|| {
                // The copies are dropped without the lock too (a large one takes
                // milliseconds).
                let input = input;
                run.compute(&input, batch)
            });
            intact = rt_of(&mut g)?.still_there(&held);
            let pins: &[usize] = if intact { &starts } else { &[] };
            exec::pinned(&mut g, pins, || {
                let output = output;
                if intact {
                    run.write_output(&output);
                }
            });
        }
        let rt = rt_of(&mut g)?;
        rt.drop_uses(&held);
        release(rt, id, &x);
        if intact {
            Ok(())
        } else {
            Err(errmsg::why(
                code::RT_MODEL_EXECUTE,
                "the model's memory was released during the execution",
            ))
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlExecuteAsync(
    modelId: u32,
    input: *const c_void,
    output: *mut c_void,
    stream: *mut c_void,
) -> i32 {
    calls::count(CallId::aclmdlExecuteAsync);
    ffi(|| {
        non_null(&[input as usize, output as usize])?;
        let mut g = enter("aclmdlExecuteAsync", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?;
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        let (x, allocs) = prepare(
            rt,
            "aclmdlExecuteAsync",
            modelId,
            input as usize,
            output as usize,
            Some(sid),
        )?;
        // The task id is the next id: the execution is pending from its issue on.
        let id = rt.next_id;
        acquire(rt, id, &x, Some(sid));
        let issued = exec::enqueue(rt, sid, TaskKind::Model(Box::new(x)), allocs);
        debug_assert_eq!(issued, id);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlSetDynamicBatchSize(
    modelId: u32,
    dataset: *mut c_void,
    index: usize,
    batchSize: u64,
) -> i32 {
    calls::count(CallId::aclmdlSetDynamicBatchSize);
    ffi(|| {
        non_null(&[dataset as usize])?;
        let mut g = enter("aclmdlSetDynamicBatchSize", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let model = loaded(rt, modelId)?.model.clone();
        if !model.dynamic() {
            return Err(errmsg::why(
                code::MODEL_NOT_DYNAMIC,
                format!("model {modelId} has no batch gears (MD11)"),
            ));
        }
        let ds = dataset_id(rt, "aclmdlSetDynamicBatchSize", dataset as usize)?;
        let md11 = |rt: &mut Rt, msg: String| {
            rt.report(
                "MD11",
                format!(
                    "aclmdlSetDynamicBatchSize(model {modelId}): {msg}; the call returns 100000"
                ),
            );
            Err(errmsg::why(code::INVALID_PARAM, format!("{msg} (MD11)")))
        };
        if index != 1 {
            return md11(
                rt,
                format!("index {index} is not the index of {DYNAMIC_INPUT} (1)"),
            );
        }
        if !model.gears.contains(&batchSize) {
            return md11(
                rt,
                format!(
                    "batch {batchSize} is not one of the gears {:?}",
                    model.gears
                ),
            );
        }
        let Some(b) = rt.models.datasets[&ds].bufs.get(1).copied() else {
            return md11(
                rt,
                format!("the dataset has no buffer for {DYNAMIC_INPUT} (index 1) yet"),
            );
        };
        let (data, size) = held_buf(rt, "aclmdlSetDynamicBatchSize", ds, b)?;
        if size < 8 {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("the {DYNAMIC_INPUT} buffer holds {size} B, it needs 8"),
            ));
        }
        if !matches!(locate(rt, data, 8), Loc::Device(_)) {
            rt.report(
                "MD9",
                format!(
                    "aclmdlSetDynamicBatchSize: the {DYNAMIC_INPUT} data buffer {:#x} ({data:#x}) is not device memory from aclrtMalloc; the call returns 100000",
                    handle(DATABUF_BASE, b)
                ),
            );
            return Err(errmsg::why(
                code::INVALID_PARAM,
                "a data buffer is not device memory (MD9)",
            ));
        }
        // MD6: the batch buffer of a pending execution (it reads the batch when it starts,
        // so a pending one may see this batch, a running one not). The write goes on, as
        // on the device.
        host_access(rt, "aclmdlSetDynamicBatchSize", (data, 8), None);
        // SAFETY: 8 bytes inside a live device allocation (checked above), under the lock.
        unsafe { std::ptr::copy(batchSize.to_ne_bytes().as_ptr(), data as *mut u8, 8) };
        if let Some(d) = rt.models.datasets.get_mut(&ds) {
            d.batch = Some((modelId, batchSize));
        }
        if let Some(l) = rt.models.loaded.get_mut(&modelId) {
            l.cur_batch = Some(batchSize);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlSetDynamicHWSize(
    modelId: u32,
    dataset: *mut c_void,
    index: usize,
    height: u64,
    width: u64,
) -> i32 {
    calls::count(CallId::aclmdlSetDynamicHWSize);
    ffi(|| {
        let _ = (index, height, width);
        non_null(&[dataset as usize])?;
        let mut g = enter("aclmdlSetDynamicHWSize", Call::Action)?;
        let rt = rt_of(&mut g)?;
        loaded(rt, modelId)?;
        Err(errmsg::why(
            code::MODEL_NOT_DYNAMIC,
            format!("model {modelId} has no HW gears (the simulator's models have none)"),
        ))
    })
}

// ---- Descriptions --------------------------------------------------------------------

/// Creates a host object with a fresh handle (NULL before aclInit or with a fault).
fn create(name: &str, base: usize, add: impl FnOnce(&mut Models, u64)) -> *mut c_void {
    ffi_val(std::ptr::null_mut(), || {
        let mut g = enter(name, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = rt.new_id();
        add(&mut rt.models, id);
        Ok(handle(base, id) as *mut c_void)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlCreateDesc() -> *mut c_void {
    calls::count(CallId::aclmdlCreateDesc);
    create("aclmdlCreateDesc", DESC_BASE, |m, id| {
        m.descs.insert(id, Desc { model: None });
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlDestroyDesc(modelDesc: *mut c_void) -> i32 {
    calls::count(CallId::aclmdlDestroyDesc);
    ffi(|| {
        non_null(&[modelDesc as usize])?;
        let mut g = enter("aclmdlDestroyDesc", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = desc_id(rt, "aclmdlDestroyDesc", modelDesc as usize)?;
        rt.models.descs.remove(&id);
        bury(&mut rt.models, id, "model description");
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDesc(modelDesc: *mut c_void, modelId: u32) -> i32 {
    calls::count(CallId::aclmdlGetDesc);
    ffi(|| {
        non_null(&[modelDesc as usize])?;
        let mut g = enter("aclmdlGetDesc", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let id = desc_id(rt, "aclmdlGetDesc", modelDesc as usize)?;
        loaded(rt, modelId)?;
        if let Some(d) = rt.models.descs.get_mut(&id) {
            d.model = Some(modelId);
        }
        Ok(())
    })
}

/// Runs a query on the model a description describes.
fn query<T: Copy>(
    name: &str,
    desc: *const c_void,
    default: T,
    f: impl FnOnce(&Model, Option<u64>) -> Result<T, i32>,
) -> T {
    ffi_val(default, || {
        non_null(&[desc as usize])?;
        let mut g = enter(name, Call::Query)?;
        let rt = rt_of(&mut g)?;
        let (model, batch) = described(rt, desc as usize, name)?;
        f(&model, batch)
    })
}

fn no_index(index: usize) -> i32 {
    errmsg::why(code::INVALID_PARAM, format!("no tensor at index {index}"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetNumInputs(modelDesc: *mut c_void) -> usize {
    calls::count(CallId::aclmdlGetNumInputs);
    query("aclmdlGetNumInputs", modelDesc, 0, |m, _| {
        Ok(1 + usize::from(m.dynamic()))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetNumOutputs(modelDesc: *mut c_void) -> usize {
    calls::count(CallId::aclmdlGetNumOutputs);
    query("aclmdlGetNumOutputs", modelDesc, 0, |_, _| Ok(1))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputSizeByIndex(modelDesc: *mut c_void, index: usize) -> usize {
    calls::count(CallId::aclmdlGetInputSizeByIndex);
    query(
        "aclmdlGetInputSizeByIndex",
        modelDesc,
        0,
        |m, _| match index {
            0 => Ok(m.input.bytes()),
            1 if m.dynamic() => Ok(8),
            _ => Err(no_index(index)),
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputSizeByIndex(modelDesc: *mut c_void, index: usize) -> usize {
    calls::count(CallId::aclmdlGetOutputSizeByIndex);
    query(
        "aclmdlGetOutputSizeByIndex",
        modelDesc,
        0,
        |m, _| match index {
            0 => Ok(m.output.bytes()),
            _ => Err(no_index(index)),
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputIndexByName(
    modelDesc: *const c_void,
    name: *const c_char,
    index: *mut usize,
) -> i32 {
    calls::count(CallId::aclmdlGetInputIndexByName);
    ffi(|| {
        non_null(&[modelDesc as usize, name as usize, index as usize])?;
        let mut g = enter("aclmdlGetInputIndexByName", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let (m, _) = described(rt, modelDesc as usize, "aclmdlGetInputIndexByName")?;
        let wanted = cstr(name);
        if wanted == m.input.name.as_bytes() {
            out(index, 0)
        } else if m.dynamic() && wanted == DYNAMIC_INPUT.as_bytes() {
            out(index, 1)
        } else {
            Err(errmsg::why(
                code::INVALID_PARAM,
                format!(
                    "the model has no input named {}",
                    String::from_utf8_lossy(&wanted)
                ),
            ))
        }
    })
}

/// `aclmdlIODims`.
#[repr(C)]
pub struct IODims {
    pub name: [c_char; 128],
    pub dim_count: usize,
    pub dims: [i64; 128],
}

fn write_dims(p: *mut IODims, name: &str, dims: &[i64]) -> R {
    check_out(p)?;
    let mut d = IODims {
        name: [0; 128],
        dim_count: dims.len(),
        dims: [0; 128],
    };
    for (o, b) in d.name.iter_mut().zip(name.bytes().take(127)) {
        *o = b as c_char;
    }
    d.dims[..dims.len()].copy_from_slice(dims);
    out(p, d)
}

fn dims_query(
    name: &str,
    desc: *const c_void,
    index: usize,
    dims: *mut IODims,
    pick: impl FnOnce(&Model, Option<u64>) -> Option<(String, Vec<i64>)>,
) -> i32 {
    ffi(|| {
        non_null(&[desc as usize, dims as usize])?;
        let mut g = enter(name, Call::Query)?;
        let rt = rt_of(&mut g)?;
        let (model, batch) = described(rt, desc as usize, name)?;
        let (n, d) = pick(&model, batch).ok_or_else(|| no_index(index))?;
        write_dims(dims, &n, &d)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputDims(
    modelDesc: *const c_void,
    index: usize,
    dims: *mut IODims,
) -> i32 {
    calls::count(CallId::aclmdlGetInputDims);
    dims_query(
        "aclmdlGetInputDims",
        modelDesc,
        index,
        dims,
        |m, _| match index {
            0 => Some((m.input.name.clone(), m.input.dims.clone())),
            1 if m.dynamic() => Some((DYNAMIC_INPUT.to_string(), vec![1])),
            _ => None,
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputDims(
    modelDesc: *const c_void,
    index: usize,
    dims: *mut IODims,
) -> i32 {
    calls::count(CallId::aclmdlGetOutputDims);
    dims_query("aclmdlGetOutputDims", modelDesc, index, dims, |m, _| {
        (index == 0).then(|| (m.output.name.clone(), m.output.dims.clone()))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetCurOutputDims(
    modelDesc: *const c_void,
    index: usize,
    dims: *mut IODims,
) -> i32 {
    calls::count(CallId::aclmdlGetCurOutputDims);
    dims_query("aclmdlGetCurOutputDims", modelDesc, index, dims, |m, b| {
        (index == 0).then(|| (m.output.name.clone(), m.output_dims(b)))
    })
}

/// `aclmdlBatch`.
#[repr(C)]
pub struct Batch {
    pub batch_count: usize,
    pub batch: [u64; crate::model::MAX_GEARS],
}

/// MD11: the model's batch gears (none for a static model).
#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDynamicBatch(modelDesc: *const c_void, batch: *mut Batch) -> i32 {
    calls::count(CallId::aclmdlGetDynamicBatch);
    ffi(|| {
        non_null(&[modelDesc as usize, batch as usize])?;
        let mut g = enter("aclmdlGetDynamicBatch", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let (model, _) = described(rt, modelDesc as usize, "aclmdlGetDynamicBatch")?;
        // At most ACL_MAX_BATCH_NUM gears: a model with more is refused at load.
        debug_assert!(model.gears.len() <= crate::model::MAX_GEARS);
        let mut b = Batch {
            batch_count: model.gears.len().min(crate::model::MAX_GEARS),
            batch: [0; crate::model::MAX_GEARS],
        };
        for (o, g) in b.batch.iter_mut().zip(&model.gears) {
            *o = *g;
        }
        check_out(batch)?;
        out(batch, b)
    })
}

// ---- Element types and layouts (MD13) ------------------------------------------------
//
// The runtime's answers, with no error code: the value, or `ACL_DT_UNDEFINED` /
// `ACL_FORMAT_UNDEFINED` when the query fails (a NULL or unknown description, an index out
// of range: CANN's `aclmdlGetDataType` / `aclmdlGetFormat`), with the recent error message
// set. The dynamic-batch input is `int32`, format ND, as ATC compiles it (GE's
// `MultiBatchClonePass`); its buffer holds 8 bytes, which the batch fills as a `u64`.

/// The layout a tensor of the simulator's format reports: NCHW for 4 dims, ND otherwise.
fn format_of(t: &Tensor) -> i32 {
    if t.dims.len() == 4 {
        acl_format::NCHW
    } else {
        acl_format::ND
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputDataType(modelDesc: *const c_void, index: usize) -> i32 {
    calls::count(CallId::aclmdlGetInputDataType);
    query(
        "aclmdlGetInputDataType",
        modelDesc,
        acl_dt::UNDEFINED,
        |m, _| match index {
            0 => Ok(m.input.dtype.acl()),
            1 if m.dynamic() => Ok(acl_dt::INT32),
            _ => Err(no_index(index)),
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputDataType(modelDesc: *const c_void, index: usize) -> i32 {
    calls::count(CallId::aclmdlGetOutputDataType);
    query(
        "aclmdlGetOutputDataType",
        modelDesc,
        acl_dt::UNDEFINED,
        |m, _| match index {
            0 => Ok(m.output.dtype.acl()),
            _ => Err(no_index(index)),
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputFormat(modelDesc: *const c_void, index: usize) -> i32 {
    calls::count(CallId::aclmdlGetInputFormat);
    query(
        "aclmdlGetInputFormat",
        modelDesc,
        acl_format::UNDEFINED,
        |m, _| match index {
            0 => Ok(format_of(&m.input)),
            1 if m.dynamic() => Ok(acl_format::ND),
            _ => Err(no_index(index)),
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputFormat(modelDesc: *const c_void, index: usize) -> i32 {
    calls::count(CallId::aclmdlGetOutputFormat);
    query(
        "aclmdlGetOutputFormat",
        modelDesc,
        acl_format::UNDEFINED,
        |m, _| match index {
            0 => Ok(format_of(&m.output)),
            _ => Err(no_index(index)),
        },
    )
}

// ---- Datasets and data buffers -------------------------------------------------------

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlCreateDataset() -> *mut c_void {
    calls::count(CallId::aclmdlCreateDataset);
    create("aclmdlCreateDataset", DATASET_BASE, |m, id| {
        m.datasets.insert(
            id,
            Dataset {
                bufs: Vec::new(),
                batch: None,
                uses: 0,
                destroyed: false,
            },
        );
    })
}

/// MD6: destroying an object a pending execution uses.
fn md6(rt: &mut Rt, call: &str, what: &str, h: usize, uses: u32) {
    rt.report(
        "MD6",
        format!(
            "{call}({h:#x}): the {what} is used by {uses} pending model execution(s): synchronize the stream first; the simulator keeps it until they are done"
        ),
    );
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlDestroyDataset(dataset: *const c_void) -> i32 {
    calls::count(CallId::aclmdlDestroyDataset);
    ffi(|| {
        non_null(&[dataset as usize])?;
        let mut g = enter("aclmdlDestroyDataset", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = dataset_id(rt, "aclmdlDestroyDataset", dataset as usize)?;
        bury(&mut rt.models, id, "dataset");
        let uses = rt.models.datasets[&id].uses;
        if uses > 0 {
            md6(
                rt,
                "aclmdlDestroyDataset",
                "dataset",
                dataset as usize,
                uses,
            );
            if let Some(d) = rt.models.datasets.get_mut(&id) {
                d.destroyed = true;
            }
        } else {
            rt.models.datasets.remove(&id);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlAddDatasetBuffer(dataset: *mut c_void, dataBuffer: *mut c_void) -> i32 {
    calls::count(CallId::aclmdlAddDatasetBuffer);
    ffi(|| {
        non_null(&[dataset as usize, dataBuffer as usize])?;
        let mut g = enter("aclmdlAddDatasetBuffer", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let ds = dataset_id(rt, "aclmdlAddDatasetBuffer", dataset as usize)?;
        let b = buf_id(rt, "aclmdlAddDatasetBuffer", dataBuffer as usize)?;
        // MD6: a dataset a pending execution uses. The execution took its buffers at
        // issue (as the runtime copies their addresses then): finding only, the buffer is
        // added for later executions.
        let uses = rt.models.datasets[&ds].uses;
        if uses > 0 {
            rt.report(
                "MD6",
                format!(
                    "aclmdlAddDatasetBuffer({:#x}, {:#x}): the dataset is used by {uses} pending model execution(s), which stay as issued: change a dataset only once its executions are done (synchronize the stream first)",
                    dataset as usize, dataBuffer as usize
                ),
            );
        }
        if let Some(d) = rt.models.datasets.get_mut(&ds) {
            d.bufs.push(b);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDatasetNumBuffers(dataset: *const c_void) -> usize {
    calls::count(CallId::aclmdlGetDatasetNumBuffers);
    ffi_val(0, || {
        non_null(&[dataset as usize])?;
        let mut g = enter("aclmdlGetDatasetNumBuffers", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let ds = dataset_id(rt, "aclmdlGetDatasetNumBuffers", dataset as usize)?;
        Ok(rt.models.datasets[&ds].bufs.len())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDatasetBuffer(dataset: *const c_void, index: usize) -> *mut c_void {
    calls::count(CallId::aclmdlGetDatasetBuffer);
    ffi_val(std::ptr::null_mut(), || {
        non_null(&[dataset as usize])?;
        let mut g = enter("aclmdlGetDatasetBuffer", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let ds = dataset_id(rt, "aclmdlGetDatasetBuffer", dataset as usize)?;
        let b = rt.models.datasets[&ds]
            .bufs
            .get(index)
            .copied()
            .ok_or_else(|| no_index(index))?;
        Ok(handle(DATABUF_BASE, b) as *mut c_void)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclCreateDataBuffer(data: *mut c_void, size: usize) -> *mut c_void {
    calls::count(CallId::aclCreateDataBuffer);
    create("aclCreateDataBuffer", DATABUF_BASE, |m, id| {
        m.bufs.insert(
            id,
            DataBuf {
                data: data as usize,
                size,
                uses: 0,
                destroyed: false,
            },
        );
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclDestroyDataBuffer(dataBuffer: *const c_void) -> i32 {
    calls::count(CallId::aclDestroyDataBuffer);
    ffi(|| {
        non_null(&[dataBuffer as usize])?;
        let mut g = enter("aclDestroyDataBuffer", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = buf_id(rt, "aclDestroyDataBuffer", dataBuffer as usize)?;
        bury(&mut rt.models, id, "data buffer");
        let uses = rt.models.bufs[&id].uses;
        if uses > 0 {
            md6(
                rt,
                "aclDestroyDataBuffer",
                "data buffer",
                dataBuffer as usize,
                uses,
            );
            if let Some(b) = rt.models.bufs.get_mut(&id) {
                b.destroyed = true;
            }
        } else {
            rt.models.bufs.remove(&id);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclGetDataBufferAddr(dataBuffer: *const c_void) -> *mut c_void {
    calls::count(CallId::aclGetDataBufferAddr);
    ffi_val(std::ptr::null_mut(), || {
        non_null(&[dataBuffer as usize])?;
        let mut g = enter("aclGetDataBufferAddr", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let id = buf_id(rt, "aclGetDataBufferAddr", dataBuffer as usize)?;
        Ok(rt.models.bufs[&id].data as *mut c_void)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclGetDataBufferSizeV2(dataBuffer: *const c_void) -> usize {
    calls::count(CallId::aclGetDataBufferSizeV2);
    ffi_val(0, || {
        non_null(&[dataBuffer as usize])?;
        let mut g = enter("aclGetDataBufferSizeV2", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let id = buf_id(rt, "aclGetDataBufferSizeV2", dataBuffer as usize)?;
        Ok(rt.models.bufs[&id].size)
    })
}
