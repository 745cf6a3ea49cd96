//! The wait scope of [`Event::wait`] (E3, E4, E5, E9): its state ([`WaitScope`]), the
//! unwind guard that resets, the [`Waited`] scope and its [`ResetDone`] proof, and the last
//! ways to reset (issued alone once every waiting stream is seen done).

use super::{
    Cell, Context, Error, Event, OnceCell, PhantomData, RefCell, Reset, Result, Stream, aclrtEvent,
    aclrtStream, after_reset_on, report_drop_error,
};
use crate::typed::handle::retry_cleanup;

/// Issues the reset of an event whose waiting streams were all seen done (quiesced), on
/// `reset_stream` alone (no join is needed any more: every wait has passed), and waits for
/// it. The last way to reset before an event would be released un-reset (E4).
#[cold]
#[inline(never)]
pub(super) fn reset_alone(
    ctx: &Context<'_>,
    raw: aclrtEvent,
    reset_stream: &Stream<'_>,
) -> Result<()> {
    reset_stream.bind()?;
    // SAFETY: both handles are live, the context current (bound), and every stream that
    // waited on the event has passed its wait (quiesced), so the reset overtakes nothing.
    // Tried again while the runtime fails it: the last way to reset (E4).
    retry_cleanup("Waited (a reset issued alone, tried again)", || unsafe {
        ctx.api().reset_event(raw, reset_stream.as_raw())
    })?;
    reset_stream.mark_reset_pending();
    reset_stream.settle("Waited (a reset issued alone)")
}

/// Synchronises each stream, up to twice (an asynchronous task's error is reported once);
/// says whether all were seen done. Every error is reported.
#[cold]
#[inline(never)]
pub(super) fn quiesce<'a, 'b: 'a>(streams: impl IntoIterator<Item = &'a Stream<'b>>) -> bool {
    let mut quiesced = true;
    for stream in streams {
        let settled = stream.settle("Waited (synchronize after a failed reset)");
        if settled.is_err() {
            quiesced = false;
            report_drop_error("Waited (a waiting stream cannot be synchronised)", settled);
        }
    }
    quiesced
}

/// An invariant lifetime: the brand that ties a [`ResetDone`] to its own wait scope.
type Brand<'id> = PhantomData<fn(&'id ()) -> &'id ()>;

/// The state of one wait scope. It lives in [`Event::wait`]'s frame, not in [`Waited`], so
/// that forgetting the `Waited` value cannot skip the reset (E4).
pub(super) struct WaitScope<'t> {
    /// The event's handle and context, copied: the event itself stays in `wait`'s frame
    /// (its address given to nothing, so that it can live in registers), and the unwind
    /// guard releases it from these and `reset_stream` (its next state's fields).
    pub(super) raw: aclrtEvent,
    pub(super) ctx: &'t Context<'t>,
    pub(super) reset_stream: &'t Stream<'t>,
    /// The stream of the event's previous reset: every wait of this scope is ordered after
    /// it, so that no wait passes on a stale flag and syncing the last resetting stream
    /// covers every task (E9).
    pub(super) previous_reset: Option<&'t Stream<'t>>,
    /// The streams of [`Waited::also_wait`], created with the first: a one-stream scope
    /// neither initialises nor checks nor frees a vector.
    pub(super) others: OnceCell<RefCell<Vec<&'t Stream<'t>>>>,
    pub(super) reset_issued: Cell<bool>,
}

impl WaitScope<'_> {
    #[inline(always)]
    fn issue_reset(&self) -> Result<()> {
        if self.reset_issued.get() {
            return Ok(());
        }
        let target = self.reset_stream.as_raw();
        // Every stream is in the event's context (checked when it was used), so one binding
        // serves all the calls below (D6).
        self.ctx.bind()?;
        if let Some(others) = self.others.get() {
            self.join_others(others, target)?;
        }
        // SAFETY: both handles are live, the stream's context is current, and the stream has
        // waited on the event (E1 order: record, wait, reset).
        unsafe { self.ctx.api().reset_event(self.raw, target)? };
        // The stream's next synchronisation is needed before the event is destroyed or
        // re-used (E5, E9); marked once issued (see `Stream::mark_reset_pending`).
        self.reset_stream.mark_reset_pending();
        self.reset_issued.set(true);
        Ok(())
    }

    /// E5: the reset runs after every other waiting stream has passed its wait.
    #[cold]
    #[inline(never)]
    fn join_others(&self, others: &RefCell<Vec<&Stream<'_>>>, target: aclrtStream) -> Result<()> {
        let others = others.borrow();
        for (i, other) in others.iter().map(|s| s.as_raw()).enumerate() {
            let seen = others[..i].iter().any(|s| s.as_raw() == other);
            if other != target && !seen {
                self.reset_stream.join_after(other)?;
            }
        }
        Ok(())
    }

    /// Issues the reset now; if that fails, synchronises every waiting stream (each up to
    /// twice: an asynchronous task's error is reported once) so that the event can be
    /// released (E9), and says whether they were all seen done.
    #[cold]
    #[inline(never)]
    pub(super) fn reset_now_or_quiesce(&self) -> Result<(), ResetFailed> {
        // A stop (S6) never goes away: any try that meets one decides (107023).
        let mut was_stopped = false;
        let Err(error) = self.issue_reset().or_else(|first| {
            was_stopped |= self.ctx.stopped_by(&first);
            // Once more (E4): a failed reset issued nothing; the error is not lost.
            report_drop_error("Waited (a reset that failed once)", Err(first));
            self.issue_reset()
        }) else {
            return Ok(());
        };
        was_stopped |= self.ctx.stopped_by(&error);
        let others = self.others.get().map(|o| o.borrow());
        let others = others.as_deref().map_or(&[][..], |o| o.as_slice());
        let quiesced = quiesce(std::iter::once(self.reset_stream).chain(others.iter().copied()));
        if quiesced {
            // Every wait has passed: the reset needs no join now (E4, E5).
            match reset_alone(self.ctx, self.raw, self.reset_stream) {
                Ok(()) => {
                    report_drop_error("Waited (a reset that failed twice)", Err(error));
                    self.reset_issued.set(true);
                    return Ok(());
                }
                Err(alone) => {
                    was_stopped |= self.ctx.stopped_by(&alone);
                    report_drop_error("Waited (a reset issued alone)", Err(alone));
                }
            }
        }
        Err(ResetFailed {
            error,
            quiesced,
            stopped: was_stopped,
        })
    }
}

/// A wait scope's reset that could not be issued (E4), even by `wait` itself.
pub(super) struct ResetFailed {
    pub(super) error: Error,
    /// Every stream that waited on the event was then seen done, so the event may be
    /// destroyed (E9); else it must be leaked.
    pub(super) quiesced: bool,
    /// A try met a stop on failure (S6): no reset can ever be issued.
    pub(super) stopped: bool,
}

/// Issues the scope's reset if `body` unwinds (E4).
pub(super) struct ResetOnUnwind<'a, 't>(pub(super) &'a WaitScope<'t>);

impl Drop for ResetOnUnwind<'_, '_> {
    /// Inlined, handing the scope to an out-of-line function: the guard itself then needs
    /// no place in memory.
    #[inline(always)]
    fn drop(&mut self) {
        reset_on_unwind(self.0);
    }
}

/// The unwind guard's work: issues the scope's reset if `body` did not (E4), then releases
/// the event (E9).
#[cold]
#[inline(never)]
fn reset_on_unwind(scope: &WaitScope<'_>) {
    // Only reached while `body` unwinds (`wait` forgets the guard otherwise).
    if !scope.reset_issued.get()
        && let Err(failed) = scope.reset_now_or_quiesce()
    {
        let release = failed.stopped && failed.quiesced;
        report_drop_error("Waited (reset on unwind)", Err(failed.error));
        if !release {
            // Never destroyed after its wait without a reset (E4), nor under a task that
            // may use it (E9): kept, still counted in its context (D3). Only after a stop
            // (S6), with every waiting stream done, is it released.
            return;
        }
    }
    // The body has unwound (its `Waited`, the only other reference into the scope, is
    // gone), and `wait` is unwinding too, leaving its `ManuallyDrop` event undropped: the
    // event is released once, here, from the fields of its *Reset* state.
    drop(Event::<Reset> {
        raw: scope.raw,
        ctx: scope.ctx,
        stream: std::cell::Cell::new(std::ptr::from_ref(scope.reset_stream).cast()),
        _state: PhantomData,
    });
}

/// The *Waited* state: the scope of [`Event::wait`]. One or more streams wait on the event;
/// the scope ends with [`Waited::reset`] (E4). If the body returns early, panics, or even
/// forgets this value, `wait` issues the reset itself.
pub struct Waited<'id, 't> {
    pub(super) scope: &'id WaitScope<'t>,
    pub(super) _brand: Brand<'id>,
}

/// Proof that a wait scope's reset was issued (E4). Only [`Waited::reset`] creates one, and
/// only for its own scope (`'id`).
#[must_use = "return it from the wait scope"]
pub struct ResetDone<'id> {
    _brand: Brand<'id>,
}

/// The event's handle, whether the scope's reset was issued, and how many streams wait
/// besides the first.
impl std::fmt::Debug for Waited<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let also_waiting = self
            .scope
            .others
            .get()
            .and_then(|others| others.try_borrow().ok())
            .map_or(0, |others| others.len());
        f.debug_struct("Waited")
            .field("event", &self.scope.raw)
            .field("reset_issued", &self.scope.reset_issued.get())
            .field("also_waiting", &also_waiting)
            .finish()
    }
}

impl std::fmt::Debug for ResetDone<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResetDone")
    }
}

impl<'id, 't> Waited<'id, 't> {
    /// Another stream waits on the event too (E3). The reset will be ordered after this wait
    /// (E5). The stream must be in the event's context.
    pub fn also_wait(&mut self, stream: &'t Stream<'_>) -> Result<()> {
        let scope = self.scope;
        scope.ctx.check_stream(stream, "the stream")?;
        stream.bind()?;
        after_reset_on(scope.previous_reset, stream)?;
        // SAFETY: both handles are live, the stream's context is current, and the event was
        // recorded before the scope began (E1).
        unsafe {
            scope
                .ctx
                .api()
                .stream_wait_event(stream.as_raw(), scope.raw)?
        };
        scope
            .others
            .get_or_init(RefCell::default)
            .borrow_mut()
            .push(stream);
        Ok(())
    }

    /// The raw event, for tasks this crate does not wrap.
    pub fn as_raw(&self) -> aclrtEvent {
        self.scope.raw
    }

    /// `aclrtResetEvent(event, stream)` on the first waiting stream (E4), ordered after every
    /// other wait of the scope (E5). Returns the proof the scope must return.
    #[inline]
    pub fn reset(self) -> Result<ResetDone<'id>> {
        self.scope.issue_reset().map(|()| ResetDone {
            _brand: PhantomData,
        })
    }
}
