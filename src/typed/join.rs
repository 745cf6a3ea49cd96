//! Join events (E5, E9): a fresh or pooled event recorded on one stream, waited on and reset
//! by another, which orders the second after the first's tasks so far. Each stream keeps
//! the joins it waited on ([`StreamJoins`]): they are done once that stream (or the device)
//! has been synchronised, and are then reused by its next joins. Nothing here is shared
//! between threads on the hot path: a stream is not `Sync`, so only the thread using it
//! touches its list; the context is reached only for a sequence number (one atomic add per
//! join) and, on error paths, to park an event until a device synchronisation.

use std::cell::{Cell, UnsafeCell};

use crate::result::current;
use crate::sys::bindings::ACL_EVENT_SYNC;
use crate::sys::bindings::{aclrtEvent, aclrtStream};
use crate::typed::context::{Context, Parked};
use crate::typed::error::{Error, Result};
use crate::typed::handle::{report_drop_error, retry_cleanup};

/// The most done join events a stream keeps for reuse; more are destroyed.
const JOIN_POOL: usize = 64;

/// A join event waited on by the stream that owns the list.
#[derive(Clone, Copy)]
struct Waiting {
    /// From [`Context::next_join_seq`]: a device synchronisation that began after it was
    /// issued covers it.
    seq: u64,
    event: aclrtEvent,
    /// Its record, wait and reset were all issued: once done it is a fresh event again
    /// (flag clear, no task refers to it) and may join again.
    reusable: bool,
}

/// The join events one stream has waited on, and those known done and kept for its next
/// joins (no create/destroy per join in a loop that synchronises now and then).
pub(crate) struct StreamJoins {
    waiting: Vec<Waiting>,
    pool: Vec<aclrtEvent>,
}

/// [`Joins::sync_key`] while joins wait: neither a context id (they count up from 1) nor a
/// value of the current-context cache (0, [`current::INSIDE_CALLBACK`]).
const JOINS_WAITING: u64 = u64::MAX - 1;
static_assertions::const_assert!(JOINS_WAITING != 0 && JOINS_WAITING != current::INSIDE_CALLBACK);

/// A stream's joins: the list boxed, so that a stream that never joins stays small and
/// allocates nothing (allocated once, with its first join), and the key its usual
/// synchronisation compares with the thread's current context.
pub(crate) struct Joins {
    /// Only this module touches it, through [`Joins::with`]: see there why that is sound.
    list: UnsafeCell<Option<Box<StreamJoins>>>,
    /// The stream's context id while no join waits, else [`JOINS_WAITING`]: a
    /// synchronisation checks its binding (D6) and that no join waits in one compare.
    sync_key: Cell<u64>,
}

impl Joins {
    pub(crate) fn new(ctx: &Context<'_>) -> Joins {
        Joins {
            list: UnsafeCell::new(None),
            sync_key: Cell::new(ctx.id()),
        }
    }

    /// Bound on this thread (D6) with no join waiting for the stream's synchronisation:
    /// the usual synchronisation's one test.
    #[inline(always)]
    pub(crate) fn is_bound_without_joins(&self) -> bool {
        current::get() == self.sync_key.get()
    }

    /// Runs `f` on the list. Sound because the list is reached only from the stream's
    /// methods that the thread holding `&Stream` calls (a stream is not `Sync`; an event on
    /// another thread uses `Stream::synchronize_shared`, which does not come here), and
    /// every `f` in this module only moves values in and out of the list: it calls neither
    /// the runtime nor user code (a drop-error handler), nor `with` again, so no other
    /// reference to the list exists while it runs.
    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce(&mut Option<Box<StreamJoins>>) -> R) -> R {
        // SAFETY: see above: this is the only reference to the list while `f` runs.
        f(unsafe { &mut *self.list.get() })
    }
}

/// The lists of a stream's first join, allocated once: they never grow in the steady state
/// of a loop that synchronises now and then.
#[cold]
#[inline(never)]
fn first_joins(first: Waiting) -> Box<StreamJoins> {
    let mut waiting = Vec::with_capacity(JOIN_POOL);
    waiting.push(first);
    Box::new(StreamJoins {
        waiting,
        pool: Vec::with_capacity(JOIN_POOL),
    })
}

/// A stream's join bookkeeping, as the stream hands it to this module.
pub(crate) struct JoinTarget<'a> {
    pub(crate) ctx: &'a Context<'a>,
    pub(crate) raw: aclrtStream,
    pub(crate) joins: &'a Joins,
}

impl JoinTarget<'_> {
    /// Orders the target stream after the tasks issued on `from` so far (E5): a join event
    /// recorded on `from`, waited on and reset by the target (its only waiter, so the reset
    /// cannot overtake another wait), reused or destroyed once the target is synchronised
    /// (E9). Both streams are in the context, which the caller has bound (D6).
    pub(crate) fn join_after(&self, from: aclrtStream) -> Result<()> {
        let to = self.raw;
        if from == to {
            return Ok(());
        }
        let api = self.ctx.api();
        // The capacity bounds the joins waiting, pooled ones included; at the capacity, those
        // a device synchronisation has finished since go first.
        let capacity = self.ctx.join_capacity() as usize;
        let below_capacity = self.waiting_len() < capacity
            || (self.reclaim_synced() && self.waiting_len() < capacity);
        let pooled = if below_capacity { self.pooled() } else { None };
        let join = match pooled {
            Some(join) => join,
            None => self.fresh_join()?,
        };
        // SAFETY: `join` is fresh, or pooled (a join whose record, wait and reset have all
        // run: its flag is clear and no task refers to it); both streams are live (the
        // caller borrows them) and in the current context; `join` is recorded before it is
        // waited on (E1) and reset right after the wait on its only waiting stream (E4); it is
        // recorded again only once all that has run (pooled).
        if let Err(error) = unsafe { api.record_event(join, from) } {
            // Nothing refers to it: released with the others once `to` is synchronised.
            self.push(join, false);
            return Err(error.into());
        }
        // SAFETY: as above.
        if let Err(error) = unsafe { api.stream_wait_event(to, join) } {
            // Only the record, on `from`, refers to it, which no synchronisation of `to`
            // covers: parked until a device synchronisation (E9). Its flag stays set.
            let seq = self.ctx.next_join_seq();
            self.ctx.park(Parked::issued(seq, join));
            return Err(error.into());
        }
        match self.reset(join) {
            // Once `to` has passed its wait the record is done too (E9).
            Ok(()) => {
                self.push(join, true);
                Ok(())
            }
            // After a stop (S6) no reset can ever be issued, and the runtime allows the
            // destroy: released once `to` is synchronised (E9), never reused.
            Err(error) if error.is_stop() => {
                self.push(join, false);
                Err(error)
            }
            Err(error) => {
                // Waited and never reset: never destroyed (E4), nor reused. Kept, counted
                // as a live handle of the context, which is then not released over it (D3).
                self.ctx.adopt();
                Err(error)
            }
        }
    }

    /// Resets `join` after the target's wait. A failed reset issued nothing: it is tried
    /// again while the runtime fails it (E4), each error reported; then issued alone once
    /// the target has passed its wait. (The first try inline, the others out of line.)
    #[inline]
    fn reset(&self, join: aclrtEvent) -> Result<()> {
        // SAFETY: `join` was recorded on `from` and waited on by the target just now; the
        // target is live.
        match unsafe { self.ctx.api().reset_event(join, self.raw) } {
            Ok(()) => Ok(()),
            Err(first) => self.reset_again(join, first.into()),
        }
    }

    #[cold]
    #[inline(never)]
    fn reset_again(&self, join: aclrtEvent, first: Error) -> Result<()> {
        let (api, to) = (self.ctx.api(), self.raw);
        if !matches!(first, Error::Runtime { .. }) {
            return Err(first);
        }
        report_drop_error("join event (a reset tried again)", Err(first));
        // SAFETY: as in `reset`.
        retry_cleanup("join event (a reset tried again)", || unsafe {
            api.reset_event(join, to)
        })
        .or_else(|failed| {
            report_drop_error("join event (a reset that kept failing)", Err(failed));
            // SAFETY: as above.
            retry_cleanup("join event (its stream's synchronisation)", || unsafe {
                api.synchronize_stream(to)
            })
            .and_then(|()| {
                // SAFETY: as above.
                retry_cleanup("join event (a reset issued alone)", || unsafe {
                    api.reset_event(join, to)
                })
            })
        })
    }

    /// A done join event kept for reuse, taking first those a device synchronisation has
    /// finished since.
    #[inline]
    fn pooled(&self) -> Option<aclrtEvent> {
        if let Some(join) = self.pop_pool() {
            return Some(join);
        }
        if self.reclaim_synced() {
            return self.pop_pool();
        }
        None
    }

    /// Whether the target being done (synchronised, or found idle) proves its joins done,
    /// and a done join a fresh event again. Not in a context that may stop (S6): a stop
    /// drops a join's wait and reset without waiting for its record on the other stream,
    /// and leaves its flag unknown. There a join waits for a device synchronisation (the
    /// watermark) or the context's end, and is then destroyed, never reused.
    #[inline(always)]
    fn stream_done_proves_joins(&self) -> bool {
        !self.ctx.may_stop()
    }

    /// Finishes the waiting joins a device synchronisation has covered since (the
    /// watermark), if the oldest is one; says whether it did.
    #[inline]
    fn reclaim_synced(&self) -> bool {
        let synced_before = self.ctx.device_synced_before();
        let oldest = self
            .joins
            .with(|j| j.as_ref()?.waiting.first().map(|w| w.seq));
        if oldest.is_none_or(|seq| seq >= synced_before) {
            return false;
        }
        self.finished(|w| w.seq < synced_before, self.stream_done_proves_joins());
        true
    }

    #[inline(always)]
    fn pop_pool(&self) -> Option<aclrtEvent> {
        self.joins.with(|j| j.as_mut()?.pool.pop())
    }

    fn waiting_len(&self) -> usize {
        self.joins
            .with(|j| j.as_ref().map_or(0, |j| j.waiting.len()))
    }

    /// A new join event, unless a query finds the target idle once every [`JOIN_POOL`] joins
    /// waiting for its synchronisation (they are then done, and one is reused: a loop that
    /// never synchronises the stream creates none once it has that many, at one query per
    /// `JOIN_POOL` joins, never a hidden synchronisation). Past its context's join capacity
    /// with the stream still busy: [`Error::JoinCapacity`].
    #[cold]
    #[inline(never)]
    fn fresh_join(&self) -> Result<aclrtEvent> {
        let waiting = self.waiting_len();
        let capacity = self.ctx.join_capacity() as usize;
        if waiting > 0 && (waiting.is_multiple_of(JOIN_POOL) || waiting >= capacity) {
            if self.stream_done_proves_joins() && self.is_idle() {
                self.finished(|_| true, true);
                if let Some(join) = self.pop_pool() {
                    return Ok(join);
                }
            } else if waiting >= capacity {
                return Err(Error::JoinCapacity {
                    capacity: self.ctx.join_capacity(),
                });
            }
        }
        // SAFETY: a crate-private event in the bound context, released through this list.
        Ok(unsafe { self.ctx.api().create_event_with_flag(ACL_EVENT_SYNC)? })
    }

    /// `aclrtStreamQuery` on the target: every task issued on it so far is done, so every
    /// join it waited on (pushed before this call, on this thread) is done too (E9). Waits
    /// for nothing (S5); an error says busy, and is reported (a runtime without the
    /// function says busy, silently).
    fn is_idle(&self) -> bool {
        // SAFETY: the target is live (the caller borrows it) and in the bound context.
        match unsafe { self.ctx.api().stream_query(self.raw) } {
            Ok(idle) => idle,
            Err(crate::result::CallError::Unsupported { .. }) => false,
            Err(error) => {
                report_drop_error("join event (a query of its waiting stream)", Err(error));
                false
            }
        }
    }

    /// Adds a join the target waited on (or that refers to nothing, if not `reusable`).
    #[inline(always)]
    fn push(&self, event: aclrtEvent, reusable: bool) {
        let seq = self.ctx.next_join_seq();
        let entry = Waiting {
            seq,
            event,
            reusable,
        };
        self.joins.with(|list| match list {
            Some(joins) => joins.waiting.push(entry),
            None => *list = Some(first_joins(entry)),
        });
        self.joins.sync_key.set(JOINS_WAITING);
    }

    /// The target was synchronised: every join it waited on is done, and goes to the pool
    /// (the usual case: one move per join, out of line only if one must be destroyed).
    #[inline]
    pub(crate) fn synchronized(&self) {
        if !self.stream_done_proves_joins() {
            return;
        }
        let pooled = self.joins.with(|list| {
            let Some(joins) = list.as_mut() else {
                return true;
            };
            let StreamJoins { waiting, pool } = &mut **joins;
            let fits = pool.len() + waiting.len() <= JOIN_POOL;
            if !fits || waiting.iter().any(|w| !w.reusable) {
                return false;
            }
            // Every task using them has run (E9): fresh events again. (Within the pool's
            // capacity, reserved with the first join: no allocation.)
            for w in waiting.iter() {
                pool.push(w.event);
            }
            waiting.clear();
            true
        });
        if pooled {
            self.joins.sync_key.set(self.ctx.id());
        } else {
            self.finished(|_| true, true);
        }
    }

    /// Moves the waiting joins `done` selects to the pool (if `reuse`), destroying those
    /// that cannot be reused or do not fit. A destruction that fails is parked in the
    /// context (done: any device synchronisation or the context's end destroys it) and
    /// reported.
    #[cold]
    #[inline(never)]
    fn finished(&self, done: impl Fn(&Waiting) -> bool, reuse: bool) {
        let mut destroy = Vec::new();
        let no_more_waiting = self.joins.with(|list| {
            let Some(joins) = list.as_mut() else {
                return true;
            };
            let StreamJoins { waiting, pool } = &mut **joins;
            waiting.retain(|w| {
                if !done(w) {
                    return true;
                }
                if reuse && w.reusable && pool.len() < JOIN_POOL {
                    // Every task using it has run (E9): a fresh event again.
                    pool.push(w.event);
                } else {
                    // Allocated only for events that must be destroyed: none in the steady
                    // state of a loop.
                    destroy.push(w.event);
                }
                false
            });
            waiting.is_empty()
        });
        if no_more_waiting {
            self.joins.sync_key.set(self.ctx.id());
        }
        if !destroy.is_empty() {
            self.destroy_all(destroy);
        }
    }

    /// The target is being destroyed after a synchronisation: its joins are all done and
    /// destroyed (a failure parks the event in the context), and the lists freed.
    pub(crate) fn release_all(&self) {
        if !self.stream_done_proves_joins() {
            self.orphan_all();
            return;
        }
        let Some(joins) = self.take() else {
            return;
        };
        let events = joins.waiting.iter().map(|w| w.event);
        self.destroy_all(events.chain(joins.pool.iter().copied()).collect());
    }

    /// The target is destroyed without a synchronisation (S8), or kept after a failed
    /// release: its waiting joins are parked in the context, whose device synchronisations
    /// and end release them; its pooled (done) ones are destroyed.
    pub(crate) fn orphan_all(&self) {
        let Some(joins) = self.take() else {
            return;
        };
        for w in &joins.waiting {
            // Its tasks may be dropped unrun (S8): its flag is unknown, never reused.
            self.ctx.park(Parked::issued(w.seq, w.event));
        }
        self.destroy_all(joins.pool);
    }

    /// Empties the lists, handing them over.
    fn take(&self) -> Option<Box<StreamJoins>> {
        let joins = self.joins.with(Option::take);
        self.joins.sync_key.set(self.ctx.id());
        joins
    }

    fn destroy_all(&self, events: Vec<aclrtEvent>) {
        for event in events {
            // SAFETY: created by this crate, referenced by no handle, and every task using
            // it is done (its waiting stream or the device was synchronised, E9).
            let destroyed = unsafe { self.ctx.api().destroy_event(event) };
            if let Err(error) = destroyed {
                self.ctx.park(Parked::done(event));
                report_drop_error("join event", Err(error));
            }
        }
    }
}
