//! What a context's streams share about their join events (E5, E9), across threads: the
//! join sequence numbers and the watermark of device synchronisations
//! ([`JoinState::device_synced_before`]), and the join events parked until a
//! synchronisation shows them done ([`Parked`]). Also the seams the join code runs through
//! ([`JoinHost`], [`JoinCalls`]), so that the loom models (`src/typed/loom/joins.rs`) run
//! [`JoinTarget`](crate::typed::join::JoinTarget) and this state on a model of the device.

use crate::result::CallError;
use crate::sys::bindings::{aclrtEvent, aclrtStream};
use crate::sys::loader::Api;
use crate::sys::sync::{AtomicBool, AtomicU8, AtomicU64, Mutex, Ordering};
use crate::typed::error::Result;
use crate::typed::handle::report_drop_error;

/// A join event kept until a synchronisation shows it done (E9): one whose waiting stream was
/// destroyed without a synchronisation (S8), aborted (S11) or kept after a failed release,
/// one referred to only by a record on another stream (a failed wait), or one whose
/// destruction failed. Off the hot path: joins live in their waiting stream's list
/// ([`StreamJoins`](crate::typed::join::StreamJoins)).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Parked {
    /// 0 when known done; else from [`JoinState::next_seq`].
    seq: u64,
    event: aclrtEvent,
}

impl Parked {
    /// Its tasks were issued before `seq`'s join number was taken: a device
    /// synchronisation finishes it.
    pub(crate) fn issued(seq: u64, event: aclrtEvent) -> Parked {
        Parked { seq, event }
    }

    /// Every task using it is done: only its destruction is left.
    pub(crate) fn done(event: aclrtEvent) -> Parked {
        Parked { seq: 0, event }
    }
}

/// Which parked join events a synchronisation has shown to be done.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Finished {
    /// Those known done only (any time will do).
    Done,
    /// Those issued before this sequence number (the device was synchronised).
    IssuedBefore(u64),
    /// All of them (every stream of the context is gone).
    All,
}

/// The join state of one context.
#[derive(Debug)]
pub(crate) struct JoinState {
    /// The number of the next join event (from 1; 0 marks a done [`Parked`] entry).
    join_seq: AtomicU64,
    /// Every join numbered below this is done: a device synchronisation that began after it
    /// was issued has returned. Streams reuse their joins below it without a lock.
    device_synced_before: AtomicU64,
    /// Join events kept off their streams' lists ([`Parked`]); the hot path never locks it.
    parked: Mutex<Vec<Parked>>,
    /// Whether `parked` is not empty: a device synchronisation looks at it only then.
    any_parked: AtomicBool,
}

impl JoinState {
    pub(crate) fn new() -> JoinState {
        JoinState {
            join_seq: AtomicU64::new(1),
            device_synced_before: AtomicU64::new(0),
            parked: Mutex::new(Vec::new()),
            any_parked: AtomicBool::new(false),
        }
    }

    /// The number of a join event whose tasks were all issued before this call.
    #[inline]
    pub(crate) fn next_seq(&self) -> u64 {
        self.join_seq.fetch_add(1, Ordering::AcqRel)
    }

    /// Every join numbered below this is done (a device synchronisation covered it).
    #[inline]
    pub(crate) fn device_synced_before(&self) -> u64 {
        self.device_synced_before.load(Ordering::Acquire)
    }

    /// A device synchronisation: `synchronize` (`aclrtSynchronizeDevice`) proves done the
    /// joins issued before it began, and only those: another thread may issue more meanwhile
    /// (the context is `Sync`). On success the watermark moves up to them, and the parked
    /// ones among them are destroyed with `destroy`.
    pub(crate) fn synchronize_device(
        &self,
        synchronize: impl FnOnce() -> Result<(), CallError>,
        destroy: impl Fn(aclrtEvent) -> Result<(), CallError>,
    ) -> Result<()> {
        let before = self.join_seq.load(Ordering::Acquire);
        synchronize()?;
        self.device_synced_before
            .fetch_max(before, Ordering::AcqRel);
        self.destroy_parked(Finished::IssuedBefore(before), destroy);
        Ok(())
    }

    /// Keeps a join event until a synchronisation shows it done ([`Parked`]).
    #[cold]
    pub(crate) fn park(&self, entry: Parked) {
        let mut parked = self.parked.lock().unwrap_or_else(|p| p.into_inner());
        parked.push(entry);
        self.any_parked.store(true, Ordering::Release);
    }

    /// Destroys the parked events `finished` covers, reporting a failure.
    #[inline]
    pub(crate) fn destroy_parked(
        &self,
        finished: Finished,
        destroy: impl Fn(aclrtEvent) -> Result<(), CallError>,
    ) {
        if self.any_parked.load(Ordering::Acquire) {
            self.destroy_parked_slow(finished, destroy);
        }
    }

    #[cold]
    fn destroy_parked_slow(
        &self,
        finished: Finished,
        destroy: impl Fn(aclrtEvent) -> Result<(), CallError>,
    ) {
        report_drop_error("join event", self.try_destroy_parked(finished, destroy));
    }

    /// Destroys the parked events `finished` covers; one whose destruction fails is kept
    /// for the next try (E9: its tasks are done, so any later time is right). Returns the
    /// first error; the others are reported.
    pub(crate) fn try_destroy_parked(
        &self,
        finished: Finished,
        destroy: impl Fn(aclrtEvent) -> Result<(), CallError>,
    ) -> Result<()> {
        let done: Vec<Parked> = {
            let mut parked = self.parked.lock().unwrap_or_else(|p| p.into_inner());
            let mut done = Vec::new();
            parked.retain(|entry| {
                let is_done = entry.seq == 0
                    || match finished {
                        Finished::Done => false,
                        Finished::IssuedBefore(seq) => entry.seq < seq,
                        Finished::All => true,
                    };
                if is_done {
                    done.push(*entry);
                }
                !is_done
            });
            self.any_parked.store(!parked.is_empty(), Ordering::Release);
            done
        };
        let mut errors = Vec::new();
        for entry in done {
            if let Err(error) = destroy(entry.event) {
                // Still alive: kept, and destroyed by a later synchronisation, or before the
                // context (which is not destroyed over it, D3).
                self.park(Parked::done(entry.event));
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

    /// Frees the (empty) list of a released context.
    pub(crate) fn forget_released(&mut self) {
        drop(std::mem::take(
            self.parked.get_mut().unwrap_or_else(|p| p.into_inner()),
        ));
    }
}

/// A stream's event resets (E5): those issued, and those a completed synchronisation
/// covered. Read from whichever thread an event (which is `Send`) is used on.
#[derive(Debug)]
pub(crate) struct ResetCounts {
    /// Event resets issued on the stream. 64 bits: it never wraps (2^64 resets), so no count
    /// is ever mistaken for a synchronised one.
    issued: AtomicU64,
    /// `issued` as it was when a synchronisation that has since completed began: the resets
    /// up to there are done. Pending iff the two differ (a counter rather than a flag, so
    /// that a synchronisation racing with a new reset on another thread cannot hide it).
    synced: AtomicU64,
}

impl ResetCounts {
    pub(crate) fn new() -> ResetCounts {
        ResetCounts {
            issued: AtomicU64::new(0),
            synced: AtomicU64::new(0),
        }
    }

    /// A reset was issued. Called once the reset is issued, never before: a synchronisation
    /// (on any thread) whose snapshot includes the mark then began after the reset was
    /// queued, so it covers it; one that began earlier stores an older count, which leaves
    /// the reset pending. (Marking before the call let a synchronisation that started
    /// between the mark and the call count a reset it never waited for: E5, E9.)
    #[inline(always)]
    pub(crate) fn mark(&self) {
        self.issued.fetch_add(1, Ordering::AcqRel);
    }

    /// The resets issued so far.
    #[inline(always)]
    pub(crate) fn issued(&self) -> u64 {
        self.issued.load(Ordering::Acquire)
    }

    /// Whether a reset issued may not be done yet.
    #[inline(always)]
    pub(crate) fn pending(&self) -> bool {
        self.issued.load(Ordering::Acquire) != self.synced.load(Ordering::Acquire)
    }

    /// A stream synchronisation that began when [`issued`](Self::issued) was `resets` has
    /// returned: those resets are done. (Read before the call, stored after it: a
    /// synchronisation racing with a reset on another thread then stores an older count,
    /// which leaves the reset pending, never the reverse.)
    #[inline(always)]
    pub(crate) fn synchronized(&self, resets: u64) {
        self.synced.store(resets, Ordering::Release);
    }

    /// Every reset issued so far is done or discarded (an abort emptied the stream).
    pub(crate) fn all_done(&self) {
        self.synced
            .store(self.issued.load(Ordering::Acquire), Ordering::Release);
    }
}

/// [`ExclusiveUse::claim`]: a stream of the context was subscribed for callbacks (C1).
pub(crate) const USES_CALLBACKS: u8 = 1;
/// [`ExclusiveUse::claim`]: a stream of the context stops it on failure (S6).
pub(crate) const STOPS_ON_FAILURE: u8 = 2;

/// What a context's streams are used for that excludes the other (S6): nothing yet,
/// [`USES_CALLBACKS`] or [`STOPS_ON_FAILURE`]. Sticky for the context's life.
#[derive(Debug)]
pub(crate) struct ExclusiveUse(AtomicU8);

impl ExclusiveUse {
    pub(crate) fn new() -> ExclusiveUse {
        ExclusiveUse(AtomicU8::new(0))
    }

    /// Claims the context for `used_for`; `false` if it is claimed for the other use.
    pub(crate) fn claim(&self, used_for: u8) -> bool {
        match self
            .0
            .compare_exchange(0, used_for, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(current) => current == used_for,
        }
    }

    /// Whether the context is claimed for `use`.
    #[inline]
    pub(crate) fn is(&self, used_for: u8) -> bool {
        self.0.load(Ordering::Acquire) == used_for
    }
}

/// The runtime calls join events make (`Api`'s, or a model's under loom).
pub(crate) trait JoinCalls {
    /// `aclrtCreateEventWithFlag`.
    ///
    /// # Safety
    /// As [`Api::create_event_with_flag`].
    unsafe fn create_event_with_flag(&self, flags: u32) -> Result<aclrtEvent, CallError>;
    /// `aclrtDestroyEvent`.
    ///
    /// # Safety
    /// As [`Api::destroy_event`].
    unsafe fn destroy_event(&self, event: aclrtEvent) -> Result<(), CallError>;
    /// `aclrtRecordEvent`.
    ///
    /// # Safety
    /// As [`Api::record_event`].
    unsafe fn record_event(&self, event: aclrtEvent, stream: aclrtStream) -> Result<(), CallError>;
    /// `aclrtResetEvent`.
    ///
    /// # Safety
    /// As [`Api::reset_event`].
    unsafe fn reset_event(&self, event: aclrtEvent, stream: aclrtStream) -> Result<(), CallError>;
    /// `aclrtStreamWaitEvent`.
    ///
    /// # Safety
    /// As [`Api::stream_wait_event`].
    unsafe fn stream_wait_event(
        &self,
        stream: aclrtStream,
        event: aclrtEvent,
    ) -> Result<(), CallError>;
    /// `aclrtSynchronizeStream`.
    ///
    /// # Safety
    /// As [`Api::synchronize_stream`].
    unsafe fn synchronize_stream(&self, stream: aclrtStream) -> Result<(), CallError>;
    /// `aclrtStreamQuery`.
    ///
    /// # Safety
    /// As [`Api::stream_query`].
    unsafe fn stream_query(&self, stream: aclrtStream) -> Result<bool, CallError>;
}

impl JoinCalls for Api {
    #[inline(always)]
    unsafe fn create_event_with_flag(&self, flags: u32) -> Result<aclrtEvent, CallError> {
        // SAFETY: the caller's contract.
        unsafe { Api::create_event_with_flag(self, flags) }
    }

    #[inline(always)]
    unsafe fn destroy_event(&self, event: aclrtEvent) -> Result<(), CallError> {
        // SAFETY: the caller's contract.
        unsafe { Api::destroy_event(self, event) }
    }

    #[inline(always)]
    unsafe fn record_event(&self, event: aclrtEvent, stream: aclrtStream) -> Result<(), CallError> {
        // SAFETY: the caller's contract.
        unsafe { Api::record_event(self, event, stream) }
    }

    #[inline(always)]
    unsafe fn reset_event(&self, event: aclrtEvent, stream: aclrtStream) -> Result<(), CallError> {
        // SAFETY: the caller's contract.
        unsafe { Api::reset_event(self, event, stream) }
    }

    #[inline(always)]
    unsafe fn stream_wait_event(
        &self,
        stream: aclrtStream,
        event: aclrtEvent,
    ) -> Result<(), CallError> {
        // SAFETY: the caller's contract.
        unsafe { Api::stream_wait_event(self, stream, event) }
    }

    #[inline(always)]
    unsafe fn synchronize_stream(&self, stream: aclrtStream) -> Result<(), CallError> {
        // SAFETY: the caller's contract.
        unsafe { Api::synchronize_stream(self, stream) }
    }

    #[inline(always)]
    unsafe fn stream_query(&self, stream: aclrtStream) -> Result<bool, CallError> {
        // SAFETY: the caller's contract.
        unsafe { Api::stream_query(self, stream) }
    }
}

/// What a stream's joins need of their context: its id and settings, its
/// [`JoinState`], its count of live handles, and its runtime calls.
pub(crate) trait JoinHost {
    /// The runtime calls.
    type Calls: JoinCalls;
    /// The runtime calls of this context.
    fn api(&self) -> &Self::Calls;
    /// The context's process-unique id (D6).
    fn id(&self) -> u64;
    /// The most joins one stream may have waiting.
    fn join_capacity(&self) -> u32;
    /// Whether a stream of the context may stop on failure (S6).
    fn may_stop(&self) -> bool;
    /// Whether `error` says that the context was stopped (S6; `Context::stopped_by`).
    fn stopped_by(&self, error: &crate::Error) -> bool;
    /// The context's join state.
    fn join_state(&self) -> &JoinState;
    /// A handle the context must not be released over (D3).
    fn adopt(&self);

    /// [`JoinState::next_seq`].
    #[inline(always)]
    fn next_join_seq(&self) -> u64 {
        self.join_state().next_seq()
    }

    /// [`JoinState::device_synced_before`].
    #[inline(always)]
    fn device_synced_before(&self) -> u64 {
        self.join_state().device_synced_before()
    }

    /// [`JoinState::park`].
    #[inline(always)]
    fn park(&self, entry: Parked) {
        self.join_state().park(entry);
    }
}
