//! Host-function threads (C12): a thread of the crate's that runs the host work of the
//! streams subscribed to it, and the subscription that ties a stream to it.

use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Failures, KEPT_FAILURES, POLL_MS, start_thread};
use crate::result::CallError;
use crate::sys::codes::AclError;
use crate::sys::sync::{AtomicBool, AtomicUsize, Mutex, Ordering};
use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::handle::{Failed, refuse_inside_callback, report_drop_error, retry_cleanup};
use crate::typed::stream::Stream;

/// The functions of host-function subscription: optional symbols, in the compact library only
/// (C12). A thread is started only if the runtime has all three.
const SYMBOLS: [&str; 3] = [
    "aclrtSubscribeHostFunc",
    "aclrtProcessHostFunc",
    "aclrtUnSubscribeHostFunc",
];

/// State shared by a host-function thread and its loop.
#[derive(Default)]
pub(crate) struct Shared {
    stop: AtomicBool,
    /// The loop has ended (only `stop` ends it; a panic of the loop too, which would be a
    /// bug of this crate): no stream may be subscribed to the thread any more.
    exited: AtomicBool,
    /// Streams subscribed to this thread: each [`HostFuncSubscribed`] until it unsubscribes.
    /// Only a leaked one (`mem::forget`) can be left at `stop`; the thread then keeps
    /// serving (C12).
    subscriptions: AtomicUsize,
    /// Left running by a `stop` that found a leaked subscription: nobody will read what is
    /// kept here any more, so failures are reported as they happen.
    detached: AtomicBool,
    /// `aclrtProcessHostFunc` failures: the loop goes on after each (host work may still
    /// come), and `stop` returns them.
    failures: Mutex<Failures>,
}

impl Shared {
    /// Asks the loop to end (it still calls `aclrtProcessHostFunc` once if it has not yet).
    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    fn alive(&self) -> Result<()> {
        if self.exited.load(Ordering::Acquire) {
            return Err(Error::HostFuncThreadStopped("its loop has ended".into()));
        }
        Ok(())
    }

    /// Keeps an `aclrtProcessHostFunc` failure for `stop`, or reports it if the thread was
    /// left running (checked under the lock `take_errors` drains, so nothing falls between).
    pub(crate) fn keep_failure(&self, error: Error) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if self.detached.load(Ordering::Acquire) {
            drop(failures);
            report_drop_error(
                "HostFuncThread (left running: aclrtProcessHostFunc)",
                Err(error),
            );
        } else if failures.kept.len() < KEPT_FAILURES {
            failures.kept.push(error);
        } else {
            failures.dropped += 1;
        }
    }

    /// The failures kept, and a count of those not kept. With `detach`, later ones are
    /// reported as they happen instead of kept.
    pub(crate) fn take_errors(&self, detach: bool) -> Vec<Error> {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if detach {
            self.detached.store(true, Ordering::Release);
        }
        let Failures { mut kept, dropped } = std::mem::take(&mut *failures);
        if dropped != 0 {
            kept.push(Error::HostFuncThreadStopped(format!(
                "{dropped} more aclrtProcessHostFunc failures"
            )));
        }
        kept
    }
}

impl super::worker::Served for Shared {
    fn subscriptions(&self) -> usize {
        self.subscriptions.load(Ordering::Acquire)
    }
    fn request_stop(&self) {
        Shared::request_stop(self);
    }
    fn take_errors(&self, detach: bool) -> Vec<Error> {
        Shared::take_errors(self, detach)
    }
}

/// Marks the loop ended when dropped: on its return, and on an unwind.
struct Exited<'a>(&'a Shared);

impl Drop for Exited<'_> {
    fn drop(&mut self) {
        self.0.exited.store(true, Ordering::Release);
    }
}

/// A thread that runs the runtime's host work for the streams subscribed to it (C12): it
/// calls `aclrtProcessHostFunc` in a loop with its context current, and is the
/// `hostFuncThreadId` streams subscribe to (its `pthread_self()`).
///
/// What runs on it is the runtime's own: the host part of the CPU operators of models
/// executed on a subscribed stream (`aclmdlExecuteV2` / `aclmdlExecuteAsyncV2` on the
/// product line whose compact library has these functions). It is not where the closures
/// of [`HostFnStream::launch`](crate::HostFnStream::launch) run (C10: the runtime runs
/// those on a thread of its own), nor callbacks (C1: [`ReportThread`](crate::ReportThread)).
///
/// # States
///
/// ```text
///  spawn(&ctx) ──► Running ──subscribe(stream)──► serving ≥ 1 HostFuncSubscribed (borrowed)
///                     │
///                     └── stop() / Drop ──► Joined (consumed; needs no HostFuncSubscribed alive)
/// ```
///
/// ```no_run
/// # use ascend_typestate::Acl;
/// use ascend_typestate::HostFuncThread;
/// # let acl = Acl::init()?;
/// # let device = acl.set_device(0)?;
/// let ctx = device.create_context()?;
/// let host = HostFuncThread::spawn(&ctx)?;       // Error::Unsupported without C12
/// let stream = host.subscribe(ctx.create_stream()?)?;
/// // ... models executed on `stream` (it derefs to a Stream) ...
/// let stream = stream.unsubscribe()?;           // once its tasks are done
/// stream.destroy()?;
/// host.stop()?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
///
/// # Why a thread of the crate's
///
/// The runtime needs a thread that keeps calling `aclrtProcessHostFunc` for as long as a
/// stream is subscribed to its id: without one, the stream's host work never runs and its
/// tasks wait forever; and a thread that ends frees its id for a new thread, which the
/// runtime would take for the subscribed one. A thread the crate spawns and owns can be
/// kept running for that long whatever the program does (a leaked subscription included),
/// and it runs nothing of the program's, so nothing is lost by not lending a user thread.
/// A user-thread form would have to prove, at every call, that the calling thread is the
/// subscribed one and that it will keep processing until every subscription has ended,
/// which no type can say of a thread that may return or panic. As for
/// [`ReportThread`](crate::ReportThread), the crate's thread it is.
///
/// # The rules, in types
///
/// * `subscribe` takes the [`Stream`] by value and [`HostFuncSubscribed`] has no
///   `subscribe`, so a stream never has a second host-function thread (C12: 107011).
/// * A stream of another device than the thread's is [`Error::DeviceMismatch`] before the
///   call (C12: one thread serves several streams, of one device); streams of several
///   contexts of that device may share it.
/// * The stream is given back only by [`HostFuncSubscribed::unsubscribe`], after its tasks
///   are done: a subscribed stream cannot be destroyed (its `destroy` needs the stream by
///   value), and `stop` does not compile while a stream is subscribed.
/// * A stream has one role in the typed API: host-function subscription, report
///   subscription ([`ReportThread::subscribe`](crate::ReportThread::subscribe), C1) and
///   host functions ([`Stream::with_host_functions`], C10) each take the [`Stream`] by
///   value, so none of them can be given a stream in another role. This is stricter than
///   the runtime, whose report and host-function slots are separate, and it keeps away
///   every mix whose behaviour is not documented (C11).
/// * Unsupported runtimes: the functions are in the compact library of one product line
///   only; [`spawn`](Self::spawn) on a runtime without them is [`Error::Unsupported`],
///   and starts nothing.
/// * A failed `aclrtProcessHostFunc` does not end the loop (host work may still come):
///   [`stop`](Self::stop) returns it. A thread whose calls keep failing cannot run host
///   work: a stream waiting for it waits like one behind a kernel that never ends; bound
///   such waits with `synchronize_with` where that must not stall the host.
/// * A leaked (`mem::forget`) [`HostFuncSubscribed`] leaves its stream subscribed: `stop`
///   then returns [`Error::LiveChildren`] and the thread keeps serving it for the life of
///   the process. A leaked `HostFuncThread` keeps running too, and keeps its context (D3).
///
/// `Send + Sync`.
pub struct HostFuncThread<'ctx> {
    ctx: &'ctx Context<'ctx>,
    thread_id: u64,
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
    /// `stop` ran: `Drop` has nothing left to do.
    stopped: bool,
}

impl<'ctx> HostFuncThread<'ctx> {
    /// Starts a host-function thread for `ctx`'s device, with `ctx` current on it.
    /// [`Error::Unsupported`] if the runtime lacks one of the three functions (C12); then
    /// nothing is started.
    pub fn spawn(ctx: &'ctx Context<'ctx>) -> Result<HostFuncThread<'ctx>> {
        refuse_inside_callback()?;
        let api = ctx.api();
        if let Some(symbol) = SYMBOLS.into_iter().find(|s| !api.has_symbol(s)) {
            return Err(Error::Unsupported { symbol });
        }
        let shared = Arc::new(Shared::default());
        let thread_shared = Arc::clone(&shared);
        let (handle, thread_id) = start_thread(
            ctx,
            "acl-host-func",
            Error::HostFuncThreadStopped,
            move |api| {
                let _exited = Exited(&thread_shared);
                // SAFETY: this thread is the one its streams subscribe (C12); what it runs is
                // the runtime's host work, none of the program's code.
                let process = || unsafe { api.process_host_func(POLL_MS) };
                serve(&thread_shared, process, std::thread::park_timeout);
            },
        )?;
        ctx.adopt();
        Ok(HostFuncThread {
            ctx,
            thread_id,
            shared,
            handle: Some(handle),
            stopped: false,
        })
    }

    /// The `hostFuncThreadId` given to `aclrtSubscribeHostFunc`: the thread's
    /// `pthread_self()` (C12).
    pub fn thread_id(&self) -> u64 {
        self.thread_id
    }

    /// The device this thread serves (C12: streams of one device).
    pub fn device_id(&self) -> i32 {
        self.ctx.device_id()
    }

    /// `aclrtSubscribeHostFunc(thread, stream)` (C12): the stream's host work runs on this
    /// thread. The stream must be of this thread's device ([`Error::DeviceMismatch`]).
    /// On failure the error is returned and the stream goes to its `Drop` fallback;
    /// [`try_subscribe`](Self::try_subscribe) gives it back instead.
    pub fn subscribe<'s>(&self, stream: Stream<'s>) -> Result<HostFuncSubscribed<'_, 's>> {
        self.try_subscribe(stream).map_err(Error::from)
    }

    /// As [`subscribe`](Self::subscribe); on failure the stream is given back.
    pub fn try_subscribe<'s>(
        &self,
        stream: Stream<'s>,
    ) -> Result<HostFuncSubscribed<'_, 's>, Failed<Stream<'s>>> {
        let found = stream.context().device_id();
        if found != self.device_id() {
            let e = Error::DeviceMismatch {
                what: "the stream (C12)",
                expected: self.device_id(),
                found,
            };
            return Err(Failed::new(e, stream));
        }
        if let Err(e) = self.shared.alive() {
            return Err(Failed::new(e, stream));
        }
        // Counted first: a subscription must never exist uncounted (`stop` reads it).
        self.shared.subscriptions.fetch_add(1, Ordering::AcqRel);
        let subscribed = stream.bind().and_then(|()| {
            // SAFETY: the stream is live (owned) and its context current; the thread id is
            // a running thread that processes host work until `stop`, which cannot happen
            // while the returned value borrows `self`, and which keeps the thread running
            // while a leaked subscription counts (C12).
            let raw = unsafe {
                self.ctx
                    .api()
                    .subscribe_host_func(self.thread_id, stream.as_raw())
            };
            Ok(raw?)
        });
        match subscribed {
            Ok(()) => {
                // Work may come at once: no need to wait for the loop's back-off.
                if let Some(handle) = &self.handle {
                    handle.thread().unpark();
                }
                Ok(HostFuncSubscribed {
                    stream: ManuallyDrop::new(stream),
                    thread: self,
                })
            }
            Err(e) => {
                self.shared.subscriptions.fetch_sub(1, Ordering::AcqRel);
                Err(Failed::new(e, stream))
            }
        }
    }

    fn shut_down(&mut self) -> Result<()> {
        self.stopped = true;
        // A leaked `HostFuncSubscribed`'s stream keeps the thread serving (C12); a drop on
        // the thread itself (by the drop-error handler of a thread left running) too.
        super::worker::shut_down(
            &*self.shared,
            &mut self.handle,
            self.ctx,
            &super::worker::Names {
                left_running: "HostFuncThread (left running)",
                further: "HostFuncThread (a further error)",
                panicked: || {
                    Error::HostFuncThreadStopped("the host-function thread panicked".into())
                },
            },
            || {},
        )
    }

    /// Stops and joins the thread. Does not compile while a stream is subscribed to it.
    /// Returns the first `aclrtProcessHostFunc` failure it kept (the loop goes on after
    /// one); the others go to the [drop-error handler](crate::set_drop_error_handler).
    ///
    /// If a [`HostFuncSubscribed`] was leaked (`mem::forget`), its stream is still
    /// subscribed to the thread: the thread is then left running for the life of the
    /// process, serving it, and this returns [`Error::LiveChildren`].
    pub fn stop(mut self) -> Result<()> {
        self.shut_down()
    }
}

impl Drop for HostFuncThread<'_> {
    fn drop(&mut self) {
        if !self.stopped {
            report_drop_error("HostFuncThread", self.shut_down());
        }
    }
}

impl std::fmt::Debug for HostFuncThread<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostFuncThread")
            .field("thread_id", &self.thread_id)
            .finish()
    }
}

/// The host-function thread's loop: process host work until asked to stop.
///
/// It calls `aclrtProcessHostFunc` at least once, even when `stop` comes first: the compact
/// runtime keeps an id per thread value, made by the first `aclrtSubscribeHostFunc` naming
/// the thread or by the thread's first `aclrtProcessHostFunc`, and only that first call, on
/// the thread itself, registers the thread-exit destructor that forgets it (C12). A thread
/// that was subscribed and stopped before its first call would leave its id to the next
/// thread the OS gives the same `pthread_t` (at once, on Linux).
///
/// `process` is `aclrtProcessHostFunc`, `pause` waits before the next call (`stop` unparks
/// the thread, so stopping takes no wait).
pub(crate) fn serve(
    shared: &Shared,
    mut process: impl FnMut() -> Result<(), CallError>,
    pause: impl Fn(Duration),
) {
    // The runtime may answer at once (the simulator does while no stream is subscribed):
    // back off from 0.1 ms to POLL_MS then, so that an idle thread does not spin.
    let mut idle = Duration::from_micros(100);
    let poll = Duration::from_millis(POLL_MS.unsigned_abs().into());
    let mut first = true;
    while first || !shared.stop.load(Ordering::Acquire) {
        first = false;
        let started = Instant::now();
        let outcome = process();
        let waited = crate::sys::sync::elapsed(started) >= poll / 2;
        match outcome {
            // Host work ran: more may be ready.
            Ok(()) => idle = Duration::from_micros(100),
            // None within the poll (C12: 507012).
            Err(CallError::Failed {
                code: AclError::RtReportTimeout,
                ..
            }) if waited => idle = Duration::from_micros(100),
            Err(CallError::Failed {
                code: AclError::RtReportTimeout | AclError::RtThreadSubscribe,
                ..
            }) => {
                // Not subscribed (yet, or any more), or a timeout that did not wait:
                // nothing to do for now.
                pause(idle);
                idle = (idle * 2).min(poll);
            }
            // Anything else is kept for `stop`, and the loop goes on: host work may still
            // come, and a stream whose host work never runs would hang.
            Err(e) => {
                shared.keep_failure(e.into());
                pause(idle);
                idle = (idle * 2).min(poll);
            }
        }
    }
}

/// A stream subscribed to a [`HostFuncThread`] (C12): its host work runs on that thread.
/// Derefs to the [`Stream`] for every use but its end: the stream is given back by
/// [`unsubscribe`](Self::unsubscribe), after its tasks are done; `Drop` does the same as a
/// fallback, then destroys the stream.
///
/// `Send`, not `Sync`, like the [`Stream`] it holds.
pub struct HostFuncSubscribed<'t, 's> {
    stream: ManuallyDrop<Stream<'s>>,
    thread: &'t HostFuncThread<'t>,
}

impl<'s> Deref for HostFuncSubscribed<'_, 's> {
    type Target = Stream<'s>;
    fn deref(&self) -> &Stream<'s> {
        &self.stream
    }
}

impl<'t, 's> HostFuncSubscribed<'t, 's> {
    /// The stream's tasks done, then `aclrtUnSubscribeHostFunc` (C12): host work of the
    /// stream still pending needs the thread, so it is waited for first.
    fn release(&self) -> Result<()> {
        self.stream.bind()?;
        self.stream.synchronize()?;
        // SAFETY: the stream is live and its context current (bound above); it is
        // subscribed to this thread, and its tasks are done (synchronised above).
        unsafe {
            self.stream
                .context()
                .api()
                .unsubscribe_host_func(self.thread.thread_id, self.stream.as_raw())?
        };
        self.thread
            .shared
            .subscriptions
            .fetch_sub(1, Ordering::AcqRel);
        Ok(())
    }

    /// `aclrtUnSubscribeHostFunc` once the stream's tasks are done (C12): gives the stream
    /// back. On failure the error is returned and the subscription goes to its `Drop`
    /// fallback (tried again while the runtime fails; a stream that still cannot be
    /// unsubscribed is leaked, never destroyed subscribed, and its thread keeps serving it);
    /// [`try_unsubscribe`](Self::try_unsubscribe) gives it back instead.
    pub fn unsubscribe(self) -> Result<Stream<'s>> {
        self.try_unsubscribe().map_err(Failed::into_release_error)
    }

    /// As [`unsubscribe`](Self::unsubscribe); on failure the subscription is given back.
    pub fn try_unsubscribe(self) -> Result<Stream<'s>, Failed<HostFuncSubscribed<'t, 's>>> {
        match self.release() {
            Ok(()) => {
                let mut this = ManuallyDrop::new(self);
                // SAFETY: `this` is never used or dropped again; the stream is moved out once.
                Ok(unsafe { ManuallyDrop::take(&mut this.stream) })
            }
            Err(e) => Err(Failed::new(e, self)),
        }
    }
}

impl Drop for HostFuncSubscribed<'_, '_> {
    fn drop(&mut self) {
        // Fallback: tried again while the runtime fails, as for a stream (an asynchronous
        // task's error is reported by one synchronisation only).
        let released = retry_cleanup("HostFuncSubscribed (unsubscribe)", || self.release());
        if released.is_err() {
            // Still subscribed: destroying the stream would leave the runtime a
            // subscription of a stream that is gone (C12). Leak it, still counted, so that
            // the thread keeps serving it; report.
            report_drop_error(
                "HostFuncSubscribed (stream leaked: still subscribed)",
                released,
            );
            return;
        }
        // SAFETY: dropped once, here; `try_unsubscribe` forgets `self` instead of dropping it.
        unsafe { ManuallyDrop::drop(&mut self.stream) };
    }
}

impl std::fmt::Debug for HostFuncSubscribed<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostFuncSubscribed")
            .field("stream", &*self.stream)
            .field("thread_id", &self.thread.thread_id)
            .finish()
    }
}
