//! Streams: ordered task queues (S1-S8).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::sys::bindings::ACL_STOP_ON_FAILURE;
use crate::sys::bindings::aclrtStream;
use crate::typed::context::{Context, Finished, STOPS_ON_FAILURE};
use crate::typed::error::Result;
use crate::typed::handle::{Failed, Timeout, release_on_drop, retry_cleanup};
use crate::typed::join::{Binding, JoinTarget, Joins};
use crate::typed::join_state::ResetCounts;

/// A stream created by [`Context::create_stream`], borrowing its context.
///
/// # States
///
/// ```text
///  Context::create_stream()            ──► Live ──destroy()───────► Destroyed (consumed)
///  Context::create_stream_with(config)       │   └─destroy_force()─► Destroyed, tasks dropped
///                                            │  tasks issued: record, wait, copies, callbacks (S1)
///                                            ├─ synchronize() / synchronize_with(timeout) (S2, S3)
///                                            └─ is_complete() (S5)
/// ```
///
/// * It cannot outlive its context, and the context cannot be destroyed while it lives (D3).
/// * [`Stream::destroy`] synchronises before destroying (S4) and returns any error; `Drop`
///   does the same as a fallback and hands errors to the
///   [drop-error handler](crate::set_drop_error_handler).
/// * Every call binds the stream's context on the calling thread (D6), so a stream can be
///   moved to another thread and used there.
///
/// `Send`, not `Sync`: tasks issued from two threads at once would have no defined order
/// (S1); move the stream (or use one stream per thread) instead.
///
/// Size: 9 words: the raw `aclrtStream`, the context it needs for binding (D6), two
/// counts that let events skip ordering joins once the stream has been synchronised, its
/// id and last join (E5), and the join events it waited on (E9, boxed with its first join).
///
/// ```no_run
/// # use ascend_typestate::Acl;
/// # let acl = Acl::init()?;
/// # let device = acl.set_device(0)?;
/// let ctx = device.create_context()?;
/// let stream = ctx.create_stream()?;
/// stream.synchronize()?;              // S2
/// stream.destroy()?;                  // S4: synchronised, then destroyed
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
pub struct Stream<'ctx> {
    raw: aclrtStream,
    ctx: &'ctx Context<'ctx>,
    /// Event resets issued on this stream and those a synchronisation covered: while they
    /// differ, the typed API orders an event's next record and waits after its reset (E1,
    /// E5). Atomics: an event (which is `Send`) reads them from whichever thread it is used on.
    resets: ResetCounts,
    /// Unique in the process (never reused): what [`joined`](Self::joined) names a stream
    /// by, where a raw handle could be reused once its stream is destroyed.
    id: u64,
    /// The last join this stream was ordered by after another stream's resets (E5): that
    /// stream's `id` and its resets issued when the join was issued. Every reset counted
    /// up to there is ordered before this stream's later tasks, so while that stream issues
    /// no further reset, another join from it is not needed: K events reset on one stream
    /// and recorded on this one cost one join, as in C. (A `Cell`: the stream is not `Sync`,
    /// so only the thread using it reads or writes it.)
    joined: std::cell::Cell<(u64, u64)>,
    /// The join events this stream waited on, done at its next synchronisation (E9), and
    /// those done and kept for its next joins. Only the thread using the stream touches it.
    /// Never touched through an event (which may be on another thread): see
    /// [`synchronize_shared`](Self::synchronize_shared).
    joins: Joins,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

/// The next [`Stream::id`]; 0 is never one (`joined` starts at `(0, 0)`).
static NEXT_STREAM_ID: AtomicU64 = AtomicU64::new(1);

// SAFETY: the raw stream is an opaque handle the runtime lets any thread use once the
// stream's context is current there; every call binds it first (D6). `Context` is `Sync`,
// so the `&Context` may cross threads.
unsafe impl Send for Stream<'_> {}

impl<'ctx> Stream<'ctx> {
    /// # Safety
    /// `raw` is a live stream created in `ctx`, owned by nothing else.
    pub(crate) unsafe fn from_raw(raw: aclrtStream, ctx: &'ctx Context<'ctx>) -> Self {
        ctx.adopt();
        Stream {
            raw,
            ctx,
            resets: ResetCounts::new(),
            id: NEXT_STREAM_ID.fetch_add(1, Ordering::Relaxed),
            joined: std::cell::Cell::new((0, 0)),
            joins: Joins::new(ctx),
            _not_sync: PhantomData,
        }
    }

    /// The raw `aclrtStream`, for calls this crate does not wrap.
    pub fn as_raw(&self) -> aclrtStream {
        self.raw
    }

    /// The context the stream was created in.
    pub fn context(&self) -> &'ctx Context<'ctx> {
        self.ctx
    }

    /// Makes the stream's context current on this thread (D6).
    #[inline]
    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx.bind()
    }

    /// Whether the stream's context is known to be current on this thread (D6): when it
    /// is, [`bind`](Self::bind) has nothing to do.
    #[inline(always)]
    pub(crate) fn is_bound(&self) -> bool {
        self.ctx.is_bound()
    }

    /// `aclrtSynchronizeStream` (S2): blocks until every task issued on the stream is done,
    /// and returns the errors of its asynchronous tasks (a timed-out wait, P3).
    #[inline]
    pub fn synchronize(&self) -> Result<()> {
        self.synchronize_in(self.ctx)
    }

    /// [`synchronize`](Self::synchronize), given the stream's own context (an async scope
    /// has it at hand).
    #[inline(always)]
    pub(crate) fn synchronize_in(&self, ctx: &Context<'_>) -> Result<()> {
        match self.joins.binding(ctx.id()) {
            Binding::WithoutJoins => self.synchronize_counting_resets(ctx),
            // A loop that joins this stream every cycle comes here every cycle: inline too.
            Binding::WithJoins => {
                self.synchronize_counting_resets(ctx)?;
                self.join_target().synchronized();
                Ok(())
            }
            Binding::Unbound => self.synchronize_unbound(ctx),
        }
    }

    /// [`synchronize_in`](Self::synchronize_in) when the context must be bound first (D6).
    #[cold]
    #[inline(never)]
    fn synchronize_unbound(&self, ctx: &Context<'_>) -> Result<()> {
        ctx.bind()?;
        self.synchronize_counting_resets(ctx)?;
        self.join_target().synchronized();
        Ok(())
    }

    /// The synchronisation itself, counting the resets it covers. The context is bound.
    #[inline(always)]
    fn synchronize_counting_resets(&self, ctx: &Context<'_>) -> Result<()> {
        let resets = self.resets.issued();
        // SAFETY: `self.raw` is live for as long as `self`.
        unsafe { ctx.api().synchronize_stream(self.raw)? };
        self.resets.synchronized(resets);
        Ok(())
    }

    /// `aclrtSynchronizeStreamWithTimeout` (S3): as [`synchronize`](Self::synchronize), giving
    /// up after `timeout` with [`AclError::RtStreamSyncTimeout`](crate::AclError::RtStreamSyncTimeout).
    pub fn synchronize_with(&self, timeout: Timeout) -> Result<()> {
        self.bind()?;
        let resets = self.resets.issued();
        // SAFETY: `self.raw` is live; `Timeout` holds only -1 or > 0 (S3).
        unsafe {
            self.ctx
                .api()
                .synchronize_stream_with_timeout(self.raw, timeout.as_raw())?
        };
        self.resets.synchronized(resets);
        self.join_target().synchronized();
        Ok(())
    }

    /// `aclrtSynchronizeStream` through a handle that may be on another thread than the
    /// stream's user (an event's release): it counts the resets it covers (atomics) and
    /// leaves the join list, which only the stream's user touches, to the stream's own
    /// next synchronisation (the joins are done; that one reuses them).
    pub(crate) fn synchronize_shared(&self) -> Result<()> {
        self.bind()?;
        self.synchronize_counting_resets(self.ctx)
    }

    /// This stream's join bookkeeping (E5, E9).
    #[inline(always)]
    fn join_target(&self) -> JoinTarget<'_> {
        JoinTarget {
            ctx: self.ctx,
            raw: self.raw,
            joins: &self.joins,
        }
    }

    /// Orders this stream after the tasks issued on `from` so far, with a join event (E5).
    /// The caller has bound the context (D6); `from` is a live stream of it.
    #[inline(always)]
    pub(crate) fn join_after(&self, from: aclrtStream) -> Result<()> {
        self.join_target().join_after(from)
    }

    /// Synchronises until the stream is seen done. An asynchronous task's error is reported
    /// by one synchronisation only, so after a failure a second one tells a failed task (the
    /// stream is done; the first error is reported as `what`, never lost) from a stream that
    /// cannot be synchronised or bound (that error is returned).
    #[cold]
    pub(crate) fn settle(&self, what: &'static str) -> Result<()> {
        retry_cleanup(what, || self.synchronize())
    }

    /// Records that an event reset was issued on this stream: once issued, never before
    /// ([`ResetCounts::mark`]).
    #[inline(always)]
    pub(crate) fn mark_reset_pending(&self) {
        self.resets.mark();
    }

    /// Whether this stream was joined after every reset `from` has issued so far (E5).
    #[inline]
    pub(crate) fn joined_after_resets_of(&self, from: &Stream<'_>) -> bool {
        self.joined.get() == (from.id, from.resets.issued())
    }

    /// `from`'s resets issued up to now, for [`joined_after`](Self::joined_after) once the
    /// join is issued: taken before it, so that every reset it counts precedes the join.
    #[inline]
    pub(crate) fn resets_of(from: &Stream<'_>) -> (u64, u64) {
        (from.id, from.resets.issued())
    }

    /// A join from the stream `resets` was taken of (by [`resets_of`](Self::resets_of)) to
    /// this one was issued: later tasks here follow those resets.
    #[inline]
    pub(crate) fn joined_after(&self, resets: (u64, u64)) {
        self.joined.set(resets);
    }

    #[inline(always)]
    pub(crate) fn has_reset_pending(&self) -> bool {
        self.resets.pending()
    }

    fn release(&self) -> Result<()> {
        self.bind()?;
        self.synchronize()?;
        // Every join this stream waited on is done (E9): destroyed with it (and any the
        // context keeps whose destruction failed earlier, tried again).
        self.join_target().release_all();
        self.ctx.destroy_parked(Finished::Done);
        // SAFETY: `self.raw` is live, its context is current (bound above), every task is done
        // (S4), and the value is consumed or being dropped, so this is the only destruction.
        unsafe { self.ctx.api().destroy_stream(self.raw)? };
        self.ctx.orphan();
        Ok(())
    }

    /// `aclrtDestroyStream` after a synchronisation (S2, S4).
    /// On failure the error is returned and the stream goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_destroy`](Self::try_destroy) gives it back instead, for a caller who wants to retry.
    pub fn destroy(self) -> Result<()> {
        self.try_destroy().map_err(Failed::into_release_error)
    }

    /// Synchronises (S4), then `aclrtDestroyStream`. On failure the stream is given back.
    pub fn try_destroy(self) -> Result<(), Failed<Stream<'ctx>>> {
        Failed::release_or_give_back(self, Self::release)
    }

    /// `aclrtStreamQuery` (S5): whether every task issued on the stream is done. Waits for
    /// nothing and orders nothing; asynchronous errors stay for the next synchronisation.
    /// [`Error::Unsupported`](crate::Error::Unsupported) on runtimes that lack it.
    pub fn is_complete(&self) -> Result<bool> {
        self.bind()?;
        // SAFETY: `self.raw` is live for as long as `self`.
        Ok(unsafe { self.ctx.api().stream_query(self.raw) }?)
    }

    /// `aclrtStreamGetId` (S10): the runtime's number for this stream (for logs and the
    /// runtime's own tools). [`Error::Unsupported`](crate::Error::Unsupported) on runtimes
    /// before CANN 8.2.
    pub fn runtime_id(&self) -> Result<i32> {
        self.bind()?;
        // SAFETY: `self.raw` is live for as long as `self`; a query changes nothing (S10).
        Ok(unsafe { self.ctx.api().stream_get_id(self.raw) }?)
    }

    /// `aclrtStreamGetFlags` (S10): the flags the stream was created with (S7: e.g.
    /// `ACL_STREAM_FAST_LAUNCH`), 0 for none. [`Error::Unsupported`](crate::Error::Unsupported)
    /// on runtimes before CANN 8.5.
    pub fn flags(&self) -> Result<u32> {
        self.bind()?;
        // SAFETY: as in `runtime_id`.
        Ok(unsafe { self.ctx.api().stream_get_flags(self.raw) }?)
    }

    /// `aclrtStreamGetPriority` (S10): 0 (the highest, and the default) to 7.
    /// [`Error::Unsupported`](crate::Error::Unsupported) on runtimes before CANN 8.5.
    pub fn priority(&self) -> Result<u32> {
        self.bind()?;
        // SAFETY: as in `runtime_id`.
        Ok(unsafe { self.ctx.api().stream_get_priority(self.raw) }?)
    }

    /// `aclrtStreamAbort` (S11): stops the running task and discards every task not yet run;
    /// the stream is then empty and usable again. For error paths that must get a stream
    /// back from work that will never finish, without destroying it.
    ///
    /// Takes `&mut self`, so it does not compile while an event used on the stream, an
    /// async scope or a subscription holds it (as [`destroy_force`](Self::destroy_force),
    /// S8): no typed handle can wait for a discarded task. (A
    /// [`mem::forget`](std::mem::forget)-leaked event can: a stream that waits on it then
    /// waits forever, as after `destroy_force`.) The join events this stream
    /// waited on (E5) are never reused (their resets may be among the discarded tasks) and
    /// are released at the next device synchronisation or the context's end (E9).
    /// [`Error::Unsupported`](crate::Error::Unsupported) on runtimes before CANN 8.0.
    pub fn abort(&mut self) -> Result<()> {
        self.bind()?;
        // Before the call, as in `release_force`: a device synchronisation returning while
        // the abort runs must not find one of them reusable.
        self.join_target().orphan_all();
        // SAFETY: `self.raw` is live and its context current (bound above); the stream is
        // borrowed mutably, so no event, scope or subscription of the typed API holds it, and
        // nothing of it waits for a task of this stream (the argument of `release_force`).
        unsafe { self.ctx.api().stream_abort(self.raw)? };
        // The stream is empty: the resets issued on it either ran or were discarded, with
        // the events they were for (none is alive).
        self.resets.all_done();
        // The join that ordered this stream after another's resets may be among the
        // discarded tasks: the next record or wait here joins again (E5). No stream has id 0.
        self.joined.set((0, u64::MAX));
        Ok(())
    }

    fn release_force(&self) -> Result<()> {
        self.bind()?;
        // Join events this stream waited on first, before the destroy starts: their waits
        // and resets are about to be dropped (their flags may stay set: never reused), and
        // their records, on other streams, may still be pending, so they wait for a device
        // synchronisation or the context's end (E9), not for a stream that could reuse this
        // handle. (Marked after the call, a device synchronisation returning while the
        // destroy runs, which no longer waits for this stream, could keep one for reuse
        // with its flag set.) If the destroy fails, they are only released later.
        self.join_target().orphan_all();
        // SAFETY: `self.raw` is live and its context current (bound above); the value is
        // consumed, so this is the only destruction. Nothing of the typed API waits for a
        // task of this stream: events borrow the streams they were used on, so none is
        // alive (the borrow checker refuses the move otherwise), and each one's release
        // waited for its tasks (E9); buffers are used only inside async scopes, which borrow
        // the stream and synchronise it when they end (M1, M2); callbacks need a
        // `Subscribed`, which owns its stream. The dropped tasks can thus only be tasks the
        // typed API no longer depends on (S8).
        unsafe { self.ctx.api().destroy_stream_force(self.raw)? };
        self.ctx.orphan();
        Ok(())
    }

    /// `aclrtDestroyStreamForce` (S8): pending tasks are dropped, not waited for.
    /// On failure the error is returned and the destroy is forced again while the runtime
    /// fails it (never the waiting `Drop` fallback: this must not wait); a stream that still
    /// cannot be destroyed is kept, leaked and counted in its context (D3), and reported.
    /// [`try_destroy_force`](Self::try_destroy_force) gives it back instead.
    pub fn destroy_force(self) -> Result<()> {
        match self.try_destroy_force() {
            Ok(()) => Ok(()),
            Err(failed) => Err(crate::typed::handle::retry_or_keep(
                "Stream::destroy_force (forced again)",
                failed,
                Self::try_destroy_force,
            )),
        }
    }

    /// `aclrtDestroyStreamForce` (S8): destroys the stream without waiting for its tasks,
    /// which are dropped and never run. For error paths that must not hang on a stuck
    /// stream (a kernel that never ends). Consumes the stream, so it does not compile while
    /// an event used on it, an async scope or a subscription holds it: no typed handle can
    /// wait for a dropped task. (A [`mem::forget`](std::mem::forget)-leaked event can: a
    /// stream that waits on it then waits forever. Memory is never at risk: copies are
    /// confined to async scopes.) On failure, including
    /// [`Error::Unsupported`](crate::Error::Unsupported), the stream is given back.
    pub fn try_destroy_force(self) -> Result<(), Failed<Stream<'ctx>>> {
        Failed::release_or_give_back(self, Self::release_force)
    }
}

/// How [`Context::create_stream_with`] creates a stream (S6, S7): a priority, launch and
/// synchronisation flags, and the failure mode. The failure mode is set once, when the
/// stream is created, and never on the default stream (which the typed API has no handle
/// to): a [`Stream`] has no method to change it (S6).
///
/// ```no_run
/// # use ascend_typestate::{Acl, StreamConfig};
/// # let acl = Acl::init()?;
/// # let device = acl.set_device(0)?;
/// # let ctx = device.create_context()?;
/// let config = StreamConfig::new().priority(2).fast_launch().stop_on_failure();
/// let stream = ctx.create_stream_with(config)?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StreamConfig {
    priority: u8,
    flags: u32,
    stop_on_failure: bool,
}

impl StreamConfig {
    /// Priority 0, no flags, continue on failure: what `aclrtCreateStream` gives.
    pub const fn new() -> StreamConfig {
        StreamConfig {
            priority: 0,
            flags: 0,
            stop_on_failure: false,
        }
    }

    /// The stream's priority, 0 (the default) to 7 (S7; others are
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) at creation).
    pub const fn priority(mut self, priority: u8) -> StreamConfig {
        self.priority = priority;
        self
    }

    /// `ACL_STREAM_FAST_LAUNCH`: the runtime allocates the stream's task resources when it
    /// creates the stream, not on the first launches.
    pub const fn fast_launch(mut self) -> StreamConfig {
        self.flags |= crate::sys::bindings::ACL_STREAM_FAST_LAUNCH;
        self
    }

    /// `ACL_STREAM_FAST_SYNC`: synchronising the stream polls instead of sleeping (lower
    /// latency, a busy host core).
    pub const fn fast_sync(mut self) -> StreamConfig {
        self.flags |= crate::sys::bindings::ACL_STREAM_FAST_SYNC;
        self
    }

    /// `ACL_STOP_ON_FAILURE` (S6): the first task of the context that fails stops every
    /// stream of the context: its pending tasks are dropped, each stream's next
    /// synchronisation reports the failure, and later calls that issue tasks fail with
    /// [`AclError::RtStreamAbort`](crate::AclError::RtStreamAbort). Without it
    /// (`ACL_CONTINUE_ON_FAILURE`) the tasks after a failed one still run. A context with
    /// such a stream cannot subscribe streams for callbacks, nor the reverse
    /// ([`Error::InvalidArgument`](crate::Error::InvalidArgument)): a dropped callback
    /// would never run, and unsubscribing waits for every launched one.
    pub const fn stop_on_failure(mut self) -> StreamConfig {
        self.stop_on_failure = true;
        self
    }

    pub(crate) fn raw_priority(&self) -> u8 {
        self.priority
    }

    pub(crate) fn raw_flags(&self) -> u32 {
        self.flags
    }

    pub(crate) fn stops_on_failure(&self) -> bool {
        self.stop_on_failure
    }
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        // An asynchronous task's error is reported by one synchronisation, so the second try
        // tells a failed task (the stream is done: destroyed) from a stream that cannot be
        // synchronised or bound, e.g. inside a callback (C8): that one is leaked and
        // reported, never destroyed with work pending (S4).
        release_on_drop("Stream", || self.release());
        // Kept after a failed release: its joins go to the context (E9), which keeps them
        // until a device synchronisation.
        self.join_target().orphan_all();
    }
}

impl std::fmt::Debug for Stream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("raw", &self.raw).finish()
    }
}

/// Creating streams (D2, S6) and checking a stream's context (D6).
impl<'dev> Context<'dev> {
    /// `aclrtCreateStream` in this context: a [`Stream`] borrowing it.
    pub fn create_stream(&self) -> Result<Stream<'_>> {
        self.bind()?;
        // SAFETY: a new stream in this (bound) context, owned by the returned value (D3).
        let raw = unsafe { self.api().create_stream()? };
        // SAFETY: `raw` was just created in this context and is owned by the new value only.
        Ok(unsafe { Stream::from_raw(raw, self) })
    }

    /// A stream created as `config` says (S6, S7): `aclrtCreateStreamWithConfig`, then
    /// `aclrtSetStreamFailureMode` if it stops on failure. With the default configuration
    /// this is [`create_stream`](Self::create_stream) (and works on runtimes that lack the
    /// newer functions; others return [`Error::Unsupported`](crate::Error::Unsupported)).
    pub fn create_stream_with(&self, config: StreamConfig) -> Result<Stream<'_>> {
        if config.raw_priority() > 7 {
            return Err(crate::Error::InvalidArgument(
                "a stream priority is 0 to 7 (S7)",
            ));
        }
        if config == StreamConfig::new() {
            return self.create_stream();
        }
        if config.stops_on_failure() {
            self.claim(STOPS_ON_FAILURE)?;
        }
        self.bind()?;
        let (priority, flags) = (u32::from(config.raw_priority()), config.raw_flags());
        // SAFETY: a new stream in this (bound) context, owned by the returned value (D3).
        let raw = unsafe { self.api().create_stream_with_config(priority, flags)? };
        // SAFETY: `raw` was just created in this context and is owned by the new value only.
        let stream = unsafe { Stream::from_raw(raw, self) };
        if config.stops_on_failure() {
            // SAFETY: the stream is live, created just now with no task issued, and this is
            // its only failure-mode call (S6). On failure it is destroyed by its `Drop`.
            unsafe {
                self.api()
                    .set_stream_failure_mode(raw, u64::from(ACL_STOP_ON_FAILURE))?
            };
        }
        Ok(stream)
    }

    /// [`mismatch`](Self::mismatch) unless `stream` is of this context.
    #[inline(always)]
    pub(crate) fn check_stream(&self, stream: &Stream<'_>, what: &'static str) -> Result<()> {
        // Contexts cannot move while borrowed, so the same object means the same context.
        if std::ptr::addr_eq(self, stream.context()) {
            Ok(())
        } else {
            Err(self.mismatch(stream.context(), what))
        }
    }
}
