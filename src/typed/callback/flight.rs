//! The callbacks in flight on one subscribed stream (C1, C5): the slots their closures are
//! stored in (claimed with a compare-and-swap, freed by the callback's only run), their
//! counts, the trampolines the runtime calls, and the wait for them all to have run. No
//! runtime call is made here: a launch hands the trampoline and its data to `submit`, so
//! the same code runs on the runtime and in the loom models (`src/typed/loom/callbacks.rs`).

use super::{Any, Arc, AssertUnwindSafe, Error, Ordering, Result, STRANDED_AFTER, Shared};
use super::{c_void, catch_unwind};

use std::mem::MaybeUninit;

use crate::result::CallError;
use crate::sys::bindings::aclrtCallback;
use crate::sys::sync::{AtomicBool, AtomicUsize, UnsafeCell};

/// Bytes of closure a slot holds inline: a launch of a closure this small (six words:
/// e.g. an `Arc`, a sender and a few numbers) allocates nothing.
const SLOT_BYTES: usize = 48;

/// The callbacks in flight on one subscribed stream, allocated once at `subscribe`.
pub(crate) struct Flight {
    /// Callbacks launched on this stream and not yet run.
    pending: AtomicUsize,
    /// The report thread's state, kept alive as long as a callback may run.
    shared: Arc<Shared>,
    /// Where the search for a free slot starts (the last one taken, plus one).
    next: AtomicUsize,
    /// One per callback the subscription may hold in flight (its capacity).
    slots: Box<[Slot]>,
}

/// One closure in flight, stored inline. Exclusive to whoever set `busy`: the launching
/// thread until the runtime has the callback, then the callback's only run.
pub(crate) struct Slot {
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

/// A launch on a [`Flight`]: takes a slot, stores the closure (in the slot, or boxed when
/// large), counts it, and hands the trampoline and its data to `$submit`
/// (`aclrtLaunchCallback`, with `$callback` and `$user_data` bound). If that fails, the
/// closure is taken back and dropped and the slot freed: it is neither lost nor run.
/// Expands to an expression of type `Result<()>` that returns early on an error. Called by
/// the one thread holding the subscription (`Subscribed` is not `Sync`).
///
/// A macro, not a function taking the runtime call as a closure: `Subscribed::launch`
/// expands it in place, so that the call and the early returns stay in the caller's frame
/// (the function form cost the launch loop three instructions: its result went through
/// memory), and the loom models expand the same text ([`Flight::launch`]).
macro_rules! launch_in_flight {
    ($flight:expr, $body:expr, $F:ty, |$callback:ident, $user_data:ident| $submit:expr) => {{
        let flight: &Flight = $flight;
        let Some((slot, $callback, $user_data)) = flight.store::<$F>($body) else {
            return Err(flight.full());
        };
        flight.submitting();
        if let Err(e) = $submit {
            // SAFETY: the runtime refused the callback: `user_data` is this launch's, still
            // holding the `F` stored above, in `slot` or boxed (as `store` chose).
            return Err(unsafe { flight.not_launched::<$F>(slot, $user_data, e) });
        }
        flight.accepted();
        Ok(())
    }};
}
pub(crate) use launch_in_flight;

impl Flight {
    /// `capacity` slots, 1 to [`MAX_CALLBACK_CAPACITY`](super::MAX_CALLBACK_CAPACITY)
    /// (checked by the caller).
    pub(crate) fn new(shared: Arc<Shared>, capacity: usize) -> Arc<Flight> {
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

    /// The report thread's state.
    #[inline(always)]
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// How many callbacks it holds in flight at most.
    fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Callbacks launched on this stream that have not run yet.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
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

    /// Launches `body` as [`launch_in_flight!`] does, with `submit` as the runtime's
    /// `aclrtLaunchCallback`: the loom models' way in.
    #[cfg(all(test, loom))]
    pub(crate) fn launch<F>(
        &self,
        body: F,
        submit: impl FnOnce(aclrtCallback, *mut c_void) -> Result<(), CallError>,
    ) -> Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        launch_in_flight!(self, body, F, |callback, user_data| submit(
            callback, user_data
        ))
    }

    /// Takes a slot for a closure of type `F` and stores `body` in it (or boxed with it, when
    /// large): the trampoline and the data to hand to the runtime. `None` when every slot is
    /// in flight.
    #[inline(always)]
    pub(crate) fn store<F>(&self, body: F) -> Option<(&Slot, aclrtCallback, *mut c_void)>
    where
        F: FnOnce() + Send + 'static,
    {
        let slot = self.take_slot()?;
        if fits_inline::<F>() {
            // SAFETY: this thread holds the slot (taken above); `F` fits its storage in
            // size and alignment (`fits_inline`).
            slot.data
                .with_mut(|data| unsafe { data.cast::<F>().write(body) });
            let user_data = std::ptr::from_ref(slot).cast_mut().cast();
            Some((slot, Some(slot_trampoline::<F>), user_data))
        } else {
            // Large closures, out of line: the launch a loop runs is the slot's.
            Some((slot, Some(trampoline), boxed(slot, body)))
        }
    }

    /// Counts a callback about to be handed to the runtime.
    #[inline(always)]
    pub(crate) fn submitting(&self) {
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.shared.outstanding.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts a callback the runtime accepted.
    #[inline(always)]
    pub(crate) fn accepted(&self) {
        self.shared.enqueued.fetch_add(1, Ordering::AcqRel);
    }

    /// The error of a launch while every slot is in flight.
    #[cold]
    #[inline(never)]
    pub(crate) fn full(&self) -> Error {
        full(self.capacity())
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
    pub(crate) unsafe fn not_launched<F>(
        &self,
        slot: &Slot,
        user_data: *mut c_void,
        e: CallError,
    ) -> Error
    where
        F: FnOnce() + Send + 'static,
    {
        self.pending.fetch_sub(1, Ordering::AcqRel);
        self.shared.outstanding.fetch_sub(1, Ordering::AcqRel);
        if fits_inline::<F>() {
            // SAFETY: the caller's contract: the slot is still this thread's, and it holds
            // the initialised `F`, moved out once, here.
            let body = slot
                .data
                .with_mut(|data| unsafe { std::ptr::read(data.cast::<F>()) });
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

    /// Waits until every callback launched here has run (C1 step 5), calling `pause`
    /// between looks. Gives up with [`Error::ReportThreadFailing`] once the report thread
    /// has failed [`STRANDED_AFTER`] times in a row during the wait, and with the thread's
    /// error if its loop ended: either way those callbacks cannot run.
    pub(crate) fn wait_for_callbacks(&self, pause: impl Fn()) -> Result<()> {
        let shared = &*self.shared;
        // Failures counted from here, and again after any call that did not fail: only a
        // thread failing for the whole of this wait gives up on it.
        let mut good = shared.good_calls.load(Ordering::Acquire);
        let mut failed = shared.failed_calls.load(Ordering::Acquire);
        while self.pending.load(Ordering::Acquire) != 0 {
            shared.alive()?;
            let good_now = shared.good_calls.load(Ordering::Acquire);
            let failed_now = shared.failed_calls.load(Ordering::Acquire);
            if good_now != good {
                (good, failed) = (good_now, failed_now);
            }
            let failures = failed_now.wrapping_sub(failed);
            if failures >= STRANDED_AFTER {
                return Err(Error::ReportThreadFailing {
                    failures,
                    pending: self.pending.load(Ordering::Acquire),
                });
            }
            pause();
        }
        Ok(())
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

/// The message of a caught panic.
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
    let body = slot
        .data
        .with_mut(|data| unsafe { std::ptr::read(data.cast::<F>()) });
    run_callback(&flight.shared, body);
    slot.busy.store(false, Ordering::Release);
    ran(&flight.shared, &flight.pending);
}

/// Whether a closure of type `F` is stored in its slot (else boxed).
const fn fits_inline<F>() -> bool {
    size_of::<F>() <= SLOT_BYTES && align_of::<F>() <= align_of::<usize>()
}
