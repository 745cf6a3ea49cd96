//! Contexts, and how every call gets the right current context on its thread (D2, D6).
//!
//! About 600 lines: the per-thread binding, a context's lifecycle and its join-event
//! bookkeeping (E5, E9) change together, so they stay in one file.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};

use crate::result::current;
use crate::sys::bindings::ACL_EVENT_SYNC;
use crate::sys::bindings::{aclrtContext, aclrtEvent, aclrtStream};
use crate::sys::loader::Api;
use crate::typed::error::Result;
use crate::typed::handle::{
    Failed, may_release, refuse_inside_callback, release_on_drop, report_drop_error, retry_cleanup,
};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// [`Context::id_if_no_joins`] while join events wait: neither an id (they count up from 1)
/// nor a value of the current-context cache (0, [`current::INSIDE_CALLBACK`]).
const JOINS_WAITING: u64 = u64::MAX - 1;
static_assertions::const_assert!(JOINS_WAITING != 0 && JOINS_WAITING != current::INSIDE_CALLBACK);

/// [`Context::claim`]: a stream of the context was subscribed for callbacks (C1).
pub(crate) const USES_CALLBACKS: u8 = 1;
/// [`Context::claim`]: a stream of the context stops it on failure (S6).
pub(crate) const STOPS_ON_FAILURE: u8 = 2;

/// A join event to release once the stream that waited on it is synchronised (E9).
#[derive(Clone, Copy)]
struct Deferred {
    seq: u64,
    stream: aclrtStream,
    event: aclrtEvent,
    /// Its record, wait and reset were all issued: once its stream is synchronised it is
    /// back to a fresh event (flag clear, no task refers to it), and may join again.
    reusable: bool,
}

/// Join events waiting for a synchronisation, and those known to be done and kept for the
/// next joins (no create/destroy per join in a loop that synchronises now and then).
#[derive(Default)]
struct Joins {
    deferred: Vec<Deferred>,
    pool: Vec<aclrtEvent>,
}

/// The most done join events a context keeps for reuse; more are destroyed.
const JOIN_POOL: usize = 64;

/// Which deferred join events a synchronisation has shown to be done.
#[derive(Clone, Copy)]
pub(crate) enum Finished {
    /// Those waited on by this stream and issued before `before` (it was synchronised).
    Stream { stream: aclrtStream, before: u64 },
    /// Those issued before this sequence number (the device was synchronised).
    IssuedBefore(u64),
    /// All of them (every stream of the context is gone).
    All,
}

/// A context created by `aclrtCreateContext` (D2), on a [`Device`](crate::Device) it borrows.
///
/// # States
///
/// ```text
///  Device::create_context() ──► Live ──destroy()──► Destroyed (consumed)
///                                 │
///                                 ├─ create_stream() ──► Stream<'ctx> borrows it
///                                 └─ create_event()  ──► Event<'ctx, Created> borrows it
/// ```
///
/// [`Context::destroy`] takes `self`, so it does not compile while a stream or event
/// borrows the context (D3, E0505), and no stream can be used after its context is gone.
///
/// `Send + Sync`: a context may be used from several threads; each call binds it on the
/// calling thread (see the [type docs](Self)).
///
/// # The binding decision (D6)
///
/// The runtime keeps one current context per thread, and record, reset, wait,
/// launch-callback and destroy on a stream outside it fail (107003). This crate **binds on
/// each call**: every handle knows its [`Context`], and before a call that needs it the
/// context is made current on the calling thread, unless it already is. A thread-local
/// cache of the last context this crate made current turns that into one thread-local read
/// and a compare (no runtime call) in the common case, so the binding costs nothing
/// measurable while making the wrong-context error impossible, whichever thread a stream is
/// moved to.
///
/// A token type proving "this context is current" was the alternative. It would have to be
/// `!Send`, exclusive per thread, and passed to every call, for no run-time gain over the
/// cache; binding keeps call sites as short as the C API's.
///
/// The cache identifies contexts by a process-unique number, not by the raw pointer, so a
/// destroyed context whose address is reused is never mistaken for current. It can only go
/// stale through the raw [`result`](crate::result) layer (`set_current_context`, which is
/// `unsafe`); the runtime then answers 107003, a typed error.
pub struct Context<'dev> {
    raw: aclrtContext,
    id: u64,
    device: i32,
    api: &'static Api,
    /// Join events of multi-stream waits (E5), destroyed once the stream they were issued on
    /// has been synchronised (E9): `(stream, event)`.
    deferred: Mutex<Joins>,
    /// Live streams, events, buffers and report threads created in this context. Only a
    /// leak (`mem::forget`) can leave any at `destroy`; then the context is kept (D3).
    children: AtomicUsize,
    /// The device's count of live contexts: this one is in it until destroyed (D3). `None`
    /// for the device's default context, which is not destroyed but ends with the device's
    /// reset (D5), and which the device value itself holds.
    device_contexts: Option<&'dev AtomicUsize>,
    /// What the context's streams are used for that excludes the other (S6): 0 nothing yet,
    /// [`USES_CALLBACKS`] or [`STOPS_ON_FAILURE`]. Sticky for the context's life.
    exclusive_use: AtomicU8,
    /// The sequence number of the next deferred entry.
    deferred_seq: AtomicU64,
    /// This context's `id` while `deferred` is empty, else [`JOINS_WAITING`] (never a
    /// thread's current context): a synchronisation checks both its binding (D6) and that
    /// no join event waits (which would need the lock) in one compare.
    id_if_no_joins: AtomicU64,
    /// Covariant in `'dev`, as the borrow of the device it stands for.
    _device: PhantomData<&'dev ()>,
}

// SAFETY: the raw context is an opaque runtime handle; the runtime allows using a context from
// any thread after making it current there, which every call does (D6). The deferred list is
// behind a mutex.
unsafe impl Send for Context<'_> {}
// SAFETY: as above; shared references only issue runtime calls, which are thread-safe, and
// the binding cache is per thread.
unsafe impl Sync for Context<'_> {}

impl<'dev> Context<'dev> {
    pub(crate) fn create(
        api: &'static Api,
        device: i32,
        device_contexts: &'dev AtomicUsize,
    ) -> Result<Context<'dev>> {
        refuse_inside_callback()?;
        // SAFETY: a new context, released only by `Context::release` (D3); not inside a
        // callback (checked above, C8).
        let raw = unsafe { api.create_context(device)? };
        device_contexts.fetch_add(1, Ordering::Relaxed);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        // aclrtCreateContext made it current on this thread (D2).
        current::replace(id);
        Ok(Context::wrap(api, device, raw, id, Some(device_contexts)))
    }

    /// The default context `raw` of `device` (D1), held by a
    /// [`Device<DefaultContext>`](crate::Device): released, never destroyed (D5).
    pub(crate) fn default_of(api: &'static Api, device: i32, raw: aclrtContext) -> Context<'dev> {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Context::wrap(api, device, raw, id, None)
    }

    fn wrap(
        api: &'static Api,
        device: i32,
        raw: aclrtContext,
        id: u64,
        device_contexts: Option<&'dev AtomicUsize>,
    ) -> Context<'dev> {
        Context {
            raw,
            id,
            device,
            api,
            deferred: Mutex::new(Joins::default()),
            children: AtomicUsize::new(0),
            device_contexts,
            deferred_seq: AtomicU64::new(0),
            id_if_no_joins: AtomicU64::new(id),
            exclusive_use: AtomicU8::new(0),
            _device: PhantomData,
        }
    }

    /// Makes this context current on the calling thread if it is not already (D6).
    #[inline]
    pub(crate) fn bind(&self) -> Result<()> {
        if self.is_bound() {
            return Ok(());
        }
        self.bind_slow()
    }

    /// Whether this crate made this context current on the calling thread last (D6).
    #[inline(always)]
    pub(crate) fn is_bound(&self) -> bool {
        current::get() == self.id
    }

    #[cold]
    fn bind_slow(&self) -> Result<()> {
        if current::get() == current::INSIDE_CALLBACK {
            return Err(crate::Error::InsideCallback);
        }
        // SAFETY: `self.raw` is live: it is destroyed only by consuming `self`.
        unsafe { self.api.set_current_context(self.raw)? };
        current::replace(self.id);
        Ok(())
    }

    pub(crate) fn api(&self) -> &'static Api {
        self.api
    }

    /// The device this context belongs to.
    pub fn device_id(&self) -> i32 {
        self.device
    }

    /// The raw `aclrtContext`, for calls this crate does not wrap.
    pub fn as_raw(&self) -> aclrtContext {
        self.raw
    }

    /// The one diagnosis of a handle of context `found` used where this context is required
    /// (D6): [`Error::DeviceMismatch`](crate::Error::DeviceMismatch) when the devices
    /// differ, else [`Error::ContextMismatch`](crate::Error::ContextMismatch).
    #[cold]
    #[inline(never)]
    pub(crate) fn mismatch(&self, found: &Context<'_>, what: &'static str) -> crate::Error {
        if found.device_id() != self.device_id() {
            crate::Error::DeviceMismatch {
                what,
                expected: self.device_id(),
                found: found.device_id(),
            }
        } else {
            crate::Error::ContextMismatch { what }
        }
    }

    /// Claims the context for callbacks or for stop-on-failure streams, which exclude each
    /// other (S6): a stop drops the context's pending tasks, callbacks included, and a
    /// callback the runtime dropped never runs, so unsubscribing (which waits for every
    /// launched callback, C1) would wait forever. Use another context for the other.
    pub(crate) fn claim(&self, used_for: u8) -> Result<()> {
        match self
            .exclusive_use
            .compare_exchange(0, used_for, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Ok(()),
            Err(current) if current == used_for => Ok(()),
            Err(_) => Err(crate::Error::InvalidArgument(
                "one context cannot have both subscribed streams and stop-on-failure streams (S6, C1): use two contexts",
            )),
        }
    }

    /// Whether a stream of this context may stop on failure (S6), dropping tasks that then
    /// never run: a wait on one of them can end without it having run.
    #[inline]
    pub(crate) fn may_stop(&self) -> bool {
        self.exclusive_use.load(Ordering::Acquire) == STOPS_ON_FAILURE
    }

    /// `aclrtGetMemInfo(attr, &free, &total)` (D8): the free and total bytes of this
    /// context's device, for one kind of memory.
    pub fn memory_info(&self, kind: MemoryKind) -> Result<MemoryInfo> {
        self.bind()?;
        let (free, total) = self.api.get_mem_info(kind.raw())?;
        Ok(MemoryInfo { free, total })
    }

    /// `aclrtSynchronizeDevice` (D4): blocks until all work on this context's device is done.
    pub fn synchronize_device(&self) -> Result<()> {
        self.bind()?;
        // Only joins issued before the synchronisation started are known to be done: another
        // thread may issue more meanwhile (the context is `Sync`).
        let before = self.deferred_seq.load(Ordering::Acquire);
        // SAFETY: bound above, so not inside a callback (C8); it waits, changing nothing.
        unsafe { self.api.synchronize_device()? };
        self.destroy_deferred(Finished::IssuedBefore(before));
        Ok(())
    }

    /// `aclrtSynchronizeDeviceWithTimeout` (D4): [`Error::Unsupported`](crate::Error::Unsupported)
    /// on runtimes that lack it.
    pub fn synchronize_device_with(&self, timeout: crate::Timeout) -> Result<()> {
        self.bind()?;
        let before = self.deferred_seq.load(Ordering::Acquire);
        // SAFETY: as in `synchronize_device`; `Timeout` holds only -1 or > 0.
        unsafe { self.api.synchronize_device_with_timeout(timeout.as_raw())? };
        self.destroy_deferred(Finished::IssuedBefore(before));
        Ok(())
    }

    /// Orders `to` after the tasks issued on `from` so far, with a fresh join event: recorded
    /// on `from`, waited on and reset by `to` (its only waiter, so the reset cannot overtake
    /// another wait, E5), destroyed once `to` is synchronised (E9). Both streams must be in
    /// this context, which the caller has bound (D6).
    pub(crate) fn join_streams(&self, from: aclrtStream, to: aclrtStream) -> Result<()> {
        if from == to {
            return Ok(());
        }
        let api = self.api;
        let join = match self.pooled_join() {
            Some(join) => join,
            None => match self.reclaim_joins_of(to)? {
                Some(join) => join,
                // SAFETY: a crate-private event in the bound context, released through the
                // deferred list below (E9).
                None => unsafe { api.create_event_with_flag(ACL_EVENT_SYNC)? },
            },
        };
        // SAFETY: `join` is fresh, or pooled (a join whose record, wait and reset have all
        // run: its flag is clear and no task refers to it); both streams are live (the
        // caller borrows them) and in the current context; `join` is recorded before it is
        // waited on (E1) and reset right after the wait on its only waiting stream (E4); it is
        // recorded again only once all that has run (pooled).
        let recorded = unsafe { api.record_event(join, from) };
        if let Err(error) = recorded {
            // Nothing refers to it: destroyed once `to` is synchronised, like the others.
            self.defer_destroy(to, join, false);
            return Err(error.into());
        }
        // SAFETY: as above.
        if let Err(error) = unsafe { api.stream_wait_event(to, join) } {
            // Only the record, on `from`, refers to it: destroyed once `from` is
            // synchronised (E9). Its flag stays set: never reused.
            self.defer_destroy(from, join, false);
            return Err(error.into());
        }
        // SAFETY: as above. A failed reset issued nothing: it is tried again while the
        // runtime fails it (E4), each error reported.
        let reset = retry_cleanup("join event (a reset tried again)", || unsafe {
            api.reset_event(join, to)
        })
        .or_else(|failed| {
            report_drop_error("join event (a reset that kept failing)", Err(failed));
            // Once `to` has passed its wait, the reset can be issued after it alone.
            // SAFETY: as above; `to` is live (borrowed by the caller).
            retry_cleanup("join event (its stream's synchronisation)", || unsafe {
                api.synchronize_stream(to)
            })
            .and_then(|()| {
                // SAFETY: as above.
                retry_cleanup("join event (a reset issued alone)", || unsafe {
                    api.reset_event(join, to)
                })
            })
        });
        match reset {
            // Once `to` has passed its wait the record is done too: destroyed (or reused)
            // once `to` is synchronised (E9).
            Ok(()) => {
                self.defer_destroy(to, join, true);
                Ok(())
            }
            // After a stop (S6) no reset can ever be issued, and the runtime allows the
            // destroy: destroyed once `to` is synchronised (E9), never reused.
            Err(error) if error.is_stop() => {
                self.defer_destroy(to, join, false);
                Err(error)
            }
            Err(error) => {
                // Waited and never reset: never destroyed (E4), nor reused. Kept, counted
                // as a live handle of the context, which is then not released over it (D3).
                self.adopt();
                Err(error)
            }
        }
    }

    /// A join event known to be done, kept for reuse.
    #[inline]
    fn pooled_join(&self) -> Option<aclrtEvent> {
        let mut joins = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
        joins.pool.pop()
    }

    /// No join event is free: if `JOIN_POOL` of them already wait for `to` to be
    /// synchronised, synchronise it here (they are then done and kept for reuse, E9) and take
    /// one, rather than create another. So a loop that never synchronises the stream that
    /// waits on its joins keeps at most `JOIN_POOL` of them alive, and creates none once it
    /// has that many: the crate synchronises that stream once every `JOIN_POOL` joins. An
    /// error of one of its tasks is returned (it is not lost: the caller's call fails with it).
    #[cold]
    #[inline(never)]
    fn reclaim_joins_of(&self, to: aclrtStream) -> Result<Option<aclrtEvent>> {
        let waiting = {
            let joins = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
            joins.deferred.iter().filter(|e| e.stream == to).count()
        };
        if waiting < JOIN_POOL {
            return Ok(None);
        }
        let before = self.deferred_seq.load(Ordering::Acquire);
        // SAFETY: `to` is live (the caller borrows its stream) and in the bound context.
        unsafe { self.api.synchronize_stream(to)? };
        self.destroy_deferred(Finished::Stream { stream: to, before });
        Ok(self.pooled_join())
    }

    /// The join events `stream` waited on no longer wait for its synchronisation (it was
    /// destroyed without one, S8): a device synchronisation or the context's end destroys
    /// them.
    pub(crate) fn orphan_deferred_of(&self, stream: aclrtStream) {
        if !self.has_deferred() {
            return;
        }
        let mut joins = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
        for entry in joins.deferred.iter_mut().filter(|e| e.stream == stream) {
            entry.stream = std::ptr::null_mut();
            // Its tasks may have been dropped unrun (S8): its flag is unknown.
            entry.reusable = false;
        }
    }

    pub(crate) fn defer_destroy(&self, stream: aclrtStream, event: aclrtEvent, reusable: bool) {
        let mut joins = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
        if joins.deferred.capacity() == 0 {
            // Once, with the first join: the lists then never grow in a loop's steady state
            // (at most `JOIN_POOL` wait for one stream before it is synchronised).
            joins.deferred.reserve(JOIN_POOL);
            joins.pool.reserve(JOIN_POOL);
        }
        let seq = self.deferred_seq.fetch_add(1, Ordering::AcqRel);
        joins.deferred.push(Deferred {
            seq,
            stream,
            event,
            reusable,
        });
        self.set_deferred_len(joins.deferred.len());
    }

    /// Keeps [`id_if_no_joins`](Self::id_if_no_joins) in step with `deferred`'s length;
    /// called with the lock of `deferred` held.
    fn set_deferred_len(&self, len: usize) {
        let value = if len == 0 { self.id } else { JOINS_WAITING };
        self.id_if_no_joins.store(value, Ordering::Release);
    }

    /// Destroys the deferred events whose tasks the caller has just seen complete.
    #[inline]
    pub(crate) fn destroy_deferred(&self, finished: Finished) {
        if self.has_deferred() {
            self.destroy_deferred_slow(finished);
        }
    }

    /// Whether a join event is waiting to be destroyed or pooled (E9).
    #[inline(always)]
    pub(crate) fn has_deferred(&self) -> bool {
        self.id_if_no_joins.load(Ordering::Acquire) != self.id
    }

    /// Bound on this thread (D6) with no join event waiting (E9): the usual stream
    /// synchronisation's one test.
    #[inline(always)]
    pub(crate) fn is_bound_without_joins(&self) -> bool {
        current::get() == self.id_if_no_joins.load(Ordering::Acquire)
    }

    /// The sequence number the next join event will get if any join event is waiting (so
    /// that one of them may be done by a synchronisation starting now), else 0 (which no
    /// join event precedes).
    #[inline(always)]
    pub(crate) fn deferred_seq_if_any(&self) -> u64 {
        if self.has_deferred() {
            // At least one entry was pushed, so this is at least 1.
            self.deferred_seq.load(Ordering::Acquire)
        } else {
            0
        }
    }

    /// [`destroy_deferred`](Self::destroy_deferred) of `Finished::Stream`, given
    /// [`deferred_seq_if_any`](Self::deferred_seq_if_any) at the start of the synchronisation:
    /// one test when no join was waiting then.
    #[inline(always)]
    pub(crate) fn destroy_deferred_of(&self, stream: aclrtStream, before: u64) {
        if before != 0 {
            self.destroy_deferred_of_slow(stream, before);
        }
    }

    #[cold]
    #[inline(never)]
    fn destroy_deferred_of_slow(&self, stream: aclrtStream, before: u64) {
        self.destroy_deferred_slow(Finished::Stream { stream, before });
    }

    #[cold]
    fn destroy_deferred_slow(&self, finished: Finished) {
        report_drop_error("join event", self.try_destroy_deferred(finished));
    }

    /// Destroys the deferred events `finished` covers; one whose destruction fails is kept
    /// for the next try (E9: its tasks are done, so any later time is right). Returns the
    /// first error; the others are reported.
    fn try_destroy_deferred(&self, finished: Finished) -> Result<()> {
        let done: Vec<Deferred> = {
            let mut joins = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
            let Joins { deferred, pool } = &mut *joins;
            // Allocated only for events that must be destroyed (not pooled): none in the
            // steady state of a loop.
            let mut done = Vec::new();
            deferred.retain(|entry| {
                let is_done = match finished {
                    Finished::Stream { stream, before } => {
                        entry.stream == stream && entry.seq < before
                    }
                    Finished::IssuedBefore(seq) => entry.seq < seq,
                    Finished::All => true,
                };
                if is_done {
                    let keep = entry.reusable
                        && !matches!(finished, Finished::All)
                        && pool.len() < JOIN_POOL;
                    if keep {
                        // Every task using it has run (E9): a fresh event again.
                        pool.push(entry.event);
                    } else {
                        done.push(*entry);
                    }
                }
                !is_done
            });
            if matches!(finished, Finished::All) {
                // The context ends: the kept ones go too.
                done.extend(pool.drain(..).map(|event| Deferred {
                    seq: 0,
                    stream: std::ptr::null_mut(),
                    event,
                    reusable: true,
                }));
            }
            self.set_deferred_len(deferred.len());
            done
        };
        let mut errors = Vec::new();
        for entry in done {
            // SAFETY: the event was created by this crate, is referenced by no handle, and
            // every task using it was on a stream that has just been synchronised (E9).
            if let Err(error) = unsafe { self.api.destroy_event(entry.event) } {
                // Still alive: kept, and destroyed by a later synchronisation, or before the
                // context (which is not destroyed over it, D3).
                let mut joins = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
                joins.deferred.push(entry);
                self.set_deferred_len(joins.deferred.len());
                errors.push(error);
            }
        }
        // Reported with no lock held: the handler may call into the crate.
        let mut errors = errors.into_iter();
        let first = errors.next();
        for error in errors {
            report_drop_error("join event", Err(error));
        }
        first.map_or(Ok(()), |e| Err(e.into()))
    }

    /// A stream, event, buffer or report thread was created in this context.
    #[inline]
    pub(crate) fn adopt(&self) {
        self.children.fetch_add(1, Ordering::Relaxed);
    }

    /// One created with [`adopt`](Self::adopt) was released.
    #[inline]
    pub(crate) fn orphan(&self) {
        self.children.fetch_sub(1, Ordering::Release);
    }

    fn release(&self) -> Result<()> {
        may_release(self.children.load(Ordering::Acquire))?;
        // Every stream borrowing this context is gone, so their tasks are done. A join event
        // that cannot be destroyed keeps the context (D3).
        self.try_destroy_deferred(Finished::All)?;
        let Some(device_contexts) = self.device_contexts else {
            // The default context: nothing of this crate is left in it; the device's reset
            // ends it (D5: destroying it is an error).
            return Ok(());
        };
        // SAFETY: `self.raw` is live and this is its only destruction (the value is consumed).
        let result = unsafe { self.api.destroy_context(self.raw) };
        current::forget();
        if result.is_ok() {
            device_contexts.fetch_sub(1, Ordering::Release);
        }
        Ok(result?)
    }

    /// Releases the default context held by a device (see [`Context::default_of`]), or
    /// reports why it cannot be: a leaked handle still in it.
    pub(crate) fn release_default(&self) -> Result<()> {
        debug_assert!(self.device_contexts.is_none());
        self.release()
    }

    /// Consumes a released context without running its `Drop`, freeing its (empty) list.
    pub(crate) fn forget_released(self) {
        let mut this = ManuallyDrop::new(self);
        drop(std::mem::take(
            this.deferred.get_mut().unwrap_or_else(|p| p.into_inner()),
        ));
    }

    /// `aclrtDestroyContext` (D3). Consumes the context: does not compile while a stream or
    /// event borrows it.
    /// On failure the error is returned and the context goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_destroy`](Self::try_destroy) gives it back instead, for a caller who wants to retry.
    pub fn destroy(self) -> Result<()> {
        self.try_destroy().map_err(Failed::into_release_error)
    }

    /// `aclrtDestroyContext` (D3). Consumes the context: does not compile while a stream or
    /// event borrows it. On failure the context is given back; if a handle created in it was
    /// leaked (`mem::forget`), that failure is [`Error::LiveChildren`](crate::Error::LiveChildren)
    /// and the context is never destroyed under it (its `Drop` keeps it too, and reports).
    #[expect(
        clippy::result_large_err,
        reason = "a context is destroyed once, off any hot path; giving it back is the point"
    )]
    pub fn try_destroy(self) -> Result<(), Failed<Context<'dev>>> {
        // (A default context is never owned outside its device, so never destroyed here;
        // `release` would not call `aclrtDestroyContext` on it anyway, D5.)
        match self.release() {
            Ok(()) => {
                self.forget_released();
                Ok(())
            }
            Err(e) => Err(Failed::new(e, self)),
        }
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        release_on_drop("Context", || self.release());
    }
}

/// Which memory [`Context::memory_info`] reports (`aclrtMemAttr`). Atlas 200/500 A2 boards
/// have DDR; HBM is on training cards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryKind {
    /// `ACL_DDR_MEM`: all DDR memory.
    Ddr,
    /// `ACL_DDR_MEM_HUGE`: DDR in huge pages.
    DdrHuge,
    /// `ACL_DDR_MEM_NORMAL`: DDR in normal pages.
    DdrNormal,
    /// `ACL_HBM_MEM`: all HBM memory.
    Hbm,
    /// `ACL_HBM_MEM_HUGE`: HBM in huge pages.
    HbmHuge,
    /// `ACL_HBM_MEM_NORMAL`: HBM in normal pages.
    HbmNormal,
}

impl MemoryKind {
    fn raw(self) -> crate::sys::bindings::aclrtMemAttr {
        use crate::sys::bindings as b;
        match self {
            MemoryKind::Ddr => b::ACL_DDR_MEM,
            MemoryKind::DdrHuge => b::ACL_DDR_MEM_HUGE,
            MemoryKind::DdrNormal => b::ACL_DDR_MEM_NORMAL,
            MemoryKind::Hbm => b::ACL_HBM_MEM,
            MemoryKind::HbmHuge => b::ACL_HBM_MEM_HUGE,
            MemoryKind::HbmNormal => b::ACL_HBM_MEM_NORMAL,
        }
    }
}

/// Free and total bytes of one kind of device memory ([`Context::memory_info`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemoryInfo {
    /// Bytes not allocated.
    pub free: usize,
    /// Bytes in all.
    pub total: usize,
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("raw", &self.raw)
            .field("device", &self.device)
            .finish()
    }
}
