//! A stream subscribed to a report thread: the only place callbacks are launched (C1-C5,
//! C9), and the trampoline that runs them.

use super::{
    Any, Arc, AssertUnwindSafe, AtomicBool, AtomicUsize, CallbackMode, Deref, Duration, Error,
    Failed, ManuallyDrop, Ordering, ReportThread, Result, STRANDED_AFTER, Shared, Stream, c_void,
    catch_unwind, report_drop_error,
};

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;

use crate::sys::bindings::aclrtCallback;
use crate::typed::handle::retry_cleanup;

/// A stream subscribed to a [`ReportThread`] (C1 step 2): the only place
/// [`launch`](Subscribed::launch) exists (C5). Derefs to the [`Stream`] for every other use.
///
/// [`unsubscribe`](Subscribed::unsubscribe) gives the stream back after its tasks and
/// callbacks are done (C1 step 5, C9); `Drop` does the same as a fallback, then destroys
/// the stream.
///
/// `Send`, not `Sync`, like the [`Stream`] it holds.
pub struct Subscribed<'r, 's> {
    pub(super) stream: ManuallyDrop<Stream<'s>>,
    pub(super) report: &'r ReportThread<'r>,
    /// The callbacks in flight on this stream: their count and the slots small closures
    /// are stored in. Dropped only once every callback has run (a `Subscribed` whose
    /// release fails leaks it, since a callback may still run and use it).
    pub(super) flight: ManuallyDrop<Arc<Flight>>,
}

/// Bytes of closure a slot holds inline: a launch of a closure this small (six words:
/// e.g. an `Arc`, a sender and a few numbers) allocates nothing.
const SLOT_BYTES: usize = 48;
/// How many callbacks a subscription holds in flight unless told otherwise
/// ([`ReportThread::subscribe_with_capacity`]).
pub const DEFAULT_CALLBACK_CAPACITY: usize = 64;
/// The most callbacks in flight a subscription may be created for.
pub const MAX_CALLBACK_CAPACITY: usize = 65_536;

/// The callbacks in flight on one subscribed stream, allocated once at `subscribe`.
pub(super) struct Flight {
    /// Callbacks launched on this stream and not yet run.
    pub(super) pending: AtomicUsize,
    /// The report thread's state, kept alive as long as a callback may run.
    shared: Arc<Shared>,
    /// Where the search for a free slot starts (the last one taken, plus one).
    next: AtomicUsize,
    /// One per callback the subscription may hold in flight (its capacity).
    slots: Box<[Slot]>,
}

/// One closure in flight, stored inline. Exclusive to whoever set `busy`: the launching
/// thread until the runtime has the callback, then the callback's only run.
struct Slot {
    busy: AtomicBool,
    /// The closure, of the type the launch's `slot_trampoline::<F>` was made for.
    data: UnsafeCell<MaybeUninit<[usize; SLOT_BYTES / size_of::<usize>()]>>,
    /// The `Flight` holding this slot (set once, at creation).
    flight: *const Flight,
}

// SAFETY: `data` is only accessed by the holder of `busy` (set with a CAS), and
// `flight` is written once before the `Flight` is shared; the closures stored are `Send`.
unsafe impl Sync for Slot {}
// SAFETY: as above.
unsafe impl Send for Slot {}

impl Flight {
    /// `capacity` slots, 1 to [`MAX_CALLBACK_CAPACITY`] (checked by the caller).
    pub(super) fn new(shared: Arc<Shared>, capacity: usize) -> Arc<Flight> {
        Arc::new_cyclic(|me| Flight {
            pending: AtomicUsize::new(0),
            shared,
            next: AtomicUsize::new(0),
            slots: (0..capacity)
                .map(|_| Slot {
                    busy: AtomicBool::new(false),
                    data: UnsafeCell::new(MaybeUninit::uninit()),
                    flight: me.as_ptr(),
                })
                .collect(),
        })
    }

    /// How many callbacks it holds in flight at most.
    fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// A free slot, taken; `None` if every slot is in use (the subscription holds as many
    /// callbacks in flight as it can).
    #[inline(always)]
    fn take_slot(&self) -> Option<&Slot> {
        // The slot after the last one taken is usually free (callbacks run in launch order).
        let start = self.next.load(Ordering::Relaxed);
        if let Some(slot) = self.slots.get(start)
            && slot.take()
        {
            self.next.store(start + 1, Ordering::Relaxed);
            return Some(slot);
        }
        self.take_another_slot(start)
    }

    /// The search of [`take_slot`](Self::take_slot) past its first choice.
    #[cold]
    #[inline(never)]
    fn take_another_slot(&self, start: usize) -> Option<&Slot> {
        let len = self.slots.len();
        let index = (1..=len)
            .map(|i| (start + i) % len)
            .find(|&i| self.slots[i].take())?;
        self.next.store(index + 1, Ordering::Relaxed);
        Some(&self.slots[index])
    }
}

impl Slot {
    /// Takes the slot for this thread, if it is free.
    #[inline(always)]
    fn take(&self) -> bool {
        self.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
}

impl<'s> Deref for Subscribed<'_, 's> {
    type Target = Stream<'s>;
    fn deref(&self) -> &Stream<'s> {
        &self.stream
    }
}

/// A launch while every slot is in flight.
#[cold]
#[inline(never)]
fn full(capacity: usize) -> Error {
    Error::CallbackCapacity {
        capacity: u32::try_from(capacity).unwrap_or(u32::MAX),
    }
}

/// The closure boxed with its slot, as `user_data` for `trampoline`.
#[cold]
#[inline(never)]
fn boxed<F>(slot: &Slot, body: F) -> *mut c_void
where
    F: FnOnce() + Send + 'static,
{
    let payload = Box::new(Payload {
        body: Box::new(body),
        slot,
    });
    Box::into_raw(payload).cast()
}

/// One launched callback too large for a slot's storage: boxed, in a slot all the same (so
/// that the capacity counts it), freed by the only run of [`trampoline`].
struct Payload {
    body: Box<dyn FnOnce() + Send + 'static>,
    slot: *const Slot,
}

pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}

/// Runs `body` as a callback: marked for C8, its panic caught and kept (never unwinds
/// into C).
fn run_callback(shared: &Shared, body: impl FnOnce()) {
    // Marked for the body and for the report of its panic (which may reach the drop-error
    // handler): no call of the crate from either reaches the runtime (C8).
    let previous = crate::typed::handle::enter_callback();
    let outcome = catch_unwind(AssertUnwindSafe(body));
    if let Err(panic) = outcome {
        let message = panic_message(panic.as_ref());
        // Not dropped: a payload whose own `Drop` panics would unwind into C (abort).
        std::mem::forget(panic);
        // Never panics (here it would abort, in an `extern "C"` function).
        crate::typed::handle::diagnostic(format_args!("a host callback panicked: {message}"));
        shared.keep_panic(message);
    }
    crate::typed::handle::leave_callback(previous);
}

/// A callback has run: the counters, `pending` last, since its reaching zero lets the
/// `Flight` that holds it be dropped. Takes the counters, not the `Flight`: a reference
/// argument must stay valid until the function returns, which the `Flight` need not once
/// `pending` is decremented (an `AtomicUsize` alone, as `Arc::drop` does it). `shared` is
/// kept alive by the report thread's own `Arc` beyond that point too.
fn ran(shared: &Shared, pending: &AtomicUsize) {
    shared.enqueued.fetch_sub(1, Ordering::AcqRel);
    shared.outstanding.fetch_sub(1, Ordering::AcqRel);
    pending.fetch_sub(1, Ordering::AcqRel);
}

/// The C callback of a boxed closure: runs it once, then frees its slot.
unsafe extern "C" fn trampoline(user_data: *mut c_void) {
    if user_data.is_null() {
        return;
    }
    // SAFETY: `user_data` is the `Box<Payload>` leaked by `launch`, and the runtime calls each
    // callback exactly once (C1 step 4), so this is the only owner.
    let payload = unsafe { Box::from_raw(user_data.cast::<Payload>()) };
    let Payload { body, slot } = *payload;
    // SAFETY: the slot `launch` took for this callback, of a `Flight` kept alive until it
    // has run (`pending` counts it), held by this run.
    let slot = unsafe { &*slot };
    // SAFETY: the slot's own `Flight`, alive (above).
    let flight = unsafe { &*slot.flight };
    run_callback(&flight.shared, body);
    slot.busy.store(false, Ordering::Release);
    ran(&flight.shared, &flight.pending);
}

/// The C callback of a closure of type `F` stored in a slot: runs it once, then frees the
/// slot. One per closure type, so that the slot need not say which type it holds.
unsafe extern "C" fn slot_trampoline<F: FnOnce()>(user_data: *mut c_void) {
    if user_data.is_null() {
        return;
    }
    // SAFETY: `user_data` is a slot taken by `launch`, of a `Flight` kept alive until this
    // callback has run (`pending` counts it; a `Subscribed` leaks its `Flight` rather than
    // drop it while any is pending), and the runtime calls each callback exactly once (C1
    // step 4), so this run holds the slot.
    let slot = unsafe { &*user_data.cast::<Slot>() };
    let flight = slot.flight;
    // SAFETY: the slot's own `Flight`, alive (above).
    let flight = unsafe { &*flight };
    // SAFETY: this run holds the slot (above), and `launch` stored an initialised `F` in
    // it (this trampoline is the one made for `F`), moved out once, here.
    let body = unsafe { std::ptr::read(slot.data.get().cast::<F>()) };
    run_callback(&flight.shared, body);
    slot.busy.store(false, Ordering::Release);
    ran(&flight.shared, &flight.pending);
}

/// Whether a closure of type `F` is stored in its slot (else boxed).
const fn fits_inline<F>() -> bool {
    size_of::<F>() <= SLOT_BYTES && align_of::<F>() <= align_of::<usize>()
}

impl<'r, 's> Subscribed<'r, 's> {
    /// `aclrtLaunchCallback` (C1 step 4, C5): `body` runs once on the report thread when the
    /// stream reaches this point. `Blocking` holds the stream's later tasks until it has run.
    ///
    /// `body` receives nothing and must be `'static`: it has no handle to call the runtime
    /// with (C8).
    ///
    /// Each callback in flight holds one of the subscription's slots, allocated at
    /// `subscribe` ([`DEFAULT_CALLBACK_CAPACITY`], or the capacity given to
    /// [`ReportThread::subscribe_with_capacity`]); a launch while every slot is in flight is
    /// [`Error::CallbackCapacity`] (the closure is dropped, not run), never an allocation.
    /// A closure of at most six words (`size_of` ≤ 48 bytes, word-aligned: an `Arc`, a
    /// channel sender and a few numbers) is stored in its slot: such a launch allocates
    /// nothing, at any depth. A larger closure is boxed.
    #[inline(always)]
    pub fn launch<F>(&self, mode: CallbackMode, body: F) -> Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        let flight: &Flight = &self.flight;
        // The report thread's liveness, read through the flight (its `shared` is the
        // report thread's): one load fewer than through `self.report`.
        flight.shared.alive()?;
        self.stream.bind()?;
        let Some(slot) = flight.take_slot() else {
            return Err(full(flight.capacity()));
        };
        let (callback, user_data): (aclrtCallback, *mut c_void) = if fits_inline::<F>() {
            // SAFETY: this thread holds the slot (taken above); `F` fits its storage in
            // size and alignment (`fits_inline`).
            unsafe { slot.data.get().cast::<F>().write(body) };
            (
                Some(slot_trampoline::<F>),
                std::ptr::from_ref(slot).cast_mut().cast(),
            )
        } else {
            // Large closures, out of line: the launch a loop runs is the slot's.
            (Some(trampoline), boxed(slot, body))
        };
        flight.pending.fetch_add(1, Ordering::AcqRel);
        flight.shared.outstanding.fetch_add(1, Ordering::AcqRel);
        // SAFETY: the stream is live, subscribed and its context current; the trampoline
        // frees `user_data` (the slot, or the box and its slot) on its only run, and the
        // closure owns everything it needs ('static).
        let launched = unsafe {
            self.stream.context().api().launch_callback(
                callback,
                user_data,
                mode.raw(),
                self.stream.as_raw(),
            )
        };
        if let Err(e) = launched {
            // SAFETY: the runtime refused the callback: `user_data` is this launch's, still
            // holding the `F` written above, in `slot` or boxed (as `fits_inline` says).
            return Err(unsafe { self.not_launched::<F>(slot, user_data, e) });
        }
        flight.shared.enqueued.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// A launch the runtime refused: the counters first (the closure's captures may panic
    /// when dropped), then the closure taken back and the slot freed, so that the closure
    /// is neither lost nor run.
    ///
    /// # Safety
    /// `slot` is the slot `launch` took, and `user_data` what it made for an `F` and the
    /// runtime did not take: the slot itself holding it, or the box of `boxed`.
    #[cold]
    #[inline(never)]
    unsafe fn not_launched<F>(
        &self,
        slot: &Slot,
        user_data: *mut c_void,
        e: crate::result::CallError,
    ) -> Error
    where
        F: FnOnce() + Send + 'static,
    {
        let flight: &Flight = &self.flight;
        flight.pending.fetch_sub(1, Ordering::AcqRel);
        flight.shared.outstanding.fetch_sub(1, Ordering::AcqRel);
        if fits_inline::<F>() {
            // SAFETY: the caller's contract: the slot is still this thread's, and it holds
            // the initialised `F`, moved out once, here.
            let body = unsafe { std::ptr::read(slot.data.get().cast::<F>()) };
            // Freed before the closure is dropped: its drop may panic.
            slot.busy.store(false, Ordering::Release);
            drop(body);
        } else {
            // SAFETY: the caller's contract: the box is still ours alone.
            let payload = unsafe { Box::from_raw(user_data.cast::<Payload>()) };
            slot.busy.store(false, Ordering::Release);
            drop(payload);
        }
        e.into()
    }

    /// Callbacks launched on this stream that have not run yet.
    pub fn pending_callbacks(&self) -> usize {
        self.flight.pending.load(Ordering::Acquire)
    }

    fn release(&self) -> Result<()> {
        // C1 step 5: every callback run, then every task done, then unsubscribe (C9). The
        // callbacks first: a blocking one holds the stream, and if the report thread cannot
        // run it, waiting for the stream would never end.
        self.stream.bind()?;
        let shared = &self.report.shared;
        // Failures counted from here, and again after any call that did not fail: only a
        // thread failing for the whole of this wait gives up on it.
        let mut good = shared.good_calls.load(Ordering::Acquire);
        let mut failed = shared.failed_calls.load(Ordering::Acquire);
        while self.flight.pending.load(Ordering::Acquire) != 0 {
            self.report.alive()?;
            let good_now = shared.good_calls.load(Ordering::Acquire);
            let failed_now = shared.failed_calls.load(Ordering::Acquire);
            if good_now != good {
                (good, failed) = (good_now, failed_now);
            }
            let failures = failed_now.wrapping_sub(failed);
            if failures >= STRANDED_AFTER {
                return Err(Error::ReportThreadFailing {
                    failures,
                    pending: self.flight.pending.load(Ordering::Acquire),
                });
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        self.stream.synchronize()?;
        // SAFETY: the stream is live and its context current; it is subscribed to this thread.
        unsafe {
            self.stream
                .context()
                .api()
                .unsubscribe_report(self.report.thread_id, self.stream.as_raw())?
        };
        self.report
            .shared
            .subscriptions
            .fetch_sub(1, Ordering::AcqRel);
        Ok(())
    }

    /// `aclrtUnSubscribeReport` once every launched callback has run (C9): gives the stream
    /// back.
    /// On failure the error is returned and the subscription goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_unsubscribe`](Self::try_unsubscribe) gives it back instead, for a caller who wants to retry.
    pub fn unsubscribe(self) -> Result<Stream<'s>> {
        self.try_unsubscribe().map_err(Failed::into_release_error)
    }

    /// `aclrtUnSubscribeReport` after the stream's tasks and callbacks are done (C1 step 5,
    /// C9). Gives the stream back; on failure, the subscription.
    pub fn try_unsubscribe(self) -> Result<Stream<'s>, Failed<Subscribed<'r, 's>>> {
        match self.release() {
            Ok(()) => {
                let mut this = ManuallyDrop::new(self);
                // SAFETY: `this` is never used or dropped again; the stream is moved out once.
                let stream = unsafe { ManuallyDrop::take(&mut this.stream) };
                // SAFETY: as above, for the callbacks' state: every callback has run.
                drop(unsafe { ManuallyDrop::take(&mut this.flight) });
                Ok(stream)
            }
            Err(e) => Err(Failed::new(e, self)),
        }
    }
}

impl Drop for Subscribed<'_, '_> {
    fn drop(&mut self) {
        // Fallback: tried again while the runtime fails, as for a stream (an asynchronous
        // task's error is reported by one synchronisation only).
        let released = retry_cleanup("Subscribed (unsubscribe)", || self.release());
        if released.is_err() {
            // Still subscribed, maybe with callbacks outstanding: destroying the stream could
            // drop them (C1), and they may still run and use their slots: leak both, report.
            report_drop_error("Subscribed (stream leaked: still subscribed)", released);
            return;
        }
        // SAFETY: dropped once, here; `unsubscribe` forgets `self` instead of dropping it.
        unsafe { ManuallyDrop::drop(&mut self.stream) };
        // SAFETY: as above; every callback has run (released).
        unsafe { ManuallyDrop::drop(&mut self.flight) };
    }
}

impl std::fmt::Debug for Subscribed<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscribed")
            .field("stream", &*self.stream)
            .field("thread_id", &self.report.thread_id)
            .finish()
    }
}
