//! The simulator's state: one global [`Global`] behind one pthread mutex, plus the error
//! codes, handles and the checker's finding list.
//!
//! Layer: plain data, above the base (`pt`, `trace`, `calls`): it imports only those and
//! its children (`state::extra`, `state::models`), plus the model format (`model`) and
//! `errmsg` of its own layer. Nothing here runs a rule or a stream; `rules`, `exec` and
//! `api` change the state.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::pt::{PCond, PMutex, PThread};
use crate::trace::Trace;

pub mod code;
pub mod dvpp;
pub(crate) mod extra;
pub(crate) mod models;

pub const ACL_EVENT_SYNC: u32 = 0x1;
pub const ACL_EVENT_CAPTURE_STREAM_PROGRESS: u32 = 0x2;
pub const ACL_EVENT_TIME_LINE: u32 = 0x8;
/// C4: subscribed threads per process (Atlas 200/500 A2).
pub const MAX_SUBSCRIBED_THREADS: usize = 1024;

pub type CbFn = unsafe extern "C" fn(*mut libc::c_void);
pub type KernelFn = unsafe extern "C" fn(*mut libc::c_void, *const *mut libc::c_void, usize);

// ---- Handles --------------------------------------------------------------------------
// Handles are fake, never-dereferenced addresses: base + id * 16. The registry decides
// whether one is live; a pointer the caller gives is never dereferenced.
pub const CTX_BASE: usize = 0x7ac0_0000_0000;
pub const STREAM_BASE: usize = 0x7ad0_0000_0000;
pub const EVENT_BASE: usize = 0x7ae0_0000_0000;
/// Model descriptions, datasets and data buffers (host objects, MD4-MD6).
pub const DESC_BASE: usize = 0x7af0_0000_0000;
pub const DATASET_BASE: usize = 0x7b00_0000_0000;
pub const DATABUF_BASE: usize = 0x7b10_0000_0000;
const HANDLE_SPAN: usize = 1 << 40;

pub fn handle(base: usize, id: u64) -> usize {
    base + (id as usize) * 16
}

pub fn decode(base: usize, h: usize) -> Option<u64> {
    if h >= base && h < base + HANDLE_SPAN && (h - base).is_multiple_of(16) {
        Some(((h - base) / 16) as u64)
    } else {
        None
    }
}

thread_local! {
    /// The calling thread's current context id (0: none) (D2, D6).
    pub static CUR_CTX: Cell<u64> = const { Cell::new(0) };
    /// Set while this thread runs a user callback or a kernel body (C8).
    pub static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

pub struct Finding {
    pub rule: String,
    pub message: String,
}

pub struct Global {
    pub rt: Option<Box<Rt>>,
    /// Findings of earlier init/finalize cycles (they survive aclFinalize).
    pub saved_findings: Vec<Finding>,
    pub device_count_override: Option<u32>,
    pub ever_init: bool,
    /// Ids are unique across init cycles, so a stale thread-local context never resolves.
    pub next_id: u64,
    /// Findings made while no runtime is initialized (e.g. C8 before init is impossible,
    /// kept for completeness) honour these.
    pub check: bool,
    pub quiet: bool,
    /// Streams whose worker some thread is joining with the lock released ([`crate::exec`]
    /// `teardown_streams`): such a worker may still be running a task (a memcpy, a kernel
    /// body), so nobody may free memory or forget the stream until the join is done.
    pub reaping: Vec<u64>,
    /// Tracked allocations (their start) a host thread reads or writes with the lock
    /// released (a large synchronous copy or memset, the bytes of `aclmdlLoadFromMem`, the
    /// I/O of a synchronous `aclmdlExecute`): one entry per pin. The pinning thread holds a
    /// use of each (so `aclrtFree` defers, M2); a device reset and `aclFinalize`, which free
    /// memory whatever its uses, first wait until none of theirs is pinned
    /// ([`crate::exec::wait_unpinned`]).
    pub pinned: Vec<usize>,
}

/// `aclsimSetQuiet`: -1 follows `ACLSIM_QUIET` (read at aclInit), 0 prints findings, 1 does
/// not. Process-wide and kept across init cycles, so a test can set it before aclInit.
static QUIET_OVERRIDE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Sets `QUIET_OVERRIDE` to `quiet` if it is -1, 0 or 1; returns the previous setting.
pub fn set_quiet_override(quiet: i32) -> i32 {
    use std::sync::atomic::Ordering::Relaxed;
    if (-1..=1).contains(&quiet) {
        QUIET_OVERRIDE.swap(quiet, Relaxed)
    } else {
        QUIET_OVERRIDE.load(Relaxed)
    }
}

pub static G: PMutex<Global> = PMutex::new(Global {
    rt: None,
    saved_findings: Vec::new(),
    device_count_override: None,
    ever_init: false,
    next_id: 1,
    check: true,
    quiet: false,
    reaping: Vec::new(),
    pinned: Vec::new(),
});

/// The generation of the next allocation ([`Alloc::generation`]).
pub fn next_alloc_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Every host-side waiter (stream/event/device synchronize, aclrtProcessReport) waits here.
pub static HOST_CV: PCond = PCond::new();

#[derive(Default)]
pub struct Device {
    pub refs: u32,
    pub default_ctx: Option<u64>,
}

pub struct Context {
    pub device: i32,
    pub is_default: bool,
    pub default_stream: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TaskState {
    Queued,
    Running,
    /// A blocking callback was delivered; the stream holds until it has run (C5).
    WaitingCb,
    CbDone,
}

pub enum TaskKind {
    Copy {
        dst: usize,
        src: usize,
        count: usize,
        kind: i32,
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
    Record {
        ev: u64,
    },
    Wait {
        ev: u64,
        timeout: Option<Duration>,
        /// Plain events (`aclrtCreateEvent`): the wait passes once this many records of the
        /// event have executed (the records issued before the wait), not on a sticky flag:
        /// such events are never reset. `None` for `ACL_EVENT_SYNC` events (the flag).
        after: Option<u64>,
    },
    Reset {
        ev: u64,
    },
    Callback {
        f: CbFn,
        ud: usize,
        block: bool,
        thread: u64,
    },
    /// `aclrtLaunchHostFunc` (C10): runs on the stream's worker thread.
    HostFunc {
        f: CbFn,
        ud: usize,
    },
    /// `aclmdlExecuteAsync` (MD6-MD8): runs the model when the stream reaches it.
    Model(Box<models::Exec>),
    /// `acldvppJpegDecodeAsync`, `acldvppVpcResizeAsync` (DV6): a media task.
    Dvpp(Box<dvpp::Work>),
}

pub struct Task {
    /// Global issue sequence number (also the task id).
    pub id: u64,
    pub kind: TaskKind,
    pub state: TaskState,
    /// Tracked allocations (start addresses) this task uses (M2).
    pub allocs: Vec<usize>,
    /// When the task became the head of its stream.
    pub started: Option<Instant>,
}

pub struct Stream {
    pub ctx: u64,
    pub device: i32,
    pub is_default: bool,
    pub tasks: VecDeque<Task>,
    pub blocked_on: Option<u64>,
    pub stop: bool,
    pub dead: bool,
    /// The worker's condition variable; boxed so it never moves, taken by whoever joins.
    pub cv: Option<Box<PCond>>,
    pub thread: Option<PThread>,
    pub async_error: Option<i32>,
    /// An unreported task error of another stream that this stream waited for (P3): its
    /// wait passed on a record that captured that error. Carried into this stream's later
    /// records, so that synchronising them reports it; cleared by a synchronisation of this
    /// stream (or the device).
    pub inherited_error: Option<i32>,
    /// Callbacks launched and not yet run (delivered or not).
    pub cb_outstanding: u32,
    pub subscriber: Option<u64>,
    /// Host waiters (condvar addresses, [`wake`]) waiting for this stream to
    /// become idle or to die: a completion wakes only them.
    pub waiters: Vec<usize>,
}

pub struct Event {
    pub ctx: u64,
    pub flags: u32,
    /// Created by aclrtCreateEvent (README, E1/E4): a wait waits for the records issued
    /// before it, a wait before any record is rejected with 107000 (E1), and the event must
    /// not be reset (E4).
    pub plain: bool,
    pub destroyed: bool,
    /// Issued, unfinished tasks that refer to this event (E9).
    pub refs: u32,
    pub records_issued: u64,
    pub records_finished: u64,
    /// The hardware flag: set by an executed record, cleared by an executed reset.
    pub flag_set: bool,
    pub ts: Option<Instant>,
    /// (task id, stream id) of the record that last set the flag.
    pub last_record: Option<(u64, u64)>,
    /// The unreported task error the last executed record captured (P3): one on its stream
    /// before it, or one its stream inherited through a wait. Passed on to streams that wait
    /// on the record.
    pub record_error: Option<i32>,
    /// `record_error` was already reported by a synchronisation of this event (once).
    pub record_error_reported: bool,
    /// Waits issued since the last reset was issued (E4).
    pub unreset_waits: u32,
    /// Issued waits not yet executed: task id -> stream id (E5). Ordered, so that a
    /// completion removes its entry in O(log n) and a reset finds the earlier ones.
    pub pending_waits: BTreeMap<u64, u64>,
    /// Streams whose worker is parked on a wait for this event: a record wakes only them.
    pub blocked: Vec<u64>,
    /// Host waiters (aclrtSynchronizeEvent) woken when a record of this event completes.
    pub waiters: Vec<usize>,
    /// Task id of the last executed reset (E5 diagnosis).
    pub last_reset_exec: u64,
}

pub struct Alloc {
    /// What `libc::calloc` returned (the user's pointer is aligned up from it).
    pub base: usize,
    /// Unique for the life of the process ([`next_alloc_generation`]): tells this
    /// allocation from a later one at the same address, for a call that released the lock
    /// meanwhile.
    pub generation: u64,
    pub size: usize,
    pub host: bool,
    pub device: i32,
    /// Issued, unfinished tasks using this allocation (M2).
    pub uses: u32,
    /// Freed by the user while in use: the memory is released when `uses` drops to 0.
    pub freed: bool,
    /// Media memory from `acldvppMalloc` (DV5), freed by `acldvppFree` only.
    pub dvpp: bool,
}

pub struct CbItem {
    pub f: CbFn,
    pub ud: usize,
    pub stream: u64,
    pub task: u64,
    pub block: bool,
}

pub struct ThreadSub {
    pub device: i32,
    pub streams: HashSet<u64>,
    pub queue: VecDeque<CbItem>,
    /// The condvar of the thread while it is parked in aclrtProcessReport: woken when a
    /// callback is queued for it, its subscription ends or the runtime is finalized.
    pub waiter: Option<usize>,
}

pub struct Rt {
    pub check: bool,
    pub quiet: bool,
    pub run_mode: i32,
    pub device_count: u32,
    pub deadlock_after: Duration,
    pub next_id: u64,
    pub devices: Vec<Device>,
    pub contexts: HashMap<u64, Context>,
    pub streams: HashMap<u64, Stream>,
    pub events: HashMap<u64, Event>,
    pub allocs: BTreeMap<usize, Alloc>,
    pub subs: HashMap<u64, ThreadSub>,
    pub op_wait_timeout: u32,
    pub t0: Instant,
    pub findings: Vec<Finding>,
    pub trace: Option<Trace>,
    /// Bumped on every issue and every completion; the deadlock watchdog looks at it.
    pub progress: u64,
    /// Armed by `aclsimInjectFault`/`aclsimInjectFaultAt`: calls that fail on their next
    /// use(s), in the order they were armed.
    pub faults: Vec<Fault>,
    /// The functions beyond the seeds (P5, D8, S5-S8, C10): see `crate::extra`.
    pub extra: extra::Extra,
    /// Every thread blocked in a host wait (synchronize, destroy stream): woken on rare
    /// changes (teardown, unsubscribe, event removal) that the targeted wakes do not cover.
    pub sync_waiters: Vec<usize>,
    /// Loaded models, descriptions, datasets and data buffers (MD1-MD13).
    pub models: models::Models,
    /// Media channels, descriptions, configurations and pending tasks (DV3-DV10).
    pub dvpp: dvpp::Dvpp,
}

/// An injected failure: after `skip` more calls of `call`, the next `remaining` calls return
/// `code` without effect.
#[derive(Debug)]
pub struct Fault {
    pub call: String,
    pub code: i32,
    /// Calls of `call` still to let through before the first failure.
    pub skip: u32,
    pub remaining: u32,
}

impl Rt {
    /// One call of `call` reached the fault check: every armed failure of `call` counts it
    /// (a failure still skipping lets it through); the first one done skipping, if any,
    /// fails it. Returns that failure's code.
    pub fn take_fault(&mut self, call: &str) -> Option<i32> {
        let mut hit = None;
        for (index, fault) in self.faults.iter_mut().enumerate() {
            if fault.call != call {
                continue;
            }
            if fault.skip > 0 {
                fault.skip -= 1;
            } else if hit.is_none() {
                hit = Some(index);
            }
        }
        let index = hit?;
        let fault = &mut self.faults[index];
        let code = fault.code;
        fault.remaining -= 1;
        if fault.remaining == 0 {
            self.faults.remove(index);
        }
        Some(code)
    }
}

/// Signals a host waiter's condvar, registered by address. Caller holds the lock.
pub fn wake(addr: usize) {
    // SAFETY: waiter lists only hold the address of the WAIT_CV of a thread blocked in a
    // host wait; it removes it under the lock (held by our caller) before leaving the
    // wait, so that thread and its thread-local are alive.
    let cv = unsafe { &*(addr as *const PCond) };
    cv.signal();
}

impl Rt {
    /// Wakes every thread blocked in a host wait (not the report threads).
    pub fn wake_sync_waiters(&self) {
        for w in &self.sync_waiters {
            wake(*w);
        }
    }

    /// Wakes the host waiters of stream `sid` if it has nothing left to do (S2).
    pub fn wake_if_idle(&self, sid: u64) {
        if let Some(s) = self.streams.get(&sid)
            && s.tasks.is_empty()
            && s.cb_outstanding == 0
        {
            for w in &s.waiters {
                wake(*w);
            }
        }
    }

    /// Wakes the report thread `thread` if it is parked in aclrtProcessReport.
    pub fn wake_reporter(&self, thread: u64) {
        if let Some(w) = self.subs.get(&thread).and_then(|s| s.waiter) {
            wake(w);
        }
    }

    /// Removes tracked allocation `start`, returns its memory to the system and its bytes to
    /// its device's (or the host's) free memory (D8).
    ///
    /// # Safety
    /// No task, model or thread uses the allocation any more.
    pub unsafe fn release_alloc(&mut self, start: usize) {
        if let Some(a) = self.allocs.remove(&start) {
            self.extra.uncharge(a.host, a.device, a.size as u64);
            // SAFETY: calloc'd by aclrtMalloc/aclrtMallocHost and removed from the map just
            // now, so freed once; unused (the caller's contract).
            unsafe { libc::free(a.base as *mut libc::c_void) };
        }
    }

    /// The generation of the live allocation starting at `start`, if any.
    pub fn alloc_generation(&self, start: usize) -> Option<u64> {
        self.allocs.get(&start).map(|a| a.generation)
    }

    /// Takes a use of each allocation of `starts` (M2: a free is deferred meanwhile);
    /// returns them with their generations, for [`Rt::drop_uses`].
    pub fn take_uses(&mut self, starts: &[usize]) -> Vec<(usize, u64)> {
        starts
            .iter()
            .filter_map(|s| {
                let a = self.allocs.get_mut(s)?;
                a.uses += 1;
                Some((*s, a.generation))
            })
            .collect()
    }

    /// Drops the uses [`Rt::take_uses`] took, of the allocations still there (the same
    /// generation: a device reset may have released one, and another taken its address);
    /// an allocation freed meanwhile is released now that nothing uses it.
    pub fn drop_uses(&mut self, held: &[(usize, u64)]) {
        for (start, generation) in held {
            let free_now = match self.allocs.get_mut(start) {
                Some(a) if a.generation == *generation => {
                    a.uses = a.uses.saturating_sub(1);
                    a.uses == 0 && a.freed
                }
                _ => false,
            };
            if free_now {
                // SAFETY: freed by the user while in use; this was its last use.
                unsafe { self.release_alloc(*start) };
            }
        }
    }

    /// Whether every allocation of `held` is still the one it was (not released since).
    pub fn still_there(&self, held: &[(usize, u64)]) -> bool {
        held.iter()
            .all(|(s, g)| self.alloc_generation(*s) == Some(*g))
    }

    pub fn new_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Records a checker finding (rule ID + message naming handles + what to do).
    pub fn report(&mut self, rule: &str, message: String) {
        if !self.check {
            return;
        }
        let quiet = match QUIET_OVERRIDE.load(std::sync::atomic::Ordering::Relaxed) {
            -1 => self.quiet,
            set => set != 0,
        };
        if !quiet {
            eprintln!("aclsim: [{rule}] {message}");
        }
        self.findings.push(Finding {
            rule: rule.to_string(),
            message,
        });
    }

    pub fn cur_ctx(&self) -> Result<u64, i32> {
        let id = CUR_CTX.with(|c| c.get());
        if id != 0 && self.contexts.contains_key(&id) {
            Ok(id)
        } else {
            Err(code::RT_CONTEXT_NULL)
        }
    }

    pub fn event_id(&self, h: usize) -> Result<u64, i32> {
        let id = decode(EVENT_BASE, h).ok_or(code::RT_PARAM_INVALID)?;
        match self.events.get(&id) {
            Some(e) if !e.destroyed => Ok(id),
            _ => Err(code::RT_PARAM_INVALID),
        }
    }

    pub fn stream_live(&self, id: u64) -> bool {
        self.streams.get(&id).is_some_and(|s| !s.dead)
    }

    pub fn live_object_count(&self) -> usize {
        self.contexts.values().filter(|c| !c.is_default).count()
            + self
                .streams
                .values()
                .filter(|s| !s.is_default && !s.dead)
                .count()
            + self.events.values().filter(|e| !e.destroyed).count()
            + self.allocs.values().filter(|a| !a.freed).count()
            + self
                .streams
                .values()
                .filter(|s| !s.dead && s.subscriber.is_some())
                .count()
            + self.models.live_count()
            + self.dvpp.live_count()
    }

    /// Human-readable list of live user resources (P2 leak report, D3).
    pub fn describe_live(&self, device: Option<i32>) -> Vec<String> {
        let on = |d: i32| device.is_none_or(|x| x == d);
        let mut v = Vec::new();
        let mut ids: Vec<_> = self.contexts.iter().collect();
        ids.sort_by_key(|(k, _)| **k);
        for (id, c) in ids {
            if !c.is_default && on(c.device) {
                v.push(format!(
                    "context {:#x} (device {})",
                    handle(CTX_BASE, *id),
                    c.device
                ));
            }
        }
        let mut ids: Vec<_> = self.streams.iter().collect();
        ids.sort_by_key(|(k, _)| **k);
        for (id, s) in ids {
            if !s.is_default && !s.dead && on(s.device) {
                v.push(format!(
                    "stream {:#x} (device {})",
                    handle(STREAM_BASE, *id),
                    s.device
                ));
            }
            if !s.dead
                && on(s.device)
                && let Some(t) = s.subscriber
            {
                v.push(format!(
                    "subscription of thread {t:#x} to stream {:#x}",
                    handle(STREAM_BASE, *id)
                ));
            }
        }
        let mut ids: Vec<_> = self.events.iter().collect();
        ids.sort_by_key(|(k, _)| **k);
        for (id, e) in ids {
            let dev = self.contexts.get(&e.ctx).map_or(-1, |c| c.device);
            if !e.destroyed && on(dev) {
                v.push(format!("event {:#x}", handle(EVENT_BASE, *id)));
            }
        }
        for (p, a) in &self.allocs {
            if !a.freed && (device.is_none() && a.host || !a.host && on(a.device)) {
                let mut s = String::new();
                let _ = write!(
                    s,
                    "{} allocation {p:#x} ({} B)",
                    match (a.host, a.dvpp) {
                        (true, _) => "host",
                        (false, true) => "DVPP",
                        (false, false) => "device",
                    },
                    a.size
                );
                v.push(s);
            }
        }
        if device.is_none() {
            v.extend(self.models.describe_live());
        }
        v.extend(self.dvpp.describe_live(device));
        v
    }
}

pub fn task_name(rt: &Rt, t: &Task) -> String {
    let _ = rt;
    match &t.kind {
        TaskKind::Copy { count, kind, .. } => {
            let k = match kind {
                0 => "H2H",
                1 => "H2D",
                2 => "D2H",
                _ => "D2D",
            };
            format!("memcpy_async {k} {count} B")
        }
        TaskKind::Set { count, .. } => format!("memset_async {count} B"),
        TaskKind::Kernel { dur_us, .. } => format!("kernel {dur_us} us"),
        TaskKind::Record { ev } => format!("record e{ev}"),
        TaskKind::Wait { ev, .. } => format!("wait e{ev}"),
        TaskKind::Reset { ev } => format!("reset e{ev}"),
        TaskKind::Callback { block, .. } => {
            if *block {
                "callback (block)".to_string()
            } else {
                "callback".to_string()
            }
        }
        TaskKind::HostFunc { .. } => "host func".to_string(),
        TaskKind::Model(x) => format!("model {} batch {}", x.model_id, x.batch),
        TaskKind::Dvpp(w) => match **w {
            dvpp::Work::Decode { size, .. } => format!("jpeg decode {size} B"),
            dvpp::Work::Resize { .. } => "vpc resize".to_string(),
        },
    }
}
