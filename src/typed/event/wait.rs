//! The *Recorded* state's operations (E2-E5, E8, E9): `synchronize`, `wait`,
//! `wait_and_reset`, the recovery paths of a reset that failed, and `WaitError`. The wait
//! scope's own state and proofs (`Waited`, `ResetDone`) are in `scope.rs`.

use super::scope::{ResetFailed, ResetOnUnwind, WaitScope, Waited, quiesce, reset_alone};
use super::{
    Cell, Error, Event, Failed, ManuallyDrop, OnceCell, PhantomData, Recorded, Reset, ResetDone,
    Result, Stream, Timeout, ptr, report_drop_error,
};

impl<'s> Event<'s, Recorded> {
    /// `aclrtSynchronizeEvent` (E2): blocks the host until the event completes.
    pub fn synchronize(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: the event is live.
        unsafe { self.ctx.api().synchronize_event(self.raw) }?;
        // Its record is done: `reset_completed` needs no query (E10).
        self.prove_complete();
        Ok(())
    }

    /// `aclrtSynchronizeEventWithTimeout` (E6). [`Error::Unsupported`] on runtimes that
    /// lack it; [`AclError::RtEventSyncTimeout`](crate::AclError::RtEventSyncTimeout) on timeout.
    pub fn synchronize_with(&self, timeout: Timeout) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: the event is live; `Timeout` holds only -1 or > 0 (E6).
        unsafe {
            self.ctx
                .api()
                .synchronize_event_with_timeout(self.raw, timeout.as_raw())
        }?;
        self.prove_complete();
        Ok(())
    }

    /// `aclrtQueryEventStatus` (E2): whether the event has completed, without blocking.
    pub fn is_complete(&self) -> Result<bool> {
        if self.proven_complete() {
            return Ok(true);
        }
        self.ctx.bind()?;
        // SAFETY: the event is live.
        let complete = unsafe { self.ctx.api().query_event_status(self.raw) }?;
        if complete {
            self.prove_complete();
        }
        Ok(complete)
    }

    /// Resets a *Recorded* event whose record is complete, on `stream`, so that it can be
    /// recorded again (E10); [`Error::NotComplete`] if it is not.
    /// On failure the error is returned and the event goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_reset_completed`](Self::try_reset_completed) gives it back instead, for a caller who wants to retry.
    pub fn reset_completed<'t>(self, stream: &'t Stream<'_>) -> Result<Event<'t, Reset>>
    where
        's: 't,
    {
        self.try_reset_completed(stream).map_err(Error::from)
    }

    /// *Recorded* → *Reset* without a wait (E10): `aclrtResetEvent(event, stream)` on an
    /// event whose record is complete, so that it can be recorded again: a per-frame timing
    /// or host-synchronisation event is created once.
    ///
    /// The record must be complete: a record still pending could set the flag again after
    /// the reset, and a later wait would pass on it. After [`synchronize`](Self::synchronize)
    /// (or an [`is_complete`](Self::is_complete) that answered `true`) it is proven, and no
    /// runtime call asks again: the reset and the next record are the frame's only calls, as
    /// in C. Otherwise `aclrtQueryEventStatus` asks, and a pending record is
    /// [`Error::NotComplete`], the event given back, as on any failure, with nothing issued
    /// (the query is the only runtime call). Recording again on the same stream then
    /// needs no join. A record that a stopped context dropped (S6: stop on failure) never
    /// completes: such an event keeps answering `NotComplete` and can only be destroyed.
    ///
    /// ```no_run
    /// # use ascend_typestate::Acl;
    /// # let acl = Acl::init()?;
    /// # let device = acl.set_device(0)?;
    /// # let ctx = device.create_context()?;
    /// # let stream = ctx.create_stream()?;
    /// let mut start = ctx.create_event()?.record(&stream)?;   // created once
    /// let mut end = ctx.create_event()?.record(&stream)?;
    /// for _frame in 0..100 {
    ///     end.synchronize()?;                                // both complete (S1 order)
    ///     start = start.reset_completed(&stream)?.record(&stream)?;
    ///     // ... the frame's work on `stream` ...
    ///     end = end.reset_completed(&stream)?.record(&stream)?;
    /// }
    /// end.synchronize()?;
    /// println!("last frame: {} ms", end.elapsed_since(&start)?);
    /// # Ok::<(), ascend_typestate::Error>(())
    /// ```
    pub fn try_reset_completed<'t>(
        self,
        stream: &'t Stream<'_>,
    ) -> Result<Event<'t, Reset>, Failed<Event<'s, Recorded>>>
    where
        's: 't,
    {
        // Refused before anything is issued: the stream's context first, then completion
        // (a query), and only then the join after an earlier reset, if one is needed.
        if let Err(e) = self.check_stream(stream) {
            return Err(Failed::new(e, self));
        }
        match self.is_complete() {
            Ok(true) => {}
            Ok(false) => {
                let what = "the event's record";
                return Err(Failed::new(Error::NotComplete { what }, self));
            }
            Err(e) => return Err(Failed::new(e, self)),
        }
        if let Err(e) = self.prepare(stream) {
            return Err(Failed::new(e, self));
        }
        // SAFETY: both handles are live (borrowed), the stream's context is current (bound
        // above), the event's record is complete (queried: it cannot set the flag after this
        // reset), and no wait refers to it (*Recorded*: waits only happen in `wait` and
        // `wait_and_reset`, which leave it *Reset*). An earlier reset on another stream is
        // joined before (`prepare`, E5).
        match unsafe { self.ctx.api().reset_event(self.raw, stream.as_raw()) } {
            Ok(()) => {
                // As any reset: destroy and re-use wait for it (E5, E9).
                stream.mark_reset_pending();
                let reset_stream: &'t Stream<'t> = stream;
                Ok(self.into_state(reset_stream))
            }
            Err(e) => Err(Failed::new(e.into(), self)),
        }
    }

    /// `aclrtEventElapsedTime(&ms, start, self)` (E8): milliseconds from `start` to this
    /// event. Both must be complete (synchronise first), else
    /// [`AclError::RtInternalError`](crate::AclError::RtInternalError).
    /// Both events must be of one context: [`Error::ContextMismatch`] (or
    /// [`Error::DeviceMismatch`]) otherwise, before any runtime call.
    pub fn elapsed_since(&self, start: &Event<'_, Recorded>) -> Result<f32> {
        if !ptr::addr_eq(self.ctx, start.ctx) {
            return Err(self.ctx.mismatch(start.ctx, "the start event"));
        }
        self.ctx.bind()?;
        // SAFETY: both events are live.
        Ok(unsafe { self.ctx.api().event_elapsed_time(start.raw, self.raw) }?)
    }

    /// `stream` waits for the event, then resets it (E3, E4): the wait scope without a body.
    /// On failure the error is returned and the event goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_wait_and_reset`](Self::try_wait_and_reset) gives it back instead, for a caller who wants to retry.
    #[inline(always)]
    pub fn wait_and_reset<'t>(self, stream: &'t Stream<'_>) -> Result<Event<'t, Reset>>
    where
        's: 't,
    {
        self.try_wait_and_reset(stream).map_err(Error::from)
    }

    /// `aclrtStreamWaitEvent(stream, event)` then `aclrtResetEvent(event, stream)` (E1, E3,
    /// E4): `stream` waits for this event, which is reset right after the wait, as the
    /// protocol asks. The usual step of a pipeline; every task issued on `stream` afterwards
    /// runs after the event. The same as [`wait`](Self::wait) with a body of
    /// `|waited| waited.reset()`, without the scope: nothing can run between the two calls.
    ///
    /// Errors as for `wait`: if the wait cannot be issued, the event comes back *Recorded*
    /// ([`WaitError::NotWaited`]). A reset that fails is issued again, then once more alone
    /// after `stream` is synchronised; once one is issued the event comes back *Reset* with
    /// the first error ([`WaitError::Reset`]). If none can be, the event is kept, never
    /// destroyed unreset (E4): leaked, still counted in its context ([`WaitError::Unreset`]).
    ///
    /// ```no_run
    /// # use ascend_typestate::Acl;
    /// # let acl = Acl::init()?;
    /// # let device = acl.set_device(0)?;
    /// # let ctx = device.create_context()?;
    /// # let (producer, consumer) = (ctx.create_stream()?, ctx.create_stream()?);
    /// let event = ctx.create_event()?.record(&producer)?;   // E2
    /// let event = event.wait_and_reset(&consumer)?;          // E3, E4: Reset again
    /// # Ok::<(), ascend_typestate::Error>(())
    /// ```
    #[inline(always)]
    pub fn try_wait_and_reset<'t>(
        self,
        stream: &'t Stream<'_>,
    ) -> Result<Event<'t, Reset>, WaitError<'t>>
    where
        's: 't,
    {
        if let Err(e) = self.issue_wait(stream) {
            return Err(WaitError::NotWaited(Failed::new(e, self)));
        }
        let reset_stream: &'t Stream<'t> = stream;
        // SAFETY: both handles are live, the stream's context is current (`issue_wait`
        // bound it, and only the runtime call ran since), and the stream has just waited on
        // the event (E1 order: record, wait, reset).
        match unsafe { self.ctx.api().reset_event(self.raw, reset_stream.as_raw()) } {
            Ok(()) => {
                // The stream's next synchronisation is needed before the event is destroyed
                // or re-used (E5, E9); marked once issued (see `Stream::mark_reset_pending`).
                reset_stream.mark_reset_pending();
                Ok(self.into_state(reset_stream))
            }
            Err(error) => Err(retry_reset(
                error.into(),
                self.into_state(reset_stream),
                reset_stream,
            )),
        }
    }

    /// The wait scope (E1, E3, E4, E5): `stream` waits for this event, then `body` runs and
    /// must end with [`Waited::reset`]. See [`try_wait`](Self::try_wait) for every outcome.
    /// On failure the error is returned and the event goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_wait`](Self::try_wait) gives it back instead, for a caller who wants to retry.
    #[inline(always)]
    pub fn wait<'t, F>(self, stream: &'t Stream<'_>, body: F) -> Result<Event<'t, Reset>>
    where
        's: 't,
        F: for<'id> FnOnce(Waited<'id, 't>) -> Result<ResetDone<'id>>,
    {
        self.try_wait(stream, body).map_err(Error::from)
    }

    /// The wait scope (E1, E3, E4, E5): `stream` waits for this event
    /// (`aclrtStreamWaitEvent`), then `body` runs with the [`Waited`] scope, in which more
    /// streams may wait ([`Waited::also_wait`]) and which must end with [`Waited::reset`]:
    /// the closure has to return the [`ResetDone`] proof that only `reset` creates.
    ///
    /// If `body` returns an error, panics, or forgets its `Waited`, `wait` issues the reset
    /// itself (on unwind too) and the error is returned with the event, in the *Reset* state.
    /// A reset that fails is issued again, then alone once every waiting stream is
    /// synchronised (no join is needed then), each tried again while the runtime fails it.
    /// If even that fails, the event can neither be recorded again nor destroyed unreset
    /// (E4): it is kept, leaked, still counted in its context ([`WaitError::Unreset`], with
    /// the body's error; the reset's goes to the
    /// [drop-error handler](crate::set_drop_error_handler)).
    /// If the first wait cannot be issued, the event comes back *Recorded*.
    #[inline(always)]
    pub fn try_wait<'t, F>(
        self,
        stream: &'t Stream<'_>,
        body: F,
    ) -> Result<Event<'t, Reset>, WaitError<'t>>
    where
        's: 't,
        F: for<'id> FnOnce(Waited<'id, 't>) -> Result<ResetDone<'id>>,
    {
        if let Err(e) = self.issue_wait(stream) {
            return Err(WaitError::NotWaited(Failed::new(e, self)));
        }
        let previous_reset = self.reset_stream();
        let reset_stream: &'t Stream<'t> = stream;
        // The event stays here (it never leaves this frame while `body` runs); the scope's
        // state lives here too, not in `Waited`: the body may `mem::forget` its `Waited`,
        // and the reset must still be issued (E4), so `wait` itself checks it. On a panic,
        // `guard` issues the reset (E4), then releases the event (E9), so nothing leaks.
        // Every way out but an unwind takes the event back; the unwind guard releases it
        // from the scope's copy of its handles instead.
        let event = ManuallyDrop::new(self.into_state::<Reset>(reset_stream));
        let scope = WaitScope {
            raw: event.raw,
            ctx: event.ctx,
            reset_stream,
            previous_reset,
            others: OnceCell::new(),
            reset_issued: Cell::new(false),
        };
        let guard = ResetOnUnwind(&scope);
        // The proof has done its work (this compiled): drop it, which ends the borrow.
        let outcome = body(Waited {
            scope: &scope,
            _brand: PhantomData,
        })
        .map(|ResetDone { .. }| ());
        let error = match outcome {
            Ok(()) => {
                // The proof exists only once `Waited::reset` has issued the reset (E4).
                std::mem::forget(guard);
                // Dropped here, in this arm, not after the `match`: the branch on `outcome`
                // then comes first, and its usual arm knows it is `Ok`.
                drop(scope);
                return Ok(ManuallyDrop::into_inner(event));
            }
            Err(error) => error,
        };
        if scope.reset_issued.get() {
            std::mem::forget(guard);
            let event = ManuallyDrop::into_inner(event);
            return Err(WaitError::Reset(Failed::new(error, event)));
        }
        // The body returned early (`Err`, perhaps after forgetting its `Waited`): reset now (E4).
        let ensured = scope.reset_now_or_quiesce();
        std::mem::forget(guard);
        Err(finish_unreset(
            error,
            ensured,
            ManuallyDrop::into_inner(event),
        ))
    }

    #[inline(always)]
    fn issue_wait(&self, stream: &Stream<'_>) -> Result<()> {
        self.prepare(stream)?;
        // SAFETY: both handles are live (borrowed), the stream's context is current, and
        // the event was recorded (E1): waiting on it cannot hang.
        Ok(unsafe { self.ctx.api().stream_wait_event(stream.as_raw(), self.raw) }?)
    }
}

/// `wait_and_reset`'s reset failed with `error` (nothing was issued): tries it once more
/// (E4). The event then comes back *Reset* with the error ([`WaitError::Reset`]); if the
/// retry fails too, it is released as [`release_after_failed_reset`] says. Returns the
/// error only (not a `Result`): a cold call that wrote the whole `Result` would keep the
/// caller's `Result` in memory on its usual path too.
#[cold]
#[inline(never)]
fn retry_reset<'t>(
    error: Error,
    event: Event<'t, Reset>,
    reset_stream: &'t Stream<'t>,
) -> WaitError<'t> {
    // A stop (S6) never goes away: any try that meets one decides (107023).
    let mut was_stopped = event.ctx.stopped_by(&error);
    let again = reset_stream.bind().and_then(|()| {
        // SAFETY: as for the first try: both handles are live, the context current (bound),
        // and the stream has waited on the event; the first try issued nothing.
        let raw = unsafe {
            event
                .ctx
                .api()
                .reset_event(event.raw, reset_stream.as_raw())
        };
        Ok(raw?)
    });
    let again = again.or_else(|second| {
        was_stopped |= event.ctx.stopped_by(&second);
        report_drop_error(
            "Event::wait_and_reset (the reset failed twice)",
            Err(second),
        );
        // Once the stream has passed its wait, the reset can be issued on its own.
        if quiesce([reset_stream]) {
            reset_alone(event.ctx, event.raw, reset_stream)
        } else {
            Err(Error::InvalidArgument(
                "the waiting stream cannot be synchronised",
            ))
        }
    });
    reset_stream.mark_reset_pending();
    match again {
        Ok(()) => WaitError::Reset(Failed::new(error, event)),
        Err(again) => {
            let stopped = was_stopped || event.ctx.stopped_by(&again);
            report_drop_error(
                "Event::wait_and_reset (the reset could not be issued)",
                Err(again),
            );
            let quiesced = quiesce([reset_stream]);
            release_after_failed_reset(error, quiesced, stopped, event)
        }
    }
}

/// The end of a wait scope whose body returned `error` without resetting: `ensured` says
/// whether `wait` could issue the reset itself.
#[cold]
#[inline(never)]
fn finish_unreset<'t>(
    error: Error,
    ensured: Result<(), ResetFailed>,
    event: Event<'t, Reset>,
) -> WaitError<'t> {
    let ResetFailed {
        error: reset_error,
        quiesced,
        stopped,
    } = match ensured {
        Ok(()) => return WaitError::Reset(Failed::new(error, event)),
        Err(failed) => failed,
    };
    // The reset could not be issued: the event must not be recorded again. The body's error
    // is returned; the reset's is reported (nothing is lost).
    report_drop_error("Waited (reset)", Err(reset_error));
    release_after_failed_reset(error, quiesced, stopped, event)
}

/// An event whose reset could not be issued (E4) must not be recorded again, nor destroyed
/// after its wait without a reset (E4: the runtime would keep its resource): it is kept,
/// leaked, still counted in its context, which is then not released over it (D3). After a
/// stop (S6, `stopped`) no reset can ever be issued and the runtime allows the destroy: the
/// event is released then, once every stream that waited on it was seen done (`quiesced`),
/// else leaked rather than destroyed under a task that may still refer to it (E9).
/// Returns `error`.
#[cold]
#[inline(never)]
fn release_after_failed_reset<'t>(
    error: Error,
    quiesced: bool,
    stopped: bool,
    event: Event<'t, Reset>,
) -> WaitError<'t> {
    if !stopped || !quiesced {
        // Reported by the caller (the reset's error) or by `quiesce`.
        std::mem::forget(event);
        return WaitError::Unreset(error);
    }
    // A wait that ended without its record (dropped by the stop) leaves the record possibly
    // pending on another stream: wait for it too (E9). Its error (the stop's) is reported
    // once; a second synchronisation tells a stream that cannot be waited for.
    let api = event.ctx.api();
    // SAFETY: the event is live (owned here).
    let record_done: Result<()> = event
        .ctx
        .bind()
        .and_then(|()| Ok(unsafe { api.synchronize_event(event.raw) }?))
        .or_else(|first| {
            report_drop_error("Waited (its record's error)", Err(first));
            // SAFETY: as above.
            Ok(unsafe { api.synchronize_event(event.raw) }?)
        });
    if let Err(e) = record_done {
        report_drop_error(
            "Waited (event leaked: its record cannot be waited for)",
            Err(e),
        );
        std::mem::forget(event);
        return WaitError::Unreset(error);
    }
    if let Err(failed) = Failed::release_or_give_back(event, Event::release) {
        let (release_error, event) = failed.into_parts();
        report_drop_error("Waited (release after a failed reset)", Err(release_error));
        // The event's `Drop` tries again while the runtime fails, and reports.
        drop(event);
    }
    WaitError::Unreset(error)
}

/// Why a wait scope failed; the event is always handed back.
#[derive(Debug)]
pub enum WaitError<'t> {
    /// The first wait could not be issued: the event is still *Recorded*.
    NotWaited(Failed<Event<'t, Recorded>>),
    /// The scope's body returned an error (or the reset failed once and was issued again);
    /// the reset was issued: *Reset*.
    Reset(Failed<Event<'t, Reset>>),
    /// The reset could not be issued (E4), even after the waiting streams were synchronised:
    /// the event can neither be recorded again nor destroyed (the runtime keeps a waited
    /// event's resource until it is reset), so it is kept, leaked, still counted in its
    /// context, which then refuses to be released ([`Error::LiveChildren`], D3). After a
    /// stop on failure (S6), where no reset can ever be issued and the runtime allows it, it
    /// is destroyed instead. The error is the body's (the reset's went to the drop-error
    /// handler).
    Unreset(Error),
}

impl WaitError<'_> {
    /// The error.
    pub fn error(&self) -> &Error {
        match self {
            WaitError::NotWaited(f) => &f.error,
            WaitError::Reset(f) => &f.error,
            WaitError::Unreset(e) => e,
        }
    }
}

impl std::fmt::Display for WaitError<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.error(), f)
    }
}

/// Transparent, like [`Failed`]: it displays as its error and has that error's source, so
/// an error chain does not repeat the message.
impl std::error::Error for WaitError<'_> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(self.error())
    }
}

impl From<WaitError<'_>> for Error {
    fn from(e: WaitError<'_>) -> Error {
        match e {
            WaitError::NotWaited(f) => f.error,
            WaitError::Reset(f) => f.error,
            WaitError::Unreset(e) => e,
        }
    }
}
