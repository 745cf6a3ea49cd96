//! Host functions (C10): closures the runtime runs on a thread of its own, in stream order,
//! without a report thread.
//!
//! ```text
//!  stream.with_host_functions() ──► HostFnStream   (a Stream that is never subscribed, C10)
//!                                     │  derefs to Stream: events, copies, synchronize
//!                                     │  launch(closure): runs once the earlier tasks are
//!                                     │  done; the later tasks wait for it
//!                                     ├─ destroy() ──────► synchronised, then destroyed
//!                                     └─ destroy_force() ► destroyed, pending closures dropped
//! ```
//!
//! * Host functions and callbacks never share a stream (C10): `with_host_functions` takes
//!   the [`Stream`] by value and gives no way back, and `subscribe` takes a `Stream` by
//!   value, which a [`HostFnStream`] is not; a [`Subscribed`](crate::Subscribed) only lends
//!   `&Stream`, which has no `launch`.
//! * The closures are `FnOnce() + Send + 'static` and receive nothing: no handle to call
//!   the runtime with (C8); a handle smuggled in is refused with
//!   [`Error::InsideCallback`]. A panic is caught at the FFI
//!   boundary and reported by [`HostFnStream::take_panics`] (and by `Drop`).
//! * Nothing launched is lost or run twice: each closure is queued once and removed by the
//!   only run of the trampoline; closures whose task the runtime dropped (S6, S8) are
//!   dropped after the stream is seen done.

use std::any::Any;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use crate::context;
use crate::error::{Error, Result};
use crate::runtime::{Failed, report_drop_error};
use crate::stream::Stream;

type Body = Box<dyn FnOnce() + Send + 'static>;

/// What a stream's trampolines share with it.
#[derive(Default)]
struct Shared {
    /// Launched closures not yet run, in issue order: a stream runs its tasks in order (S1)
    /// and one host function at a time, so each run takes the front one.
    queue: Mutex<VecDeque<Body>>,
    /// Messages of closures that panicked, not yet taken.
    panics: Mutex<Vec<String>>,
}

/// Locks, ignoring poisoning: the data stays consistent (pushes and pops only), and the
/// trampoline must never panic across the C ABI.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A [`Stream`] on which host functions can be launched (C10); see the
/// [module docs](self).
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

/// The C entry point of every host function. `args` is one strong count of the stream's
/// `Shared`, given up by `launch`.
unsafe extern "C" fn trampoline(args: *mut c_void) {
    // SAFETY: `launch` passed `Arc::into_raw` of a `Shared` as `args`, once per launched
    // task, and the runtime calls this once per task: this takes back that count.
    let shared = unsafe { Arc::from_raw(args.cast_const().cast::<Shared>()) };
    let body = lock(&shared.queue).pop_front();
    let Some(body) = body else { return };
    let previous = context::enter_callback();
    let outcome = catch_unwind(AssertUnwindSafe(body));
    context::leave_callback(previous);
    if let Err(payload) = outcome {
        let message = panic_message(payload.as_ref());
        // The payload's own `Drop` could panic: it is forgotten, never dropped here.
        std::mem::forget(payload);
        lock(&shared.panics).push(message);
    }
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
    /// [`Error::Unsupported`] on runtimes older than CANN 8.3.
    pub fn launch<F>(&self, body: F) -> Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        self.stream.bind()?;
        lock(&self.shared.queue).push_back(Box::new(body));
        let args = Arc::into_raw(Arc::clone(&self.shared))
            .cast_mut()
            .cast::<c_void>();
        // SAFETY: the stream is live, bound, and never subscribed (C10: see the module
        // docs); `trampoline` takes one strong count back per run, so `args` stays valid
        // until then; a task the runtime drops instead is accounted for by `forget_dropped`.
        let launched = unsafe {
            self.stream.context().api().launch_host_func(
                self.stream.as_raw(),
                Some(trampoline),
                args,
            )
        };
        if let Err(error) = launched {
            // Nothing was queued in the runtime: take back the closure (the last one: only
            // this thread launches, `HostFnStream` is not `Sync`) and the count.
            drop(lock(&self.shared.queue).pop_back());
            // SAFETY: the count `into_raw` gave up above, which no trampoline will take.
            unsafe { Arc::decrement_strong_count(args.cast_const().cast::<Shared>()) };
            return Err(error);
        }
        Ok(())
    }

    /// How many launched closures have not run yet.
    pub fn pending(&self) -> usize {
        lock(&self.shared.queue).len()
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
        unsafe { (std::ptr::read(&this.stream), std::ptr::read(&this.shared)) }
    }

    /// Synchronises, then destroys the stream (S4). Panics nobody took are reported to the
    /// [drop-error handler](crate::set_drop_error_handler). On failure the stream is given
    /// back.
    pub fn destroy(self) -> Result<(), Failed<HostFnStream<'ctx>>> {
        if let Err(error) = self.synchronize() {
            return Err(Failed::new(error, self));
        }
        let (stream, shared) = self.into_parts();
        match stream.destroy() {
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

    /// `aclrtDestroyStreamForce` (S8): destroys the stream without waiting; the closures
    /// not yet run are dropped (never run). See [`Stream::destroy_force`].
    pub fn destroy_force(self) -> Result<(), Failed<HostFnStream<'ctx>>> {
        let (stream, shared) = self.into_parts();
        match stream.destroy_force() {
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
    fn take_panics(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.panics))
    }

    /// Once every task of the stream is done or dropped: the closures still queued were
    /// dropped by the runtime (S6, S8) and will never run. Frees them and their counts.
    fn forget_dropped(self: &Arc<Self>) {
        let dropped: Vec<Body> = lock(&self.queue).drain(..).collect();
        for _ in &dropped {
            // SAFETY: one count `launch` gave up for a task whose trampoline never runs.
            unsafe { Arc::decrement_strong_count(Arc::as_ptr(self)) };
        }
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
                    first: first.clone(),
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
