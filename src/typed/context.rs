//! Contexts, and how every call gets the right current context on its thread (D2, D6).
//!
//! About 600 lines: the per-thread binding, a context's lifecycle and its join-event
//! bookkeeping (E5, E9) change together, so they stay in one file.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::result::current;
use crate::sys::bindings::aclrtContext;
use crate::sys::loader::Api;
use crate::typed::error::Result;
use crate::typed::handle::{Failed, may_release, refuse_inside_callback, release_on_drop};
pub(crate) use crate::typed::join_state::Finished;
use crate::typed::join_state::{ExclusiveUse, JoinHost, JoinState};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) use crate::typed::join_state::{STOPS_ON_FAILURE, USES_CALLBACKS};

/// Join events a stream may have waiting for its synchronisation unless the context says
/// otherwise ([`Context::set_join_capacity`]).
pub const DEFAULT_JOIN_CAPACITY: u32 = 1024;

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
    /// Join numbers, the device synchronisations' watermark and the parked join events
    /// (E5, E9): what the context's streams share about their joins, across threads.
    joins: JoinState,
    /// Live streams, events, buffers and report threads created in this context. Only a
    /// leak (`mem::forget`) can leave any at `destroy`; then the context is kept (D3).
    children: AtomicUsize,
    /// The device's count of live contexts: this one is in it until destroyed (D3). `None`
    /// for the device's default context, which is not destroyed but ends with the device's
    /// reset (D5), and which the device value itself holds.
    device_contexts: Option<&'dev AtomicUsize>,
    /// What the context's streams are used for that excludes the other (S6): 0 nothing yet,
    /// [`USES_CALLBACKS`] or [`STOPS_ON_FAILURE`]. Sticky for the context's life.
    exclusive_use: ExclusiveUse,
    /// [`Error::JoinCapacity`](crate::Error::JoinCapacity) past this many joins waiting on
    /// one stream.
    join_capacity: AtomicU32,
    /// Covariant in `'dev`, as the borrow of the device it stands for.
    _device: PhantomData<&'dev ()>,
}

// SAFETY: the raw context is an opaque runtime handle; the runtime allows using a context from
// any thread after making it current there, which every call does (D6). The parked list is
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
            joins: JoinState::new(),
            children: AtomicUsize::new(0),
            device_contexts,
            join_capacity: AtomicU32::new(DEFAULT_JOIN_CAPACITY),
            exclusive_use: ExclusiveUse::new(),
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

    /// Unique in the process (never reused).
    #[inline(always)]
    pub(crate) fn id(&self) -> u64 {
        self.id
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
        if self.exclusive_use.claim(used_for) {
            return Ok(());
        }
        Err(crate::Error::InvalidArgument(
            "one context cannot have both subscribed streams and stop-on-failure streams (S6, C1): use two contexts",
        ))
    }

    /// Whether a stream of this context may stop on failure (S6), dropping tasks that then
    /// never run: a wait on one of them can end without it having run.
    #[inline]
    pub(crate) fn may_stop(&self) -> bool {
        self.exclusive_use.is(STOPS_ON_FAILURE)
    }

    /// Whether `error` says that this context was stopped (S6: 107023, after which no reset
    /// can be issued and the runtime lets a waited event be destroyed unreset, E4). Only a
    /// context that may stop can be: elsewhere the code is an ordinary failure (a waited
    /// event is then kept, never destroyed unreset).
    #[cold]
    pub(crate) fn stopped_by(&self, error: &crate::Error) -> bool {
        error.is_stop() && self.may_stop()
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
        self.joins.synchronize_device(
            // SAFETY: bound above, so not inside a callback (C8); it waits, changing nothing.
            || unsafe { self.api.synchronize_device() },
            |event| self.destroy_join(event),
        )
    }

    /// `aclrtSynchronizeDeviceWithTimeout` (D4): [`Error::Unsupported`](crate::Error::Unsupported)
    /// on runtimes that lack it.
    pub fn synchronize_device_with(&self, timeout: crate::Timeout) -> Result<()> {
        self.bind()?;
        self.joins.synchronize_device(
            // SAFETY: as in `synchronize_device`; `Timeout` holds only -1 or > 0.
            || unsafe { self.api.synchronize_device_with_timeout(timeout.as_raw()) },
            |event| self.destroy_join(event),
        )
    }

    /// Destroys a join event a synchronisation has shown done.
    fn destroy_join(&self, event: crate::sys::bindings::aclrtEvent) -> crate::result::Result<()> {
        // SAFETY: the event was created by this crate, is referenced by no handle, and
        // every task using it is done (a synchronisation covered it, E9).
        unsafe { self.api.destroy_event(event) }
    }

    /// The most join events one stream of this context may have waiting for its
    /// synchronisation ([`set_join_capacity`](Self::set_join_capacity)).
    pub fn join_capacity(&self) -> u32 {
        self.join_capacity.load(Ordering::Relaxed)
    }

    /// Sets how many join events one stream of this context may have waiting for its
    /// synchronisation (E5, E9; default [`DEFAULT_JOIN_CAPACITY`]). A join is the event the
    /// crate issues when a task must follow a reset or a write on another stream that has
    /// not been synchronised since; it is reused once the stream that waited on it (or the
    /// device) has been synchronised. A join past the capacity is
    /// [`Error::JoinCapacity`](crate::Error::JoinCapacity) (unless the stream is found
    /// idle), never a synchronisation the program did not ask for. `capacity` 0 is
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    pub fn set_join_capacity(&self, capacity: u32) -> Result<()> {
        if capacity == 0 {
            return Err(crate::Error::InvalidArgument(
                "a join capacity is at least 1 (E5)",
            ));
        }
        self.join_capacity.store(capacity, Ordering::Relaxed);
        Ok(())
    }

    /// Destroys the parked events `finished` covers.
    #[inline]
    pub(crate) fn destroy_parked(&self, finished: Finished) {
        self.joins
            .destroy_parked(finished, |event| self.destroy_join(event));
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
        self.joins
            .try_destroy_parked(Finished::All, |event| self.destroy_join(event))?;
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
        this.joins.forget_released();
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

impl JoinHost for Context<'_> {
    type Calls = Api;

    #[inline(always)]
    fn api(&self) -> &Api {
        self.api
    }

    #[inline(always)]
    fn id(&self) -> u64 {
        self.id
    }

    #[inline(always)]
    fn join_capacity(&self) -> u32 {
        Context::join_capacity(self)
    }

    #[inline(always)]
    fn may_stop(&self) -> bool {
        Context::may_stop(self)
    }

    #[inline(always)]
    fn stopped_by(&self, error: &crate::Error) -> bool {
        Context::stopped_by(self, error)
    }

    #[inline(always)]
    fn join_state(&self) -> &JoinState {
        &self.joins
    }

    #[inline(always)]
    fn adopt(&self) {
        Context::adopt(self);
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
