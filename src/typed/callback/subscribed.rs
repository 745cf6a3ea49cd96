//! A stream subscribed to a report thread: the only place callbacks are launched (C1-C5,
//! C9), and the trampoline that runs them.

use super::flight::{Flight, launch_in_flight};
use super::{
    Arc, CallbackMode, Deref, Duration, Failed, ManuallyDrop, Ordering, ReportThread, Result,
    Stream, report_drop_error,
};

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

/// How many callbacks a subscription holds in flight unless told otherwise
/// ([`ReportThread::subscribe_with_capacity`]).
pub const DEFAULT_CALLBACK_CAPACITY: usize = 64;
/// The most callbacks in flight a subscription may be created for.
pub const MAX_CALLBACK_CAPACITY: usize = 65_536;

impl<'s> Deref for Subscribed<'_, 's> {
    type Target = Stream<'s>;
    fn deref(&self) -> &Stream<'s> {
        &self.stream
    }
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
    /// [`Error::CallbackCapacity`](crate::Error::CallbackCapacity) (the closure is dropped,
    /// not run), never an allocation.
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
        flight.shared().alive()?;
        self.stream.bind()?;
        launch_in_flight!(flight, body, F, |callback, user_data| {
            // SAFETY: the stream is live, subscribed and its context current; the trampoline
            // frees `user_data` (the slot, or the box and its slot) on its only run, and the
            // closure owns everything it needs ('static).
            unsafe {
                self.stream.context().api().launch_callback(
                    callback,
                    user_data,
                    mode.raw(),
                    self.stream.as_raw(),
                )
            }
        })
    }

    /// Callbacks launched on this stream that have not run yet.
    pub fn pending_callbacks(&self) -> usize {
        self.flight.pending()
    }

    fn release(&self) -> Result<()> {
        // C1 step 5: every callback run, then every task done, then unsubscribe (C9). The
        // callbacks first: a blocking one holds the stream, and if the report thread cannot
        // run it, waiting for the stream would never end.
        self.stream.bind()?;
        self.flight
            .wait_for_callbacks(|| std::thread::sleep(Duration::from_micros(100)))?;
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
