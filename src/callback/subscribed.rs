//! A stream subscribed to a report thread: the only place callbacks are launched (C1-C5,
//! C9), and the trampoline that runs them.

use super::*;

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
    /// Callbacks launched on this stream and not yet run.
    pub(super) pending: Arc<AtomicUsize>,
}

impl<'s> Deref for Subscribed<'_, 's> {
    type Target = Stream<'s>;
    fn deref(&self) -> &Stream<'s> {
        &self.stream
    }
}

/// One launched callback: freed by the only run of [`trampoline`].
struct Payload {
    body: Box<dyn FnOnce() + Send + 'static>,
    shared: Arc<Shared>,
    pending: Arc<AtomicUsize>,
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

/// The C callback: runs the closure once, catching any panic (never unwinds into C).
unsafe extern "C" fn trampoline(user_data: *mut c_void) {
    if user_data.is_null() {
        return;
    }
    // SAFETY: `user_data` is the `Box<Payload>` leaked by `launch`, and the runtime calls each
    // callback exactly once (C1 step 4), so this is the only owner.
    let payload = unsafe { Box::from_raw(user_data.cast::<Payload>()) };
    let Payload {
        body,
        shared,
        pending,
    } = *payload;
    // Marked for the body and for the report of its panic (which may reach the drop-error
    // handler): no call of the crate from either reaches the runtime (C8).
    let previous = context::enter_callback();
    let outcome = catch_unwind(AssertUnwindSafe(body));
    if let Err(panic) = outcome {
        let message = panic_message(panic.as_ref());
        // Not dropped: a payload whose own `Drop` panics would unwind into C (abort).
        std::mem::forget(panic);
        // Not `eprintln!`, which panics (here: aborts, in an `extern "C"` function) when
        // stderr cannot be written.
        let _ = writeln!(
            std::io::stderr(),
            "ascend-typestate: a host callback panicked: {message}"
        );
        shared.keep_panic(message);
    }
    context::leave_callback(previous);
    shared.enqueued.fetch_sub(1, Ordering::AcqRel);
    pending.fetch_sub(1, Ordering::AcqRel);
    shared.outstanding.fetch_sub(1, Ordering::AcqRel);
}

impl<'r, 's> Subscribed<'r, 's> {
    /// `aclrtLaunchCallback` (C1 step 4, C5): `body` runs once on the report thread when the
    /// stream reaches this point. `Blocking` holds the stream's later tasks until it has run.
    ///
    /// `body` receives nothing and must be `'static`: it has no handle to call the runtime
    /// with (C8).
    pub fn launch<F>(&self, mode: CallbackMode, body: F) -> Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        self.report.alive()?;
        self.stream.bind()?;
        let payload = Box::new(Payload {
            body: Box::new(body),
            shared: Arc::clone(&self.report.shared),
            pending: Arc::clone(&self.pending),
        });
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.report
            .shared
            .outstanding
            .fetch_add(1, Ordering::AcqRel);
        let user_data = Box::into_raw(payload).cast::<c_void>();
        // SAFETY: the stream is live, subscribed and its context current; `trampoline` frees
        // `user_data` on its only run, and the payload owns everything the closure needs
        // ('static).
        let launched = unsafe {
            self.stream.context().api().launch_callback(
                Some(trampoline),
                user_data,
                mode.raw(),
                self.stream.as_raw(),
            )
        };
        if let Err(e) = launched {
            // Not enqueued: the counters first (the closure's captures may panic when
            // dropped), then take the payload back, so that it is neither lost nor run.
            self.pending.fetch_sub(1, Ordering::AcqRel);
            self.report
                .shared
                .outstanding
                .fetch_sub(1, Ordering::AcqRel);
            // SAFETY: the runtime refused the callback, so `user_data` is still ours alone.
            drop(unsafe { Box::from_raw(user_data.cast::<Payload>()) });
            return Err(e.into());
        }
        self.report.shared.enqueued.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Callbacks launched on this stream that have not run yet.
    pub fn pending_callbacks(&self) -> usize {
        self.pending.load(Ordering::Acquire)
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
        while self.pending.load(Ordering::Acquire) != 0 {
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
                    pending: self.pending.load(Ordering::Acquire),
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

    /// `aclrtUnSubscribeReport` after the stream's tasks and callbacks are done (C1 step 5,
    /// C9). Gives the stream back; on failure, the subscription.
    pub fn unsubscribe(self) -> Result<Stream<'s>, Failed<Subscribed<'r, 's>>> {
        match self.release() {
            Ok(()) => {
                let mut this = ManuallyDrop::new(self);
                // SAFETY: `this` is never used or dropped again; the stream is moved out once.
                let stream = unsafe { ManuallyDrop::take(&mut this.stream) };
                // SAFETY: as above, for the counter (dropping the Arc).
                drop(unsafe { std::ptr::read(&this.pending) });
                Ok(stream)
            }
            Err(e) => Err(Failed::new(e, self)),
        }
    }
}

impl Drop for Subscribed<'_, '_> {
    fn drop(&mut self) {
        // Fallback: a second try, as for a stream (an asynchronous task's error is reported
        // by one synchronisation only).
        let released = self.release().or_else(|first| {
            report_drop_error("Subscribed (unsubscribe)", Err(first));
            self.release()
        });
        if released.is_err() {
            // Still subscribed, maybe with callbacks outstanding: destroying the stream could
            // drop them (C1); leak it and report.
            report_drop_error("Subscribed (stream leaked: still subscribed)", released);
            return;
        }
        // SAFETY: dropped once, here; `unsubscribe` forgets `self` instead of dropping it.
        unsafe { ManuallyDrop::drop(&mut self.stream) };
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
