//! The end of a thread that serves subscribed streams (a [`ReportThread`](super::ReportThread),
//! C1, C4, C7; a [`HostFuncThread`](super::HostFuncThread), C12): one path for both.

use std::thread::JoinHandle;

use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::handle::{first_error_reporting_others, report_drop_error};

/// What a serving thread shares with its owner, as its end needs it.
pub(crate) trait Served {
    /// Streams still subscribed to the thread: only leaked subscriptions at its end.
    fn subscriptions(&self) -> usize;
    /// Asks the loop to end; the thread is then unparked and joined.
    fn request_stop(&self);
    /// What the thread kept for its owner; with `detach`, what comes later is reported as it
    /// happens.
    fn take_errors(&self, detach: bool) -> Vec<Error>;
}

/// How one kind of serving thread names itself and its panic.
pub(crate) struct Names {
    /// The drop-error label of what a thread left running kept.
    pub(crate) left_running: &'static str,
    /// The drop-error label of the errors after the first.
    pub(crate) further: &'static str,
    /// The error of a thread whose loop panicked (a bug of this crate).
    pub(crate) panicked: fn() -> Error,
}

/// Ends a serving thread, once: joined, uncounted in `ctx`, its errors returned (the first)
/// and reported (the others). `joined` runs once the thread is joined.
///
/// With a stream still subscribed (only a leaked subscription: a live one borrows the
/// thread) the thread keeps serving, detached: its stream is subscribed to its thread id,
/// which a new thread could otherwise get, and work launched on it would never run (C7,
/// C12). Called on the thread itself (a thread cannot join itself) it is left running too.
/// Both are `Err`, and the thread stays counted in its context (D3).
pub(crate) fn shut_down(
    shared: &impl Served,
    handle: &mut Option<JoinHandle<()>>,
    ctx: &Context<'_>,
    names: &Names,
    joined: impl FnOnce(),
) -> Result<()> {
    let subscribed = shared.subscriptions();
    if subscribed != 0 {
        drop(handle.take());
        for error in shared.take_errors(true) {
            report_drop_error(names.left_running, Err(error));
        }
        return Err(Error::LiveChildren { count: subscribed });
    }
    let own_thread = handle
        .as_ref()
        .is_some_and(|h| h.thread().id() == std::thread::current().id());
    if own_thread {
        drop(handle.take());
        return Err(Error::InsideCallback);
    }
    shared.request_stop();
    let mut errors = Vec::new();
    if let Some(handle) = handle.take() {
        handle.thread().unpark();
        let outcome = handle.join().map_err(std::mem::forget);
        joined();
        ctx.orphan();
        if outcome.is_err() {
            errors.push((names.panicked)());
        }
    }
    errors.extend(shared.take_errors(false));
    first_error_reporting_others(names.further, errors)
}
