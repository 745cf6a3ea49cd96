//! Host functions (C10): closures the runtime runs on a thread of its own, in stream order,
//! without a report thread.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::result::CallError;
use crate::sys::bindings::aclrtHostFunc;
use crate::sys::sync::{AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering, sync_static};
use crate::typed::error::{Error, Result};
use crate::typed::handle::{Failed, report_drop_error};
use crate::typed::stream::Stream;

type Body = Box<dyn FnOnce() + Send + 'static>;

/// One launched host function, until its only run or until its task is known dropped.
struct Launched {
    body: Body,
    stream: Arc<Shared>,
}

sync_static! {
    /// Every launched host function not yet run, by a process-unique number. The runtime gets
    /// the number as `args`, never a pointer: a trampoline finds its own closure whatever
    /// happened to the other tasks (a task that fails without running leaves its entry, which
    /// the stream frees once it is seen done), and nothing is ever dereferenced twice.
    static LAUNCHED: Mutex<Option<HashMap<u64, Launched>>> = Mutex::new(None);
}
sync_static! {
    static NEXT_TICKET: AtomicU64 = AtomicU64::new(1);
}

/// What a stream's host functions share with it.
#[derive(Default)]
pub(crate) struct Shared {
    /// Launched closures not yet run or freed.
    pending: AtomicUsize,
    /// Messages of closures that panicked, not yet taken.
    panics: Mutex<Vec<String>>,
}

/// Locks, ignoring poisoning: the data stays consistent (inserts and removes only), and the
/// trampoline must never panic across the C ABI.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Takes the entry of `ticket` out of the registry, if it is still there.
fn take(ticket: u64) -> Option<Launched> {
    lock(&LAUNCHED).as_mut()?.remove(&ticket)
}

/// How many launched closures the registry holds (the loom models' invariants).
#[cfg(all(test, loom))]
pub(crate) fn registered() -> usize {
    lock(&LAUNCHED).as_ref().map_or(0, HashMap::len)
}

/// A [`Stream`] on which host functions can be launched (C10); see the
/// [type docs](Self).
///
/// ```no_run
/// # use ascend_typestate::Acl;
/// # let acl = Acl::init()?;
/// # let device = acl.set_device(0)?;
/// # let ctx = device.create_context()?;
/// let stream = ctx.create_stream()?.with_host_functions();
/// let (tx, rx) = std::sync::mpsc::channel();
/// stream.launch(move || { let _ = tx.send("the earlier tasks are done"); })?;
/// stream.synchronize()?;
/// assert!(rx.try_recv().is_ok());
/// stream.destroy()?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
///
/// ```text
///  stream.with_host_functions() ──► HostFnStream   (a Stream that is never subscribed, C10)
///                                     │  derefs to Stream: events, copies, synchronize
///                                     │  launch(closure): runs once the earlier tasks are
///                                     │  done; the later tasks wait for it
///                                     ├─ destroy() ──────► synchronised, then destroyed
///                                     └─ destroy_force() ► destroyed, pending closures dropped
/// ```
///
/// * Host functions and callbacks never share a stream (C10): `with_host_functions` takes
///   the [`Stream`] by value and gives no way back, and `subscribe` takes a `Stream` by
///   value, which a [`HostFnStream`] is not; a [`Subscribed`](crate::Subscribed) only lends
///   `&Stream`, which has no `launch`.
/// * The closures are `FnOnce() + Send + 'static` and receive nothing: no handle to call
///   the runtime with (C8); a handle smuggled in is refused with
///   [`Error::InsideCallback`]. A panic is caught at the FFI
///   boundary and reported by [`HostFnStream::take_panics`] (and by `Drop`).
/// * Nothing launched is lost or run twice: each closure is registered under a ticket
///   (the runtime gets the ticket, not a pointer) and removed by the only run of the
///   trampoline; closures whose task the runtime dropped (S6, S8), or failed without
///   running, are freed once the stream is seen done.
pub struct HostFnStream<'ctx> {
    stream: Stream<'ctx>,
    shared: Arc<Shared>,
}

impl<'ctx> Stream<'ctx> {
    /// Makes this stream one that runs host functions (C10). One way: a stream that has run
    /// host functions is never subscribed for callbacks.
    pub fn with_host_functions(self) -> HostFnStream<'ctx> {
        HostFnStream {
            stream: self,
            shared: Arc::new(Shared::default()),
        }
    }
}

impl<'ctx> Deref for HostFnStream<'ctx> {
    type Target = Stream<'ctx>;

    fn deref(&self) -> &Stream<'ctx> {
        &self.stream
    }
}

/// The C entry point of every host function. `args` is the ticket of its closure.
unsafe extern "C" fn trampoline(args: *mut c_void) {
    let Some(Launched { body, stream }) = take(args as usize as u64) else {
        return;
    };
    let previous = crate::typed::handle::enter_callback();
    let outcome = catch_unwind(AssertUnwindSafe(body));
    crate::typed::handle::leave_callback(previous);
    if let Err(payload) = outcome {
        let message = panic_message(payload.as_ref());
        // The payload's own `Drop` could panic: it is forgotten, never dropped here.
        std::mem::forget(payload);
        lock(&stream.panics).push(message);
    }
    stream.pending.fetch_sub(1, Ordering::AcqRel);
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

impl<'ctx> HostFnStream<'ctx> {
    /// `aclrtLaunchHostFunc` (C10): `body` runs once on a runtime thread, after the tasks
    /// issued on the stream so far; the tasks issued later wait until it has returned.
    /// [`Error::Unsupported`] on runtimes older than CANN 8.3. If the launch fails, `body`
    /// is dropped (nothing it owns is lost).
    pub fn launch<F>(&self, body: F) -> Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        self.stream.bind()?;
        let (api, raw) = (self.stream.context().api(), self.stream.as_raw());
        self.shared.launch(body, |function, args| {
            // SAFETY: the stream is live, bound, and never subscribed (C10: see the module
            // docs); `args` is a number, not a pointer: the trampoline looks it up.
            unsafe { api.launch_host_func(raw, function, args) }
        })
    }

    /// How many launched closures have not run yet.
    pub fn pending(&self) -> usize {
        self.shared.pending()
    }

    /// The messages of the closures that panicked since the last call.
    pub fn take_panics(&self) -> Vec<String> {
        self.shared.take_panics()
    }

    /// Synchronises (S2): every closure launched so far has run, or its task was dropped.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize()?;
        self.shared.forget_dropped();
        Ok(())
    }

    /// Moves the fields out without running `Drop`.
    fn into_parts(self) -> (Stream<'ctx>, Arc<Shared>) {
        let this = ManuallyDrop::new(self);
        // SAFETY: each field is read once out of a value that is never used or dropped again.
        let stream = unsafe { std::ptr::read(&this.stream) };
        // SAFETY: as above.
        let shared = unsafe { std::ptr::read(&this.shared) };
        (stream, shared)
    }

    /// Destroys the stream once its host functions have run (S2, C10).
    /// On failure the error is returned and the stream goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_destroy`](Self::try_destroy) gives it back instead, for a caller who wants to retry.
    pub fn destroy(self) -> Result<()> {
        self.try_destroy().map_err(Failed::into_release_error)
    }

    /// Synchronises, then destroys the stream (S4). Panics nobody took are reported to the
    /// [drop-error handler](crate::set_drop_error_handler). On failure the stream is given
    /// back.
    pub fn try_destroy(self) -> Result<(), Failed<HostFnStream<'ctx>>> {
        if let Err(error) = self.synchronize() {
            return Err(Failed::new(error, self));
        }
        let (stream, shared) = self.into_parts();
        match stream.try_destroy() {
            Ok(()) => {
                shared.report_panics();
                Ok(())
            }
            Err(failed) => {
                let (error, stream) = failed.into_parts();
                Err(Failed::new(error, HostFnStream { stream, shared }))
            }
        }
    }

    /// `aclrtDestroyStreamForce` (S8): host functions not yet started are dropped.
    /// On failure the error is returned and the destroy is forced again while the runtime
    /// fails it (never the waiting `Drop` fallback: this must not wait); a stream that still
    /// cannot be destroyed is kept, leaked and counted in its context (D3), and reported.
    /// [`try_destroy_force`](Self::try_destroy_force) gives it back instead.
    pub fn destroy_force(self) -> Result<()> {
        match self.try_destroy_force() {
            Ok(()) => Ok(()),
            Err(failed) => Err(crate::typed::handle::retry_or_keep(
                "HostFnStream::destroy_force (forced again)",
                failed,
                Self::try_destroy_force,
            )),
        }
    }

    /// `aclrtDestroyStreamForce` (S8): destroys the stream without waiting; the closures
    /// not yet run are dropped (never run). See [`Stream::destroy_force`].
    pub fn try_destroy_force(self) -> Result<(), Failed<HostFnStream<'ctx>>> {
        let (stream, shared) = self.into_parts();
        match stream.try_destroy_force() {
            Ok(()) => {
                shared.forget_dropped();
                shared.report_panics();
                Ok(())
            }
            Err(failed) => {
                let (error, stream) = failed.into_parts();
                Err(Failed::new(error, HostFnStream { stream, shared }))
            }
        }
    }
}

impl Shared {
    /// Registers `body` under a new ticket and hands the trampoline and the ticket to
    /// `submit` (`aclrtLaunchHostFunc`). If `submit` fails, the closure is taken back and
    /// dropped (nothing it owns is lost), unless a run already took it.
    pub(crate) fn launch<F>(
        self: &Arc<Self>,
        body: F,
        submit: impl FnOnce(aclrtHostFunc, *mut c_void) -> Result<(), CallError>,
    ) -> Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
        let launched = Launched {
            body: Box::new(body),
            stream: Arc::clone(self),
        };
        lock(&LAUNCHED)
            .get_or_insert_with(HashMap::new)
            .insert(ticket, launched);
        self.pending.fetch_add(1, Ordering::AcqRel);
        if let Err(error) = submit(Some(trampoline), ticket as usize as *mut c_void) {
            // Nothing was queued: take the closure back and drop it outside the lock.
            if take(ticket).is_some() {
                self.pending.fetch_sub(1, Ordering::AcqRel);
            }
            return Err(error.into());
        }
        Ok(())
    }

    /// Launched closures not yet run or freed.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    pub(crate) fn take_panics(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.panics))
    }

    /// Once every task of the stream is done or dropped: the closures still registered
    /// belong to tasks the runtime dropped (S6, S8) or failed without running them; they
    /// will never run. Frees them, outside the lock.
    pub(crate) fn forget_dropped(self: &Arc<Self>) {
        if self.pending.load(Ordering::Acquire) == 0 {
            return;
        }
        let dropped: Vec<Launched> = match lock(&LAUNCHED).as_mut() {
            Some(all) => {
                let mine: Vec<u64> = all
                    .iter()
                    .filter(|(_, l)| Arc::ptr_eq(&l.stream, self))
                    .map(|(ticket, _)| *ticket)
                    .collect();
                mine.into_iter().filter_map(|t| all.remove(&t)).collect()
            }
            None => Vec::new(),
        };
        self.pending.fetch_sub(dropped.len(), Ordering::AcqRel);
        drop(dropped);
    }

    /// Hands the panics nobody took to the drop-error handler.
    fn report_panics(&self) {
        let panics = self.take_panics();
        if let Some(first) = panics.first() {
            report_drop_error(
                "HostFnStream",
                Err(Error::CallbackPanicked {
                    count: panics.len(),
                    first: first.as_str().into(),
                }),
            );
        }
    }
}

impl Drop for HostFnStream<'_> {
    fn drop(&mut self) {
        // The stream's own `Drop` runs next (synchronise, destroy); the closures it dropped
        // are only known once it is seen done.
        match self.stream.settle("HostFnStream") {
            Ok(()) => self.shared.forget_dropped(),
            Err(error) => report_drop_error("HostFnStream", Err(error)),
        }
        self.shared.report_panics();
    }
}

impl std::fmt::Debug for HostFnStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostFnStream")
            .field("stream", &self.stream)
            .field("pending", &self.pending())
            .finish()
    }
}
