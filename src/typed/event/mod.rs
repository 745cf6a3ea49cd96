//! Events and their typestate (E1-E9).

use std::cell::{Cell, OnceCell, RefCell};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr;

use crate::sys::bindings::ACL_EVENT_SYNC;
use crate::sys::bindings::{aclrtEvent, aclrtStream};
use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::handle::{Failed, Timeout, release_on_drop, report_drop_error, retry_cleanup};
use crate::typed::stream::Stream;

mod scope;
mod wait;

pub use scope::{ResetDone, Waited};
pub use wait::WaitError;

mod sealed {
    /// What an event's pending tasks are, by state: what `Drop`/`destroy` must wait for
    /// before `aclrtDestroyEvent` (E9).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum PendingTask {
        /// No task refers to the event.
        Nothing,
        /// A record task: wait for the event itself.
        Record,
        /// A reset task on the stream kept in the event (ordered after every wait on it).
        ResetOnStream,
    }

    pub trait Sealed {
        const PENDING: PendingTask;
    }
}

use sealed::PendingTask;

/// The state of an [`Event`]. Sealed: the states are [`Created`], [`Recorded`] and [`Reset`].
pub trait EventState: sealed::Sealed {}

/// *Created*: never recorded. Allows [`Event::record`] and [`Event::destroy`]; cannot be
/// waited on (E1).
#[derive(Debug)]
pub enum Created {}
/// *Recorded*: a record task was issued. Allows `synchronize`, `query`, `elapsed_since`
/// (E2, E8), and the [`Event::wait`] scope (E3, E4).
#[derive(Debug)]
pub enum Recorded {}
/// *Reset*: for an [`Event`], waited and reset (E4): allows [`Event::record`] again and
/// [`Event::destroy`]; cannot be waited on (E1). For a [`Device`](crate::Device),
/// `aclrtResetDevice` done: allows [`Device::set`](crate::Device::set) again (D1).
#[derive(Debug)]
pub enum Reset {}

impl sealed::Sealed for Created {
    const PENDING: PendingTask = PendingTask::Nothing;
}
impl sealed::Sealed for Recorded {
    const PENDING: PendingTask = PendingTask::Record;
}
impl sealed::Sealed for Reset {
    const PENDING: PendingTask = PendingTask::ResetOnStream;
}
impl EventState for Created {}
impl EventState for Recorded {}
impl EventState for Reset {}

/// States that can be recorded: [`Created`] and [`Reset`].
pub trait Recordable: EventState {}
impl Recordable for Created {}
impl Recordable for Reset {}

/// The bit of [`Event`]'s stream pointer that says its record is proven complete.
const COMPLETE: usize = 1;

/// An `ACL_EVENT_SYNC` event in state `S`, usable by streams that outlive `'s`.
///
/// The lifetime `'s` shrinks to the shortest of the context and every stream the event was
/// used on, so the event must be destroyed before those streams (D3), and destroying it
/// first waits for the tasks that refer to it (E9): the record (`Recorded`) or the reset,
/// which is ordered after every wait (`Reset`).
///
/// `Send`, not `Sync`: transitions consume the event; sharing it would let two threads
/// race on one event's state.
///
/// Size: three pointers (the raw event, its context for binding (D6), and the stream of its
/// last pending task, for E9).
///
/// ```no_run
/// # use ascend_typestate::Acl;
/// # let acl = Acl::init()?;
/// # let device = acl.set_device(0)?;
/// # let ctx = device.create_context()?;
/// let (s1, s2) = (ctx.create_stream()?, ctx.create_stream()?);
/// let event = ctx.create_event()?;        // Created
/// let event = event.record(&s1)?;         // Recorded (E2)
/// let event = event.wait(&s2, |waited| {  // s2 waits for s1's work (E3)
///     // ... issue work on s2 that needs s1's results ...
///     waited.reset()                      // E4: without this line, it does not compile
/// })?;                                    // Reset
/// let event = event.record(&s1)?;         // and again
/// event.synchronize()?;
/// event.destroy()?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
///
/// # States
///
/// ```text
///                  record(&s)                 wait(&s2, |w| … w.reset())
///   ┌─────────┐ ─────────────► ┌──────────┐ ───────────────────────────► ┌───────┐
///   │ Created │                │ Recorded │                              │ Reset │
///   └─────────┘                └──────────┘ ◄───────────────────────────  └───────┘
///                                  │  ▲                 record(&s)
///       synchronize / query /      │  │
///       elapsed_since (E2, E8) ────┘  └── inside the wait scope the event is `Waited`:
///                                         more streams may wait (E3); the scope must end
///                                         with `reset()` (E4)
/// ```
///
/// | state | allows | leaves by |
/// |---|---|---|
/// | [`Created`] | `record`, `destroy` | `record` → `Recorded` |
/// | [`Recorded`] | `synchronize`, `is_complete`, `elapsed_since`, `wait`, `wait_and_reset`, `reset_completed`, `destroy` | `wait` scope or `wait_and_reset` → `Reset`; `reset_completed` (its record done, E10) → `Reset` |
/// | [`Waited`] (scope) | `also_wait`, `reset` | `reset` → proof [`ResetDone`] → `Reset` |
/// | [`Reset`] | `record`, `destroy` | `record` → `Recorded` |
///
/// What does not compile: waiting on a *Created* or *Reset* event (E1: no `wait` method),
/// resetting an event that was never waited (no `reset` outside a wait scope), recording a
/// waited event before its reset (the event is moved into the scope), and ending a wait
/// scope without `reset()` (E4: the closure must return the [`ResetDone`] proof, which only
/// [`Waited::reset`] creates, branded with the scope's own lifetime so that a proof from
/// another scope does not fit).
///
/// A panic or an early `Err` between wait and reset still compiles: [`Event::wait`] issues
/// the reset on that path itself (the scope's state lives in its frame, so even a
/// `mem::forget` of the [`Waited`] value cannot skip it), and the event resource is never
/// lost (E4).
///
/// **Why *Waited* is a scope, not an `Event<Waited>` value.** The design card lists
/// *Waited* among the event's states. As a value, it could be kept, dropped or
/// `mem::forget`-ed: the reset that E4 requires would then rest on `Drop` running, which a
/// `mem::forget` (safe code) skips, leaking the runtime's event resource. As the body of
/// [`Event::wait`], *Waited* is still a named state with its own methods ([`Waited`]:
/// `also_wait`, `reset`), but the scope's frame owns the event and issues the reset on
/// every path out of it, and the type checker demands the [`ResetDone`] proof that only
/// `reset` makes. That keeps E4 a compile-time guarantee which no safe code can skip.
///
/// Several streams waiting on one event (E3) never see a reset overtake their wait (E5):
/// when more than one stream waited, the reset is ordered after every wait by a join event
/// recorded on each other waiting stream and waited on by the resetting stream.
///
/// The runtime's event is a flag (a record sets it, a wait passes while it is set, a reset
/// clears it), so re-using an event also needs order: a record or a wait issued after a
/// reset on another stream is joined after that reset. Otherwise the new record could run
/// before the old scope's waits and release them early, or a new wait could pass on the old
/// record's flag. In the usual pipeline (producer records, consumer waits and resets) that
/// is one join per cycle, on the producer; none when the same stream records and resets. It
/// is one join per ordering need, not per event: a stream joined after every reset another
/// stream has issued so far needs no other join from it until that stream resets again, so
/// K events reset on the consumer and all recorded again on the producer cost one join, as
/// the C program that joins once (`tests/events/joins.rs`).
///
/// A join event is recorded again only once a synchronisation has shown its record, wait and
/// reset all done (E9): the stream that waited on it keeps up to 64 such events for its next
/// joins and destroys them with itself, so a loop that synchronises its streams (or the
/// device) now and then creates none in its steady state (`tests/steady_state.rs`). In a
/// program that never synchronises that stream, the crate queries it (never waits for it)
/// once every 64 joins, and reuses them if it is idle; past the context's
/// [join capacity](Context::set_join_capacity) a join is
/// [`Error::JoinCapacity`](crate::Error::JoinCapacity). In a context with a stream that stops
/// on failure (S6) a join is never reused: a stop may drop its reset.
///
/// Every typed event is created with `ACL_EVENT_SYNC`, so the E7 error cannot occur.
pub struct Event<'s, S: EventState> {
    raw: aclrtEvent,
    ctx: &'s Context<'s>,
    /// The stream of the event's last reset, or null. Borrowed for `'s` (so it neither
    /// moves nor drops while the event lives); a raw pointer so that the event stays `Send`
    /// (`Stream` is not `Sync`): only its raw handle and its atomic flag are read.
    ///
    /// In the *Recorded* state its lowest bit (never set in a `Stream`'s address, which is
    /// word-aligned) says the record is proven complete: a synchronisation of the event, or
    /// a query that answered complete, has seen it done. Nothing can make it pending again
    /// while the event is *Recorded* (recording again needs *Reset*), so
    /// [`reset_completed`](Event::reset_completed) needs no query then (E10).
    /// (Stored with its lifetime erased, so that the event stays covariant in `'s`; read
    /// back only as `&'s Stream<'s>`.)
    stream: std::cell::Cell<*const Stream<'static>>,
    _state: PhantomData<(S, std::cell::Cell<()>)>,
}

// SAFETY: the raw event is an opaque handle usable from any thread once its context is
// current there, which every call ensures (D6); `Context` is `Sync`.
unsafe impl<S: EventState> Send for Event<'_, S> {}

impl<'s, S: EventState> Event<'s, S> {
    /// Moves the fields into a value of another state without running `Drop`.
    fn into_state<T: EventState>(self, stream: *const Stream<'s>) -> Event<'s, T> {
        let this = ManuallyDrop::new(self);
        Event {
            raw: this.raw,
            ctx: this.ctx,
            stream: std::cell::Cell::new(stream.cast()),
            _state: PhantomData,
        }
    }

    /// The raw `aclrtEvent`, for calls this crate does not wrap.
    pub fn as_raw(&self) -> aclrtEvent {
        self.raw
    }

    /// The context the event was created in.
    pub fn context(&self) -> &'s Context<'s> {
        self.ctx
    }

    fn release(&self) -> Result<()> {
        let api = self.ctx.api();
        self.ctx.bind()?;
        match S::PENDING {
            PendingTask::Nothing => {}
            // SAFETY: the event is live for as long as `self`.
            PendingTask::Record => unsafe { api.synchronize_event(self.raw)? },
            PendingTask::ResetOnStream => {}
        }
        // Every reset of the event is ordered after the waits of its scope and after the
        // previous reset (joins in `Waited::reset`), so the last resetting stream passing its
        // reset means no wait or reset refers to the event any more (E9).
        // A stream synchronised since its last reset has nothing pending.
        let pending_reset = self.reset_stream().filter(|r| r.has_reset_pending());
        if S::PENDING == PendingTask::ResetOnStream && self.ctx.may_stop() {
            // After a stop (S6) a synchronised stream no longer proves the record done: the
            // stop dropped the wait without waiting for it. Only the event itself tells.
            return self.release_after_stop(pending_reset);
        }
        if let Some(reset_stream) = pending_reset.filter(|_| S::PENDING != PendingTask::Nothing) {
            // `'s` keeps the resetting stream alive as long as the event.
            if let Err(first) = reset_stream.synchronize_shared() {
                // A task of the stream failed (reported once: the second synchronisation
                // sees the stream done). It may be a wait that ended without its event (a
                // timeout armed through the raw layer, P3a, or a device fault), whose record
                // may still be pending on another stream: wait for it too (E9).
                report_drop_error("Event (an error of the stream that reset it)", Err(first));
                reset_stream.synchronize_shared()?;
                // SAFETY: the event is live for as long as `self`.
                unsafe { api.synchronize_event(self.raw)? };
            }
        }
        // SAFETY: the event is live, no issued task refers to it any more (E9: waited for
        // above), and the value is consumed or being dropped, so this is its only destruction.
        unsafe { api.destroy_event(self.raw)? };
        self.ctx.orphan();
        Ok(())
    }

    /// [`release`](Self::release) of a waited event in a context that may stop (S6): its
    /// resetting stream, then the event itself are synchronised (each error reported, and
    /// tried again: a stop is reported once), then it is destroyed (E9).
    #[cold]
    #[inline(never)]
    fn release_after_stop(&self, pending_reset: Option<&Stream<'_>>) -> Result<()> {
        let api = self.ctx.api();
        if let Some(reset_stream) = pending_reset {
            retry_cleanup(
                "Event (its resetting stream, in a context that may stop)",
                || reset_stream.synchronize_shared(),
            )?;
        }
        retry_cleanup("Event (its record, in a context that may stop)", || {
            // SAFETY: the event is live for as long as `self`.
            unsafe { api.synchronize_event(self.raw) }
        })?;
        // SAFETY: as in `release`: every task using the event has run or was dropped by
        // the stop, which the runtime no longer counts (E9).
        unsafe { api.destroy_event(self.raw)? };
        self.ctx.orphan();
        Ok(())
    }

    /// `aclrtDestroyEvent` (E9: once no task refers to it).
    /// On failure the error is returned and the event goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_destroy`](Self::try_destroy) gives it back instead, for a caller who wants to retry.
    pub fn destroy(self) -> Result<()> {
        self.try_destroy().map_err(Failed::into_release_error)
    }

    /// Waits for the tasks that refer to the event (E9), then `aclrtDestroyEvent`. On failure
    /// the event is given back in its state.
    pub fn try_destroy(self) -> Result<(), Failed<Event<'s, S>>> {
        Failed::release_or_give_back(self, Self::release)
    }
}

impl<'s> Event<'s, Created> {
    pub(crate) fn created(raw: aclrtEvent, ctx: &'s Context<'s>) -> Self {
        ctx.adopt();
        Event {
            raw,
            ctx,
            stream: std::cell::Cell::new(ptr::null()),
            _state: PhantomData,
        }
    }
}

/// A created event is as good as a reset one (both can only be recorded): this lets a loop
/// whose body leaves the event *Reset* start from a fresh event.
///
/// ```no_run
/// # use ascend_typestate::{Acl, Event, Reset};
/// # let acl = Acl::init()?;
/// # let device = acl.set_device(0)?;
/// # let ctx = device.create_context()?;
/// # let (s1, s2) = (ctx.create_stream()?, ctx.create_stream()?);
/// let mut event: Event<'_, Reset> = ctx.create_event()?.into();
/// for _frame in 0..3 {
///     event = event.record(&s1)?.wait(&s2, |w| w.reset())?;
/// }
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
impl<'s> From<Event<'s, Created>> for Event<'s, Reset> {
    fn from(event: Event<'s, Created>) -> Self {
        event.into_state(ptr::null())
    }
}

impl<'s, S: Recordable> Event<'s, S> {
    /// `aclrtRecordEvent(event, stream)` (E2): the event completes when the tasks issued on
    /// `stream` so far are done.
    /// On failure the error is returned and the event goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_record`](Self::try_record) gives it back instead, for a caller who wants to retry.
    #[inline(always)]
    pub fn record<'t>(self, stream: &'t Stream<'_>) -> Result<Event<'t, Recorded>>
    where
        's: 't,
    {
        self.try_record(stream).map_err(Error::from)
    }

    /// `aclrtRecordEvent(event, stream)` (E2): the event completes when the tasks issued on
    /// `stream` so far are done. On failure the event is given back unchanged.
    #[inline(always)]
    pub fn try_record<'t>(
        self,
        stream: &'t Stream<'_>,
    ) -> Result<Event<'t, Recorded>, Failed<Event<'s, S>>>
    where
        's: 't,
    {
        if let Err(e) = self.prepare(stream) {
            return Err(Failed::new(e, self));
        }
        // SAFETY: both handles are live (borrowed), and the stream's context is current.
        match unsafe { self.ctx.api().record_event(self.raw, stream.as_raw()) } {
            Ok(()) => {
                // Keep the last resetting stream: its reset may still be pending (E9).
                let reset_stream = self.reset_stream_ptr();
                Ok(self.into_state(reset_stream))
            }
            Err(e) => Err(Failed::new(e.into(), self)),
        }
    }
}

impl<'s, S: EventState> Event<'s, S> {
    fn check_stream(&self, stream: &Stream<'_>) -> Result<()> {
        self.ctx.check_stream(stream, "the stream")
    }

    /// What every call that issues a task on `stream` with this event does first: checks
    /// that the stream is of the event's context and that context is current (D6), and
    /// joins the stream after the previous reset if needed (E5). Inline only the tests;
    /// what they find missing is done out of line, the join without checking again what
    /// the tests found.
    ///
    /// Passes the event's fields by value, not `&self`: a reference to the event would let
    /// its address escape into the out-of-line calls, and the compiler would then keep the
    /// event in memory, copying it at every transition of a loop (zero cost).
    #[inline(always)]
    fn prepare(&self, stream: &Stream<'_>) -> Result<()> {
        if !(ptr::addr_eq(self.ctx, stream.context()) & stream.is_bound()) {
            return prepare_slow(self.ctx, self.reset_stream_ptr(), stream);
        }
        if needs_join(self.reset_stream(), stream) {
            return join_after_reset(self.reset_stream_ptr(), stream);
        }
        Ok(())
    }

    /// The stream of the event's last reset.
    #[inline]
    fn reset_stream(&self) -> Option<&'s Stream<'s>> {
        // SAFETY: a non-null pointer comes from a `&'s Stream` (see the field), borrowed for
        // as long as the event; only its raw handle, context and atomic counts are used
        // (`Stream::synchronize_shared`, never its join list).
        unsafe { self.reset_stream_ptr().as_ref() }
    }

    /// The field's pointer without its completion bit.
    #[inline(always)]
    fn reset_stream_ptr(&self) -> *const Stream<'s> {
        let stream = self.stream.get();
        // Only a *Recorded* event carries the bit: the other states' hot paths (`record`)
        // read the pointer as it is.
        if matches!(S::PENDING, PendingTask::Record) {
            stream.map_addr(|a| a & !COMPLETE).cast()
        } else {
            stream.cast()
        }
    }

    /// Whether the record is proven complete (*Recorded* only; see the field).
    #[inline(always)]
    fn proven_complete(&self) -> bool {
        self.stream.get().addr() & COMPLETE != 0
    }

    /// Marks the record proven complete (*Recorded* only: a synchronisation or a query saw
    /// it done). Not in a context that may stop on failure (S6): a record the stop dropped
    /// never runs, yet a later synchronisation of it returns (the runtime no longer counts
    /// it), so there only the query answers, every time.
    #[inline(always)]
    fn prove_complete(&self) {
        if !self.ctx.may_stop() {
            self.stream
                .set(self.stream.get().map_addr(|a| a | COMPLETE));
        }
    }
}

impl<S: EventState> Drop for Event<'_, S> {
    // Inlined, passing the fields by value to the out-of-line release: see `Event::prepare`
    // for why the event's address must not escape.
    #[inline(always)]
    fn drop(&mut self) {
        drop_event::<S>(self.raw, self.ctx, self.reset_stream_ptr());
    }
}

/// The release of a dropped event (E9), out of line, from its fields.
#[cold]
#[inline(never)]
fn drop_event<'s, S: EventState>(raw: aclrtEvent, ctx: &'s Context<'s>, stream: *const Stream<'s>) {
    // Not dropped again: this is that drop.
    let event = ManuallyDrop::new(Event::<'s, S> {
        raw,
        ctx,
        stream: std::cell::Cell::new(stream.cast()),
        _state: PhantomData,
    });
    release_on_drop("Event", || event.release());
}

/// Checks the stream, binds its context (D6) and joins it after the previous reset on
/// `reset_stream` (E5): what [`Event::prepare`] found missing. The join is needed
/// because the runtime's event is a flag: a record that ran before the previous reset would
/// release that scope's waits early (or be cleared by the reset), and a wait that ran
/// before it would pass on the previous record's flag (E1, E4, E5).
#[cold]
#[inline(never)]
fn prepare_slow<'s>(
    ctx: &'s Context<'s>,
    reset_stream: *const Stream<'s>,
    stream: &Stream<'_>,
) -> Result<()> {
    ctx.check_stream(stream, "the stream")?;
    stream.bind()?;
    // SAFETY: as in `Event::reset_stream`: the event's field, borrowed for `'s`.
    after_reset_on(unsafe { reset_stream.as_ref() }, stream)
}

/// The join [`Event::prepare`] found needed, the stream being of the event's (bound)
/// context and the reset on `reset_stream` (non-null) pending.
#[cold]
#[inline(never)]
fn join_after_reset<'s>(reset_stream: *const Stream<'s>, stream: &Stream<'_>) -> Result<()> {
    // SAFETY: as in `Event::reset_stream`: the event's field, borrowed for `'s`.
    match unsafe { reset_stream.as_ref() } {
        Some(r) => join_after(r, stream),
        None => Ok(()),
    }
}

impl<S: EventState> std::fmt::Debug for Event<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("raw", &self.raw)
            .field("state", &std::any::type_name::<S>())
            .finish()
    }
}

/// Orders `stream` after a reset issued on `reset_stream`, unless it is the same stream
/// (stream order, S1) or `reset_stream` was synchronised since (the reset is done). The
/// caller has bound the context.
#[inline]
fn after_reset_on(reset_stream: Option<&Stream<'_>>, stream: &Stream<'_>) -> Result<()> {
    match reset_stream {
        Some(r) if needs_join(reset_stream, stream) => join_after(r, stream),
        _ => Ok(()),
    }
}

/// Joins `stream` after the resets issued on `reset_stream` so far (E5).
#[inline(always)]
fn join_after(reset_stream: &Stream<'_>, stream: &Stream<'_>) -> Result<()> {
    let resets = Stream::resets_of(reset_stream);
    stream.join_after(reset_stream.as_raw())?;
    stream.joined_after(resets);
    Ok(())
}

/// Whether a task on `stream` must first be joined after the reset on `reset_stream`: it is
/// another stream, and that reset may still be pending (not synchronised since).
#[inline(always)]
fn needs_join(reset_stream: Option<&Stream<'_>>, stream: &Stream<'_>) -> bool {
    match reset_stream {
        Some(r) => {
            r.as_raw() != stream.as_raw()
                && r.has_reset_pending()
                && !stream.joined_after_resets_of(r)
        }
        None => false,
    }
}

/// Creating events (E7).
impl<'dev> Context<'dev> {
    /// `aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC)`: an [`Event`] in the *Created* state.
    ///
    /// Every event of the typed API carries `ACL_EVENT_SYNC`, so the E7 error (wait or reset
    /// on an event without it) cannot happen.
    pub fn create_event(&self) -> Result<Event<'_, Created>> {
        self.bind()?;
        // SAFETY: a new event in this (bound) context, owned by the returned value (D3).
        let raw = unsafe { self.api().create_event_with_flag(ACL_EVENT_SYNC)? };
        Ok(Event::created(raw, self))
    }
}
