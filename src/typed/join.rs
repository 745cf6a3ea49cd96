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
use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::handle::{report_drop_error, retry_cleanup};
use crate::typed::join_state::{JoinCalls, JoinHost, Parked};

/// The most done join events a stream keeps for reuse; more are destroyed.
const JOIN_POOL: usize = 64;

/// A join event of a stream's list, with its number once waited on.
#[derive(Clone, Copy)]
struct Entry {
    event: aclrtEvent,
    /// From [`JoinState::next_seq`](crate::typed::join_state::JoinState::next_seq) once waited on: a device synchronisation that began
    /// after it was issued covers it. Meaningless for a done (pooled) entry.
    seq: u64,
}

/// The join events one stream has waited on, and those known done and kept for its next
/// joins (no create/destroy per join in a loop that synchronises now and then), in one
/// array: a join takes the first done entry and marks it waiting by moving the boundary,
/// and a synchronisation makes them all done again by resetting it.
pub(crate) struct StreamJoins {
    /// `[..waiting]`: waited on since the stream's last synchronisation, in issue order
    /// (their numbers increase); `[waiting..]`: done, fresh events again (flag clear, no task
    /// refers to them).
    entries: Vec<Entry>,
    waiting: usize,
    /// Joins never reused (their record, wait or reset failed, or a stop dropped them):
    /// destroyed once done. Empty in the steady state of a loop.
    unusable: Vec<Entry>,
}

impl StreamJoins {
    /// Joins waiting for the stream's (or the device's) synchronisation.
    #[inline(always)]
    fn waiting_len(&self) -> usize {
        self.waiting + self.unusable.len()
    }

    /// The first done entry's event, if any.
    #[inline(always)]
    fn first_done(&self) -> Option<aclrtEvent> {
        self.entries.get(self.waiting).map(|e| e.event)
    }

    /// Removes `event`'s entry, wherever it is (error paths: by identity, not by index).
    fn remove(&mut self, event: aclrtEvent) {
        if let Some(i) = self.entries.iter().position(|e| e.event == event) {
            self.entries.remove(i);
            if i < self.waiting {
                self.waiting -= 1;
            }
        }
    }
}

/// [`Joins::sync_key`] while joins wait: neither a context id (they count up from 1) nor a
/// value of the current-context cache (0, [`current::INSIDE_CALLBACK`]).
const JOINS_WAITING: u64 = u64::MAX - 1;
static_assertions::const_assert!(JOINS_WAITING != 0 && JOINS_WAITING != current::INSIDE_CALLBACK);

/// A stream's joins: the list boxed, so that a stream that never joins stays small and
/// allocates nothing (allocated once, with its first join), and the key its usual
/// synchronisation compares with the thread's current context.
/// What [`Joins::binding`] finds.
pub(crate) enum Binding {
    WithoutJoins,
    WithJoins,
    Unbound,
}

pub(crate) struct Joins {
    /// Only this module touches it, through [`Joins::with`]: see there why that is sound.
    list: UnsafeCell<Option<Box<StreamJoins>>>,
    /// The stream's context id while no join waits, else [`JOINS_WAITING`]: a
    /// synchronisation checks its binding (D6) and that no join waits in one compare.
    sync_key: Cell<u64>,
}

impl Joins {
    pub(crate) fn new(ctx: &impl JoinHost) -> Joins {
        Joins {
            list: UnsafeCell::new(None),
            sync_key: Cell::new(ctx.id()),
        }
    }

    /// Whether the stream's context is bound on this thread (D6), and whether joins wait
    /// for the stream's synchronisation: the usual synchronisation's one test, then one
    /// more when joins wait. `ctx_id` is the stream's context's.
    #[inline(always)]
    pub(crate) fn binding(&self, ctx_id: u64) -> Binding {
        let current = current::get();
        let key = self.sync_key.get();
        if current == key {
            Binding::WithoutJoins
        } else if key == JOINS_WAITING && current == ctx_id {
            Binding::WithJoins
        } else {
            Binding::Unbound
        }
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

impl Joins {
    /// [`JoinTarget::mark_waiting`] when the entry is no longer the first done one (a
    /// failed reset's retries took it out of the list, `reset_failed`): inserted as the
    /// last waiting one (found by identity and moved, should it still be in the list).
    #[cold]
    #[inline(never)]
    fn mark_waiting_moved(&self, join: aclrtEvent, seq: u64) {
        self.with(|list| {
            let joins = list.get_or_insert_with(first_joins);
            joins.remove(join);
            let at = joins.waiting;
            joins.entries.insert(at, Entry { event: join, seq });
            joins.waiting += 1;
        });
    }

    /// `join` must never be reused (a failed record; a reset a stop dropped): moved out of
    /// the entries, destroyed once done; `seq` numbers it (after its calls were issued).
    #[cold]
    #[inline(never)]
    fn make_unusable(&self, join: aclrtEvent, seq: u64) {
        self.with(|list| {
            let joins = list.get_or_insert_with(first_joins);
            joins.remove(join);
            joins.unusable.push(Entry { event: join, seq });
        });
        self.sync_key.set(JOINS_WAITING);
    }

    /// `join` leaves the list (parked in the context, or kept as a live handle).
    #[cold]
    #[inline(never)]
    fn forget(&self, join: aclrtEvent) {
        self.with(|list| {
            if let Some(joins) = list.as_deref_mut() {
                joins.remove(join);
            }
        });
    }
}

/// The list of a stream's first join, allocated once with room for [`JOIN_POOL`] entries:
/// it never grows in the steady state of a loop that synchronises now and then.
#[cold]
#[inline(never)]
fn first_joins() -> Box<StreamJoins> {
    Box::new(StreamJoins {
        entries: Vec::with_capacity(JOIN_POOL),
        waiting: 0,
        unusable: Vec::new(),
    })
}

/// A stream's join bookkeeping, as the stream hands it to this module: its context (the
/// library's [`Context`]; a model of one under loom), the stream and its list.
pub(crate) struct JoinTarget<'a, H: JoinHost = Context<'a>> {
    pub(crate) ctx: &'a H,
    pub(crate) raw: aclrtStream,
    pub(crate) joins: &'a Joins,
}

impl<H: JoinHost> JoinTarget<'_, H> {
    /// Orders the target stream after the tasks issued on `from` so far (E5): a join event
    /// recorded on `from`, waited on and reset by the target (its only waiter, so the reset
    /// cannot overtake another wait), reused or destroyed once the target is synchronised
    /// (E9). Both streams are in the context, which the caller has bound (D6). Inlined into
    /// its (out-of-line) callers: one call per join, not two.
    #[inline(always)]
    pub(crate) fn join_after(&self, from: aclrtStream) -> Result<()> {
        let to = self.raw;
        if from == to {
            return Ok(());
        }
        let api = self.ctx.api();
        // The capacity bounds the joins waiting; at the capacity, those a device
        // synchronisation has finished since go first.
        let capacity = self.ctx.join_capacity() as usize;
        let free = self.joins.with(|list| match list {
            Some(joins) if joins.waiting_len() < capacity => joins.first_done(),
            _ => None,
        });
        let join = match free {
            Some(join) => join,
            None => free_join(self.ctx, to, self.joins, capacity)?,
        };
        // SAFETY: `join` is a done entry of the list: fresh, or a join whose record, wait and
        // reset have all run (its flag is clear and no task refers to it); both streams are
        // live (the caller borrows them) and in the current context; `join` is recorded
        // before it is waited on (E1) and reset right after the wait on its only waiting
        // stream (E4); marked waiting below, it is recorded again only once all that has run.
        if let Err(error) = unsafe { api.record_event(join, from) } {
            // Nothing refers to it: released once `to` is synchronised (E9).
            self.joins.make_unusable(join, self.ctx.next_join_seq());
            return Err(error.into());
        }
        // SAFETY: as above.
        if let Err(error) = unsafe { api.stream_wait_event(to, join) } {
            // Only the record, on `from`, refers to it, which no synchronisation of `to`
            // covers: parked until a device synchronisation (E9). Its flag stays set.
            self.joins.forget(join);
            let seq = self.ctx.next_join_seq();
            self.ctx.park(Parked::issued(seq, join));
            return Err(error.into());
        }
        // SAFETY: `join` was recorded on `from` and waited on by the target just now; the
        // target is live.
        match unsafe { api.reset_event(join, to) } {
            // Once `to` has passed its wait the record is done too (E9).
            Ok(()) => {
                self.mark_waiting(join);
                Ok(())
            }
            Err(first) => reset_failed(self.ctx, to, self.joins, join, first),
        }
    }

    /// `join`, the first done entry, was waited on: numbered (after its three calls were
    /// issued, so that a device synchronisation that began before them does not count it)
    /// and moved into the waiting part by moving the boundary.
    #[inline(always)]
    fn mark_waiting(&self, join: aclrtEvent) {
        let seq = self.ctx.next_join_seq();
        let marked = self.joins.with(|list| {
            let Some(joins) = list.as_deref_mut() else {
                return false;
            };
            match joins.entries.get_mut(joins.waiting) {
                Some(entry) if entry.event == join => {
                    entry.seq = seq;
                    joins.waiting += 1;
                    true
                }
                _ => false,
            }
        });
        if !marked {
            self.joins.mark_waiting_moved(join, seq);
        }
        self.joins.sync_key.set(JOINS_WAITING);
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
        let covered = self.joins.with(|list| {
            list.as_deref().is_some_and(|joins| {
                let oldest = joins.entries.first().filter(|_| joins.waiting > 0);
                oldest.is_some_and(|e| e.seq < synced_before)
                    || joins
                        .unusable
                        .first()
                        .is_some_and(|e| e.seq < synced_before)
            })
        });
        if covered {
            self.finished(|e| e.seq < synced_before, self.stream_done_proves_joins());
        }
        covered
    }

    /// The first done entry, reclaimed or created when there is none: unless a query
    /// finds the target idle once every [`JOIN_POOL`] joins waiting for its synchronisation
    /// (they are then done, and one is reused: a loop that never synchronises the stream
    /// creates none once it has that many, at one query per `JOIN_POOL` joins, never a
    /// hidden synchronisation), a new event. Past its context's join capacity with the
    /// stream still busy: [`Error::JoinCapacity`].
    fn free_join(&self, capacity: usize) -> Result<aclrtEvent> {
        self.reclaim_synced();
        let (waiting, free) = self.joins.with(|list| {
            list.as_deref()
                .map_or((0, None), |joins| (joins.waiting_len(), joins.first_done()))
        });
        if waiting < capacity
            && let Some(join) = free
        {
            return Ok(join);
        }
        if waiting > 0 && (waiting.is_multiple_of(JOIN_POOL) || waiting >= capacity) {
            // Asked again after the query: a stop (S6) that dropped the target's tasks,
            // making it look idle, follows the creation of a stop-on-failure stream, which
            // a load before the query could miss.
            if self.stream_done_proves_joins() && self.is_idle() && self.stream_done_proves_joins()
            {
                self.finished(|_| true, true);
                let free = self.joins.with(|list| list.as_deref()?.first_done());
                if let Some(join) = free {
                    return Ok(join);
                }
            } else if waiting >= capacity {
                return Err(Error::JoinCapacity {
                    capacity: self.ctx.join_capacity(),
                });
            }
        }
        // SAFETY: a crate-private event in the bound context, released through this list.
        let join = unsafe { self.ctx.api().create_event_with_flag(ACL_EVENT_SYNC)? };
        self.joins.with(|list| {
            let joins = list.get_or_insert_with(first_joins);
            joins.entries.push(Entry {
                event: join,
                seq: 0,
            });
            // The first done entry (the others, if any, are done too).
            let last = joins.entries.len() - 1;
            joins.entries.swap(joins.waiting, last);
        });
        Ok(join)
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

    /// The target was synchronised: every join it waited on is done, a fresh event again
    /// (the usual case: one store, out of line only if one must be destroyed).
    #[inline(always)]
    pub(crate) fn synchronized(&self) {
        if !self.stream_done_proves_joins() {
            return;
        }
        let all_done = self.joins.with(|list| match list.as_deref_mut() {
            None => true,
            Some(joins) if joins.unusable.is_empty() && joins.entries.len() <= JOIN_POOL => {
                // Every task using them has run (E9).
                joins.waiting = 0;
                true
            }
            Some(_) => false,
        });
        if all_done {
            self.joins.sync_key.set(self.ctx.id());
        } else {
            finish_all(self.ctx, self.raw, self.joins);
        }
    }

    /// Makes the waiting joins `done` selects done entries (if `reuse`; the others keep
    /// their order), destroying those that cannot be reused or do not fit in the pool. A
    /// destruction that fails is parked in the context (done: any device synchronisation or
    /// the context's end destroys it) and reported.
    #[cold]
    #[inline(never)]
    fn finished(&self, done: impl Fn(&Entry) -> bool, reuse: bool) {
        let (destroy, no_more_waiting) = self.joins.with(|list| {
            let Some(joins) = list.as_deref_mut() else {
                return (Vec::new(), true);
            };
            let mut kept = 0;
            for i in 0..joins.waiting {
                if !done(&joins.entries[i]) {
                    joins.entries.swap(kept, i);
                    kept += 1;
                }
            }
            // Allocated only for events that must be destroyed: none in the steady state
            // of a loop.
            let mut destroy = Vec::new();
            if !reuse {
                destroy.extend(joins.entries.drain(kept..joins.waiting).map(|e| e.event));
            }
            joins.waiting = kept;
            if joins.entries.len() > kept + JOIN_POOL {
                destroy.extend(joins.entries.drain(kept + JOIN_POOL..).map(|e| e.event));
            }
            joins.unusable.retain(|e| {
                let finished = done(e);
                if finished {
                    destroy.push(e.event);
                }
                !finished
            });
            (destroy, joins.waiting_len() == 0)
        });
        if no_more_waiting {
            self.joins.sync_key.set(self.ctx.id());
        }
        if !destroy.is_empty() {
            self.destroy_all(destroy);
        }
    }

    /// The target is being destroyed after a synchronisation: its joins are all done and
    /// destroyed (a failure parks the event in the context), and the list freed.
    pub(crate) fn release_all(&self) {
        if !self.stream_done_proves_joins() {
            self.orphan_all();
            return;
        }
        let Some(joins) = self.take() else {
            return;
        };
        let events = joins.entries.iter().chain(&joins.unusable);
        self.destroy_all(events.map(|e| e.event).collect());
    }

    /// The target is destroyed without a synchronisation (S8), or kept after a failed
    /// release: its waiting joins are parked in the context, whose device synchronisations
    /// and end release them; its done ones are destroyed.
    pub(crate) fn orphan_all(&self) {
        let Some(joins) = self.take() else {
            return;
        };
        let (waiting, done) = joins
            .entries
            .split_at(joins.waiting.min(joins.entries.len()));
        for e in waiting.iter().chain(&joins.unusable) {
            // Its tasks may be dropped unrun (S8): its flag is unknown, never reused.
            self.ctx.park(Parked::issued(e.seq, e.event));
        }
        self.destroy_all(done.iter().map(|e| e.event).collect());
    }

    /// Empties the list, handing it over.
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

/// [`JoinTarget::synchronized`]'s out-of-line case, from the target's fields (so that the
/// usual case builds no `JoinTarget` in memory).
#[cold]
#[inline(never)]
fn finish_all<H: JoinHost>(ctx: &H, raw: aclrtStream, joins: &Joins) {
    JoinTarget { ctx, raw, joins }.finished(|_| true, true);
}

/// [`JoinTarget::free_join`], out of line, from the target's fields (so that a join that
/// finds a done entry builds no `JoinTarget` in memory).
#[cold]
#[inline(never)]
fn free_join<H: JoinHost>(
    ctx: &H,
    raw: aclrtStream,
    joins: &Joins,
    capacity: usize,
) -> Result<aclrtEvent> {
    JoinTarget { ctx, raw, joins }.free_join(capacity)
}

/// A join whose reset failed (after its wait, on the target `to`), out of line, from the
/// target's fields. A failed reset issued nothing: it is tried again while the runtime
/// fails it (E4), each error reported, then issued alone once `to` has passed its wait
/// ([`reset_again`]); once issued, the join waits as any other.
///
/// `join` leaves the list first: it is the first done entry, and the reports run the
/// drop-error handler, user code that may join into the same stream (which would record
/// `join` again before its reset, E4) or synchronise it (which may destroy the entries
/// past the pool, `join` among them, E4, E9).
#[cold]
#[inline(never)]
fn reset_failed<H: JoinHost>(
    ctx: &H,
    to: aclrtStream,
    joins: &Joins,
    join: aclrtEvent,
    first: crate::result::CallError,
) -> Result<()> {
    joins.forget(join);
    match reset_again(ctx, to, join, first.into()) {
        Ok(()) => {
            JoinTarget {
                ctx,
                raw: to,
                joins,
            }
            .mark_waiting(join);
            Ok(())
        }
        // After a stop (S6) no reset can ever be issued, and the runtime allows the
        // destroy: released once `to` is synchronised (E9), never reused.
        Err(error) if ctx.stopped_by(&error) => {
            joins.make_unusable(join, ctx.next_join_seq());
            Err(error)
        }
        Err(error) => {
            // Waited and never reset: never destroyed (E4), nor reused. Kept, counted as a
            // live handle of the context, which is then not released over it (D3).
            ctx.adopt();
            Err(error)
        }
    }
}

/// [`reset_failed`]'s tries: the reset again, then alone once `to` is synchronised.
fn reset_again<H: JoinHost>(
    ctx: &H,
    to: aclrtStream,
    join: aclrtEvent,
    first: Error,
) -> Result<()> {
    let api = ctx.api();
    if !matches!(first, Error::Runtime { .. }) {
        return Err(first);
    }
    report_drop_error("join event (a reset tried again)", Err(first));
    // SAFETY: as for the first try in `JoinTarget::join_after`: `join` recorded on the
    // other stream and waited on by `to` (live); a failed reset issued nothing.
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
