//! What every handle of the typed layer shares, as a leaf module: the [`Timeout`] type, the
//! [`Failed`] error that hands a handle back, the reporting of errors in `Drop` (the
//! handler, [`set_drop_error_handler`]), the retry policy of clean-up calls, and the marks of
//! a thread that runs a host callback (C8) with the checks a parent runs before it is
//! released (D3). It imports the error module and the layers below, nothing else of `typed`.

use std::fmt;

use crate::sys::sync::{RwLock, sync_static};

use crate::result::current;
use crate::typed::error::{Error, Result};

/// Marks the calling thread as running a host callback, until `leave_callback` (C8).
pub(crate) fn enter_callback() -> u64 {
    current::replace(current::INSIDE_CALLBACK)
}

/// Ends `enter_callback`, restoring the cache value it returned.
pub(crate) fn leave_callback(previous: u64) {
    current::replace(previous);
}

/// [`Error::InsideCallback`](crate::Error::InsideCallback) when called from a host callback
/// (C8), for the typed calls that do not bind a context first.
pub(crate) fn refuse_inside_callback() -> Result<()> {
    if current::get() == current::INSIDE_CALLBACK {
        Err(crate::Error::InsideCallback)
    } else {
        Ok(())
    }
}

/// Whether a parent (runtime, device, context) may be released now: not from a callback
/// (C8), and not while `children` handles created from it live (D3: only a leak can leave
/// any; the parent is then kept, never released under them).
pub(crate) fn may_release(children: usize) -> Result<()> {
    refuse_inside_callback()?;
    if children != 0 {
        return Err(crate::Error::LiveChildren { count: children });
    }
    Ok(())
}

/// A timeout in the runtime's convention: forever (`-1`) or a positive number of milliseconds
/// (S3, E6, C6). `0` and values below `-1` cannot be written.
///
/// Literals are checked at compile time by [`timeout!`](crate::timeout); run-time values go
/// through [`Timeout::from_millis`], which returns `None` for `0`.
///
/// ```
/// use ascend_typestate::{timeout, Timeout};
/// let t = timeout!(250);
/// assert_eq!(t.as_raw(), 250);
/// assert_eq!(timeout!(forever), Timeout::FOREVER);
/// assert_eq!(Timeout::from_millis(0), None);
/// ```
///
/// ```compile_fail
/// let t = ascend_typestate::timeout!(0); // S3: 0 is not a timeout
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Timeout(i32);

impl Timeout {
    /// Wait forever (`-1`).
    pub const FOREVER: Timeout = Timeout(-1);

    /// A timeout of `ms` milliseconds; `None` for `0` or more than `i32::MAX`.
    pub const fn from_millis(ms: u32) -> Option<Timeout> {
        if ms == 0 || ms > i32::MAX as u32 {
            None
        } else {
            Some(Timeout(ms as i32))
        }
    }

    /// A timeout from a duration, rounded up to whole milliseconds; `None` for zero or a
    /// duration above `i32::MAX` ms.
    pub fn from_duration(duration: std::time::Duration) -> Option<Timeout> {
        let ms = duration.as_nanos().div_ceil(1_000_000);
        u32::try_from(ms).ok().and_then(Timeout::from_millis)
    }

    /// The raw value passed to the runtime: `-1` or `> 0`.
    pub const fn as_raw(self) -> i32 {
        self.0
    }
}

/// A [`Timeout`] checked at compile time: `timeout!(forever)` or `timeout!(MS)` with
/// `1 <= MS <= i32::MAX`. `timeout!(0)` does not compile (S3, E6, C6).
#[macro_export]
macro_rules! timeout {
    (forever) => {
        $crate::Timeout::FOREVER
    };
    ($ms:expr) => {{
        const TIMEOUT: $crate::Timeout = match $crate::Timeout::from_millis($ms) {
            Some(t) => t,
            None => panic!("a timeout is `forever` or 1..=i32::MAX milliseconds (S3, E6, C6)"),
        };
        TIMEOUT
    }};
}

/// A failed transition: the error, and the value it was applied to, unchanged, so that
/// nothing is lost (a failed `record` gives the event back in its previous state).
///
/// `?` converts it into [`Error`], dropping the value (whose `Drop` releases it).
pub struct Failed<T> {
    /// What went wrong.
    pub error: Error,
    /// The value, in the state it had before the failed call.
    pub value: T,
}

impl<T> Failed<T> {
    pub(crate) fn new(error: Error, value: T) -> Self {
        Failed { error, value }
    }

    /// The explicit, fallible end of a handle: runs `release`; on success the value is
    /// consumed without running its `Drop` fallback (which would release it again), on
    /// failure it is given back with the error. For values owning no heap memory.
    pub(crate) fn release_or_give_back(
        value: T,
        release: impl FnOnce(&T) -> Result<()>,
    ) -> Result<(), Failed<T>> {
        match release(&value) {
            Ok(()) => {
                std::mem::forget(value);
                Ok(())
            }
            Err(error) => Err(Failed::new(error, value)),
        }
    }

    /// Splits into the error and the value (a moved-out field pattern on a `let ... else`
    /// binding keeps the borrow checker treating the whole value as live; this does not).
    pub fn into_parts(self) -> (Error, T) {
        (self.error, self.value)
    }
}

impl<T> fmt::Debug for Failed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Failed")
            .field("error", &self.error)
            .field("value", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T> fmt::Display for Failed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

/// Transparent: it displays as its error and has that error's source, so an error chain
/// does not repeat the message.
impl<T> std::error::Error for Failed<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

/// The error; the value goes to its `Drop` fallback (kept inline: the hot paths' values stay
/// in registers).
impl<T> From<Failed<T>> for Error {
    fn from(failed: Failed<T>) -> Error {
        failed.error
    }
}

impl<T> Failed<T> {
    /// The usual form of a release (`destroy`, `reset`, `finalize`, ...): as [`From`], except
    /// after a refusal of the crate's own that the `Drop` fallback would only repeat
    /// ([`Error::LiveChildren`]: a leaked child keeps the value; [`Error::InsideCallback`]):
    /// the value is then kept as the fallback would keep it, without a second, identical
    /// report.
    pub(crate) fn into_release_error(self) -> Error {
        let (error, value) = self.into_parts();
        if matches!(error, Error::LiveChildren { .. } | Error::InsideCallback) {
            std::mem::forget(value);
        } else {
            drop(value);
        }
        error
    }
}

/// Receives errors that happened where no caller can receive them: in `Drop` fallbacks.
pub type DropErrorHandler = fn(what: &'static str, error: &Error);

fn default_drop_error_handler(what: &'static str, error: &Error) {
    diagnostic(format_args!("error while dropping {what}: {error}"));
}

/// Says what no caller can receive (a drop error with the default handler, a panicking
/// callback or handler): with the feature `log`, to the `log` facade at level `error`,
/// target `ascend_typestate`, when a logger takes it; else (and if the logger panics) to
/// stderr, prefixed `ascend-typestate: `.
pub(crate) fn diagnostic(args: fmt::Arguments<'_>) {
    #[cfg(feature = "log")]
    {
        let logged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let enabled = log::log_enabled!(target: "ascend_typestate", log::Level::Error);
            if enabled {
                log::error!(target: "ascend_typestate", "{args}");
            }
            enabled
        }));
        match logged {
            Ok(true) => return,
            Ok(false) => {}
            // Not dropped: a payload whose own `Drop` panics would unwind from here.
            Err(payload) => std::mem::forget(payload),
        }
    }
    // Not `eprintln!`, which panics when stderr cannot be written.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "ascend-typestate: {args}");
}

sync_static! {
    /// The handler [`report_drop_error`] calls; copied out of the lock before the call, so
    /// that a handler may report, or install another handler, itself.
    static DROP_ERROR_HANDLER: RwLock<DropErrorHandler> = RwLock::new(default_drop_error_handler);
}

/// Sets what happens to an error raised where no caller can receive it: a `Drop` fallback
/// (a stream dropped without `destroy`, ...), or an async scope's synchronisation after its
/// body already returned an error. The default prints it to stderr; it is never silently
/// discarded. Prefer the explicit, fallible `destroy`/`finalize` methods, which return the
/// error. Returns the previous handler, so that it can be put back.
///
/// ```
/// fn count(_what: &'static str, _error: &ascend_typestate::Error) { /* e.g. a metric */ }
/// let previous = ascend_typestate::set_drop_error_handler(count);
/// // ...
/// ascend_typestate::set_drop_error_handler(previous);
/// ```
pub fn set_drop_error_handler(handler: DropErrorHandler) -> DropErrorHandler {
    let mut slot = DROP_ERROR_HANDLER
        .write()
        .unwrap_or_else(|p| p.into_inner());
    std::mem::replace(&mut *slot, handler)
}

/// How many times a clean-up step is tried while the runtime fails it: enough to see
/// through two transient failures in a row and a stream's one-time asynchronous error (P3b:
/// one synchronisation reports it, the next does not). Every failure is reported.
pub(crate) const CLEANUP_TRIES: usize = 4;

/// Runs the clean-up `step` until it succeeds, at most [`CLEANUP_TRIES`] times while the
/// runtime fails it; each failure but the last is reported as `what`, the last returned.
/// The crate's own refusals (a leaked child, a call from a callback) are final at once.
pub(crate) fn retry_cleanup<T, E: Into<Error>>(
    what: &'static str,
    mut step: impl FnMut() -> std::result::Result<T, E>,
) -> Result<T> {
    let mut tries = 1;
    loop {
        match step().map_err(Into::into) {
            Err(error @ Error::Runtime { .. }) if tries < CLEANUP_TRIES => {
                report_drop_error(what, Err(error));
                tries += 1;
            }
            outcome => return outcome,
        }
    }
}

/// The usual form of a release that must not fall back on the waiting `Drop` (a forced
/// destroy exists not to wait): `again` is tried while the runtime fails it, each failure
/// reported; a value still not released is kept, leaked and still counted in its parent
/// (D3). Returns the first error.
pub(crate) fn retry_or_keep<T>(
    what: &'static str,
    failed: Failed<T>,
    mut again: impl FnMut(T) -> Result<(), Failed<T>>,
) -> Error {
    let (first, mut value) = failed.into_parts();
    if matches!(first, Error::Runtime { .. }) {
        for _ in 1..CLEANUP_TRIES {
            match again(value) {
                Ok(()) => return first,
                Err(failed) => {
                    let (error, kept) = failed.into_parts();
                    report_drop_error(what, Err(error));
                    value = kept;
                }
            }
        }
    }
    std::mem::forget(value);
    first
}

/// The `Drop` fallback of a handle: `release`, tried again while the runtime fails it
/// ([`retry_cleanup`]). Every error is reported; a handle whose release still fails is
/// leaked, still counted in its parent, never released under work that may still use it.
pub(crate) fn release_on_drop(what: &'static str, release: impl FnMut() -> Result<()>) {
    report_drop_error(what, retry_cleanup(what, release));
}

pub(crate) fn report_all(errors: Vec<(&'static str, Error)>) {
    for (what, error) in errors {
        report_drop_error(what, Err(error));
    }
}

/// The first of `errors`, returned; the others reported as `what` (a further error), not
/// lost: a release that failed in several ways can return one error.
pub(crate) fn first_error_reporting_others(what: &'static str, errors: Vec<Error>) -> Result<()> {
    let mut errors = errors.into_iter();
    let first = errors.next();
    for later in errors {
        report_drop_error(what, Err(later));
    }
    first.map_or(Ok(()), Err)
}

pub(crate) fn report_drop_error<E: Into<Error>>(what: &'static str, result: Result<(), E>) {
    if let Err(error) = result {
        let error: Error = error.into();
        let handler = *DROP_ERROR_HANDLER.read().unwrap_or_else(|p| p.into_inner());
        // A panicking handler must not unwind out of a `Drop` or a synchronisation that
        // keeps buffers borrowed (M1): catch it and say so.
        let outcome = std::panic::catch_unwind(|| handler(what, &error));
        if let Err(payload) = outcome {
            // Not dropped: a payload whose own `Drop` panics would unwind from here.
            std::mem::forget(payload);
            diagnostic(format_args!(
                "the drop-error handler panicked on: {what}: {error}"
            ));
        }
    }
}

/// Devices set through the typed API and not reset yet. One per process is enough: only one
/// [`Acl`](crate::Acl) lives at a time (P2), and every device borrows it.
pub(crate) static LIVE_DEVICES: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// How many devices set through the typed API are not reset (a leak, at `finalize`).
pub(crate) fn live_devices() -> usize {
    LIVE_DEVICES.load(std::sync::atomic::Ordering::Acquire)
}
