//! Host callbacks (C1-C9): report threads, stream subscription, and `launch` only where a
//! callback can run; host-function threads (C12), beside them.

use std::any::Any;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::os::unix::thread::JoinHandleExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize as StdAtomicUsize;

use crate::sys::sync::{AtomicBool, AtomicIsize, AtomicUsize, Mutex, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::result::CallError;
use crate::sys::bindings::{ACL_CALLBACK_BLOCK, ACL_CALLBACK_NO_BLOCK, aclrtCallbackBlockType};
use crate::sys::codes::AclError;
use crate::sys::loader::Api;
use crate::typed::context::{self, Context};
use crate::typed::error::{Error, Result};
use crate::typed::handle::{Failed, report_drop_error};
use crate::typed::stream::Stream;

/// The most report threads a process may have (C4, Atlas 200/500 A2).
pub const MAX_REPORT_THREADS: usize = 1024;

pub(crate) mod flight;
pub(crate) mod host_func;
mod subscribed;
mod worker;

pub(crate) use flight::panic_message;
pub use host_func::{HostFuncSubscribed, HostFuncThread};
pub use subscribed::{DEFAULT_CALLBACK_CAPACITY, MAX_CALLBACK_CAPACITY, Subscribed};

/// Report threads running (C4). Not modelled: a count of threads the OS starts.
static REPORT_THREADS: StdAtomicUsize = StdAtomicUsize::new(0);

/// How often the report thread wakes to check whether it should stop (`aclrtProcessReport`
/// timeout, C6: must be `> 0`).
const POLL_MS: i32 = 10;

/// Whether a callback holds its stream (C5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallbackMode {
    /// `ACL_CALLBACK_BLOCK`: the stream's later tasks wait until the callback has run.
    Blocking,
    /// `ACL_CALLBACK_NO_BLOCK`: the stream goes on; the callback runs when the thread can.
    NonBlocking,
}

impl CallbackMode {
    fn raw(self) -> aclrtCallbackBlockType {
        match self {
            CallbackMode::Blocking => ACL_CALLBACK_BLOCK,
            CallbackMode::NonBlocking => ACL_CALLBACK_NO_BLOCK,
        }
    }
}

/// The most `aclrtProcessReport` failures a report thread keeps until `stop` (the first is
/// returned, the others reported); later ones are counted only.
const KEPT_FAILURES: usize = 16;

/// After this many `aclrtProcessReport` failures in a row (about half a second at the
/// thread's back-off), `unsubscribe` stops waiting for callbacks the thread cannot run.
const STRANDED_AFTER: usize = 50;

/// State shared by a report thread, its subscriptions and the callbacks in flight.
#[derive(Default)]
pub(crate) struct Shared {
    stop: AtomicBool,
    /// Callbacks launched and not yet run, on every stream of this thread.
    outstanding: AtomicUsize,
    /// Callbacks the runtime accepted, counted once accepted, minus those run: never more
    /// than the callbacks queued and not run (a run may come before its count, making it
    /// briefly negative), so a positive value proves a stream is still subscribed. Unlike
    /// `outstanding`, it never counts a launch that is about to be refused.
    enqueued: AtomicIsize,
    /// Streams subscribed to this thread: each `Subscribed` until it unsubscribes. Only a
    /// leaked one (`mem::forget`) can be left at `stop`; the thread then keeps serving (C1).
    subscriptions: AtomicUsize,
    /// The thread's loop has ended (only `stop` ends it).
    exited: AtomicBool,
    /// `aclrtProcessReport` calls that failed, and that did not (a timeout or "not
    /// subscribed" included): a thread that keeps failing while `unsubscribe` waits cannot
    /// run the callbacks it waits for.
    failed_calls: AtomicUsize,
    good_calls: AtomicUsize,
    /// Left running by a `stop` that found a leaked subscription: nobody will read what is
    /// kept here any more, so failures and panics are reported as they happen.
    detached: AtomicBool,
    panics: Mutex<Vec<String>>,
    /// `aclrtProcessReport` failures: the loop goes on after each (callbacks may still be
    /// waiting), and `stop` returns them.
    failures: Mutex<Failures>,
}

#[derive(Default)]
struct Failures {
    kept: Vec<Error>,
    dropped: usize,
}

impl Shared {
    /// The report thread still runs callbacks (its loop ends only at `stop`; this catches a
    /// thread that died, which would leave launched callbacks waiting forever).
    #[inline(always)]
    pub(crate) fn alive(&self) -> Result<()> {
        if self.exited.load(Ordering::Acquire) {
            return Err(loop_ended());
        }
        Ok(())
    }

    /// The loop ends once asked to stop with no callback outstanding: `stop` asks only once
    /// no stream is subscribed, so none can be launched any more, and every one launched
    /// has run.
    #[inline]
    pub(crate) fn should_exit(&self) -> bool {
        self.stop.load(Ordering::Acquire) && self.outstanding.load(Ordering::Acquire) == 0
    }

    /// Callbacks outstanding and enqueued (the loom models' invariants).
    #[cfg(all(test, loom))]
    pub(crate) fn counts(&self) -> (usize, isize) {
        (
            self.outstanding.load(Ordering::Acquire),
            self.enqueued.load(Ordering::Acquire),
        )
    }

    /// Asks the loop to end ([`should_exit`](Self::should_exit)); the thread is then
    /// unparked and joined.
    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Keeps an `aclrtProcessReport` failure for `stop`, or reports it if the thread was
    /// left running (checked under the lock `take_errors` drains, so nothing falls between).
    pub(crate) fn keep_failure(&self, error: Error) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if self.detached.load(Ordering::Acquire) {
            drop(failures);
            report_drop_error(
                "ReportThread (left running: aclrtProcessReport)",
                Err(error),
            );
        } else if failures.kept.len() < KEPT_FAILURES {
            failures.kept.push(error);
        } else {
            failures.dropped += 1;
        }
    }

    /// Keeps a callback's panic for `take_panics`/`stop`, or reports it if the thread was
    /// left running.
    pub(crate) fn keep_panic(&self, message: String) {
        let mut panics = self.panics.lock().unwrap_or_else(|p| p.into_inner());
        if self.detached.load(Ordering::Acquire) {
            drop(panics);
            report_drop_error(
                "ReportThread (left running: a callback panicked)",
                Err(Error::CallbackPanicked {
                    count: 1,
                    first: message.into(),
                }),
            );
        } else {
            panics.push(message);
        }
    }

    /// Everything kept, as errors: the failures, a count of those not kept, the panics.
    /// With `detach`, later ones are reported as they happen instead of kept.
    pub(crate) fn take_errors(&self, detach: bool) -> Vec<Error> {
        let mut errors = Vec::new();
        {
            let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
            if detach {
                self.detached.store(true, Ordering::Release);
            }
            let Failures { kept, dropped } = std::mem::take(&mut *failures);
            errors.extend(kept);
            if dropped != 0 {
                errors.push(Error::ReportThreadStopped(format!(
                    "{dropped} more aclrtProcessReport failures"
                )));
            }
        }
        let panics = std::mem::take(&mut *self.panics.lock().unwrap_or_else(|p| p.into_inner()));
        if let Some(first) = panics.first() {
            errors.push(Error::CallbackPanicked {
                count: panics.len(),
                first: first.as_str().into(),
            });
        }
        errors
    }
}

impl worker::Served for Shared {
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

/// A raw context handle, moved to the report thread once, while the context is borrowed.
struct SendContext(crate::sys::bindings::aclrtContext);
// SAFETY: an opaque handle; the runtime allows making a context current on any thread.
unsafe impl Send for SendContext {}

/// Starts a thread of the runtime's (a report thread, C1; a host-function thread, C12):
/// it makes `ctx` current on itself (C6), is marked as running the runtime's work (C8),
/// then runs `body`. Returns once the context is current there, with the thread's handle
/// and its `pthread_self()` (C7); `stopped` makes the error of a thread that could not start.
fn start_thread(
    ctx: &Context<'_>,
    name: &str,
    stopped: fn(String) -> Error,
    body: impl FnOnce(&'static Api) + Send + 'static,
) -> Result<(JoinHandle<()>, u64)> {
    let api = ctx.api();
    let raw_ctx = SendContext(ctx.as_raw());
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let raw_ctx = raw_ctx;
            // SAFETY: `start_thread` waits for this message while its caller borrows the
            // context, so the handle is live here; it is not used again after the message
            // (C6 needs it current).
            let bound = unsafe { api.set_current_context(raw_ctx.0) };
            let ok = bound.is_ok();
            let _ = ready_tx.send(bound.map_err(Error::from));
            if ok {
                // The runtime's thread for as long as it lives: the drop-error handler may
                // run here (a thread left running reports as things happen), and no call
                // of the crate may reach the runtime from it (C8).
                crate::typed::handle::enter_callback();
                body(api);
            }
        });
    let Ok(handle) = spawned else {
        return Err(stopped("the OS refused to start a thread".into()));
    };
    let ready = ready_rx
        .recv()
        .unwrap_or_else(|_| Err(stopped("it exited at start".into())));
    if let Err(e) = ready {
        let _ = handle.join();
        return Err(e);
    }
    // C7: the thread id is the thread's pthread_t, as pthread_self() returns it there.
    // `pthread_t` is `u64` on 64-bit Linux and narrower on 32-bit targets.
    #[allow(clippy::useless_conversion)]
    let thread_id = u64::from(handle.as_pthread_t());
    Ok((handle, thread_id))
}

/// A thread that runs host callbacks: it calls `aclrtProcessReport` in a loop with its
/// context current (C1 step 1, C6), and is the `threadId` streams subscribe to (C7).
///
/// # States
///
/// ```text
///  spawn() ──► Running ──subscribe(stream)──► serving ≥ 1 Subscribed (borrowed)
///                 │
///                 └── stop() / Drop ──► Joined (consumed; needs no Subscribed alive)
/// ```
///
/// Belongs to one device, that of its context (C3). `Send + Sync`.
///
/// ```no_run
/// # use ascend_typestate::Acl;
/// use ascend_typestate::{CallbackMode, ReportThread};
/// # let acl = Acl::init()?;
/// # let device = acl.set_device(0)?;
/// let ctx = device.create_context()?;
/// let report = ReportThread::spawn(&ctx)?;
/// let stream = report.subscribe(ctx.create_stream()?)?;
/// stream.launch(CallbackMode::Blocking, || println!("the stream reached this point"))?;
/// let stream = stream.unsubscribe()?;    // after every callback has run (C1 step 5)
/// stream.destroy()?;
/// report.stop()?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
///
/// # The flow (C1), in types
///
/// ```text
///  ReportThread::spawn(&ctx)      (1) a thread loops on aclrtProcessReport, ctx current (C6)
///        │
///  report.subscribe(stream) ────► Subscribed   (2) aclrtSubscribeReport(thread, stream) (C2, C3, C7)
///        │                          │  (3) tasks on the stream (Subscribed derefs to Stream)
///        │                          │  (4) launch(mode, closure): runs once on the report thread (C5)
///        │                          ▼
///        │                  unsubscribe() ──► Stream  (5) after the stream's tasks and
///        │                                               callbacks are done (C1, C9)
///  report.stop()   (joins; does not compile while a Subscribed borrows the thread)
/// ```
///
/// * `launch` exists only on [`Subscribed`] (C5); a plain [`Stream`] has none.
/// * `subscribe` takes the stream by value and `Subscribed` has no `subscribe`, so a stream
///   cannot be subscribed twice (C2).
/// * A stream of another device than the report thread's is [`Error::DeviceMismatch`] (C3:
///   a run-time check, because streams carry no device brand).
/// * More than 1024 report threads is [`Error::TooManyReportThreads`] (C4).
/// * Callbacks are `FnOnce() + Send + 'static` closures that receive nothing: no handle to
///   call the runtime with (C8). A handle smuggled in anyway is refused with
///   [`Error::InsideCallback`] by the typed API (and flagged C8 by the simulator). A panic is
///   caught at the FFI boundary, never unwinds into C, and is reported by
///   [`ReportThread::take_panics`] and [`ReportThread::stop`].
/// * Nothing launched is lost or run twice: each callback holds one of its subscription's
///   slots, allocated at `subscribe` (their number is the subscription's capacity, 64 unless
///   [`ReportThread::subscribe_with_capacity`] says otherwise; a launch beyond it is
///   [`Error::CallbackCapacity`], never an allocation); its closure is stored once (in the
///   slot, or boxed when large) and taken by the only run of its trampoline; `unsubscribe` waits until every callback launched on the
///   stream has run, and `stop` does not compile while a stream is subscribed. A leaked
///   (`mem::forget`) [`Subscribed`] leaves its stream subscribed: `stop` then returns
///   [`Error::LiveChildren`] and the thread keeps serving it for the life of the process.
/// * A failed `aclrtProcessReport` does not end the thread (callbacks may be waiting): the
///   loop goes on, and [`ReportThread::stop`] returns the failure.
/// * A report thread whose `aclrtProcessReport` keeps failing cannot run callbacks: a
///   blocking one then holds its stream, like a kernel that never ends. `unsubscribe` gives
///   up with [`Error::ReportThreadFailing`]; any other wait for that stream (its
///   synchronisation, the device's, an event or async scope that synchronises it) waits
///   until the runtime recovers. Bound such waits with `synchronize_with` where a failing
///   runtime must not stall the host.
pub struct ReportThread<'ctx> {
    ctx: &'ctx Context<'ctx>,
    thread_id: u64,
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
    /// `stop` ran: `Drop` has nothing left to do.
    stopped: bool,
}

impl<'ctx> ReportThread<'ctx> {
    /// Starts a report thread for `ctx`'s device.
    pub fn spawn(ctx: &'ctx Context<'ctx>) -> Result<ReportThread<'ctx>> {
        crate::typed::handle::refuse_inside_callback()?;
        let reserved = REPORT_THREADS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < MAX_REPORT_THREADS).then_some(n + 1)
        });
        if reserved.is_err() {
            return Err(Error::TooManyReportThreads {
                limit: MAX_REPORT_THREADS,
            });
        }
        let release_slot = || {
            REPORT_THREADS.fetch_sub(1, Ordering::AcqRel);
        };
        let shared = Arc::new(Shared::default());
        let thread_shared = Arc::clone(&shared);
        let started = start_thread(ctx, "acl-report", Error::ReportThreadStopped, move |api| {
            // SAFETY: this thread is the report thread its streams subscribe (C7); the
            // callbacks it runs were launched by `Subscribed::launch`, under its contract.
            let process = || unsafe { api.process_report(POLL_MS) };
            serve(&thread_shared, process, std::thread::park_timeout);
            thread_shared.exited.store(true, Ordering::Release);
        });
        let (handle, thread_id) = match started {
            Ok(started) => started,
            Err(e) => {
                release_slot();
                return Err(e);
            }
        };
        ctx.adopt();
        Ok(ReportThread {
            ctx,
            thread_id,
            shared,
            handle: Some(handle),
            stopped: false,
        })
    }

    /// The `threadId` given to `aclrtSubscribeReport` (the thread's `pthread_self()`, C7).
    pub fn thread_id(&self) -> u64 {
        self.thread_id
    }

    /// The device this thread serves (C3).
    pub fn device_id(&self) -> i32 {
        self.ctx.device_id()
    }

    /// `aclrtSubscribeReport` (C1, C2): `stream`'s callbacks run on this thread. The stream
    /// must be of this thread's device ([`Error::DeviceMismatch`], C3).
    /// On failure the error is returned and the stream goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_subscribe`](Self::try_subscribe) gives it back instead, for a caller who wants to retry.
    pub fn subscribe<'s>(&self, stream: Stream<'s>) -> Result<Subscribed<'_, 's>> {
        self.try_subscribe(stream).map_err(Error::from)
    }

    /// `aclrtSubscribeReport(thread, stream)` (C1 step 2): callbacks launched on the stream
    /// run on this thread. The stream must be of this thread's device (C3); on failure it is
    /// given back. The subscription holds up to [`DEFAULT_CALLBACK_CAPACITY`] callbacks in
    /// flight ([`subscribe_with_capacity`](Self::subscribe_with_capacity) chooses).
    pub fn try_subscribe<'s>(
        &self,
        stream: Stream<'s>,
    ) -> Result<Subscribed<'_, 's>, Failed<Stream<'s>>> {
        self.try_subscribe_with_capacity(stream, DEFAULT_CALLBACK_CAPACITY)
    }

    /// As [`subscribe`](Self::subscribe), for a subscription that holds up to `capacity`
    /// callbacks in flight (1 to [`MAX_CALLBACK_CAPACITY`], else
    /// [`Error::InvalidArgument`]): its slots are allocated here, once, so that no launch
    /// allocates; a launch beyond them is [`Error::CallbackCapacity`].
    pub fn subscribe_with_capacity<'s>(
        &self,
        stream: Stream<'s>,
        capacity: usize,
    ) -> Result<Subscribed<'_, 's>> {
        self.try_subscribe_with_capacity(stream, capacity)
            .map_err(Error::from)
    }

    /// As [`try_subscribe`](Self::try_subscribe), with a capacity (see
    /// [`subscribe_with_capacity`](Self::subscribe_with_capacity)).
    pub fn try_subscribe_with_capacity<'s>(
        &self,
        stream: Stream<'s>,
        capacity: usize,
    ) -> Result<Subscribed<'_, 's>, Failed<Stream<'s>>> {
        if capacity == 0 || capacity > MAX_CALLBACK_CAPACITY {
            let e = Error::InvalidArgument(
                "a subscription holds 1 to MAX_CALLBACK_CAPACITY callbacks in flight",
            );
            return Err(Failed::new(e, stream));
        }
        let found = stream.context().device_id();
        if found != self.device_id() {
            let e = Error::DeviceMismatch {
                what: "the stream (C3)",
                expected: self.device_id(),
                found,
            };
            return Err(Failed::new(e, stream));
        }
        if let Err(e) = self.alive() {
            return Err(Failed::new(e, stream));
        }
        if let Err(e) = stream.context().claim(context::USES_CALLBACKS) {
            return Err(Failed::new(e, stream));
        }
        // Counted first: a subscription must never exist uncounted (`stop` reads it).
        self.shared.subscriptions.fetch_add(1, Ordering::AcqRel);
        let subscribed = stream.bind().and_then(|()| {
            // SAFETY: the stream is live (owned) and its context current; the thread id is a
            // running thread that processes reports until `stop`, which cannot happen while
            // the returned `Subscribed` borrows `self`.
            let raw = unsafe {
                self.ctx
                    .api()
                    .subscribe_report(self.thread_id, stream.as_raw())
            };
            Ok(raw?)
        });
        match subscribed {
            Ok(()) => Ok(Subscribed {
                stream: ManuallyDrop::new(stream),
                report: self,
                flight: ManuallyDrop::new(flight::Flight::new(Arc::clone(&self.shared), capacity)),
            }),
            Err(e) => {
                self.shared.subscriptions.fetch_sub(1, Ordering::AcqRel);
                Err(Failed::new(e, stream))
            }
        }
    }

    /// The thread still runs callbacks (its loop ends only at `stop`; this catches a thread
    /// that died, which would leave launched callbacks waiting forever).
    #[inline(always)]
    fn alive(&self) -> Result<()> {
        self.shared.alive()
    }

    /// The messages of callbacks that panicked since the last call (caught at the FFI
    /// boundary).
    pub fn take_panics(&self) -> Vec<String> {
        std::mem::take(&mut *self.shared.panics.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn shut_down(&mut self) -> Result<()> {
        self.stopped = true;
        // A leaked `Subscribed`'s stream keeps the thread serving, with its slot (C4, C7); a
        // drop by one of its own callbacks is unreachable without one, kept as a guard.
        worker::shut_down(
            &*self.shared,
            &mut self.handle,
            self.ctx,
            &worker::Names {
                left_running: "ReportThread (left running)",
                further: "ReportThread (a further error)",
                panicked: || Error::ReportThreadStopped("the report thread panicked".into()),
            },
            || {
                REPORT_THREADS.fetch_sub(1, Ordering::AcqRel);
            },
        )
    }

    /// Stops and joins the thread. Does not compile while a stream is subscribed to it.
    /// Returns the first error it kept: an `aclrtProcessReport` failure (the loop goes on
    /// after one, so that no callback is stranded), or [`Error::CallbackPanicked`] for
    /// panics not yet taken; the others go to the
    /// [drop-error handler](crate::set_drop_error_handler).
    ///
    /// If a [`Subscribed`] was leaked (`mem::forget`), its stream is still subscribed to the
    /// thread: the thread is then left running for the life of the process, serving it, and
    /// this returns [`Error::LiveChildren`].
    pub fn stop(mut self) -> Result<()> {
        self.shut_down()
    }
}

impl Drop for ReportThread<'_> {
    fn drop(&mut self) {
        if !self.stopped {
            report_drop_error("ReportThread", self.shut_down());
        }
    }
}

impl std::fmt::Debug for ReportThread<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportThread")
            .field("thread_id", &self.thread_id)
            .finish()
    }
}

/// The error of a launch or subscription on a report thread whose loop has ended.
#[cold]
#[inline(never)]
fn loop_ended() -> Error {
    Error::ReportThreadStopped("its loop has ended".to_owned())
}

/// The report thread's loop: run callbacks until asked to stop with none outstanding.
/// `process` is `aclrtProcessReport` (which runs the callbacks queued), `pause` waits before
/// the next call (`stop` unparks the thread, so stopping an idle thread takes no wait).
pub(crate) fn serve(
    shared: &Shared,
    mut process: impl FnMut() -> Result<(), CallError>,
    pause: impl Fn(Duration),
) {
    // While no stream is subscribed the runtime answers at once: back off from 0.1 ms to
    // POLL_MS, so that idle report threads do not spin, and start again once one is.
    let mut idle = Duration::from_micros(100);
    let poll = Duration::from_millis(POLL_MS.unsigned_abs().into());
    loop {
        let started = std::time::Instant::now();
        // Read before the call: a callback queued now keeps its stream subscribed until this
        // thread runs it, so "not subscribed" is then a failure. (Read after the call, it
        // could count a launch that came after the runtime's answer; `outstanding` would
        // count a launch the runtime is about to refuse, before an unsubscribe.)
        let waiting = shared.enqueued.load(Ordering::Acquire) > 0;
        match process() {
            Ok(()) => {
                shared.good_calls.fetch_add(1, Ordering::Release);
                idle = Duration::from_micros(100);
            }
            Err(CallError::Failed {
                code: AclError::RtReportTimeout,
                ..
            }) => {
                shared.good_calls.fetch_add(1, Ordering::Release);
                if crate::sys::sync::elapsed(started) < poll / 2 {
                    // A timeout that did not wait: back off rather than spin.
                    pause(idle);
                    idle = (idle * 2).min(poll);
                } else {
                    idle = Duration::from_micros(100);
                }
            }
            // Not subscribed while callbacks were queued: they were launched on a
            // subscribed stream, so the runtime lost the subscription, and they cannot run.
            Err(
                e @ CallError::Failed {
                    code: AclError::RtThreadSubscribe,
                    ..
                },
            ) if waiting => {
                shared.failed_calls.fetch_add(1, Ordering::Release);
                shared.keep_failure(e.into());
                pause(idle);
                idle = (idle * 2).min(poll);
            }
            // Not subscribed (yet, or any more): nothing can arrive for now (C6).
            Err(CallError::Failed {
                code: AclError::RtThreadSubscribe,
                ..
            }) => {
                shared.good_calls.fetch_add(1, Ordering::Release);
                pause(idle);
                idle = (idle * 2).min(poll);
            }
            // Anything else is kept for `stop`, and the loop goes on: callbacks may be waiting,
            // and a stream whose blocking callback never runs would hang its synchronisation.
            Err(e) => {
                shared.failed_calls.fetch_add(1, Ordering::Release);
                shared.keep_failure(e.into());
                pause(idle);
                idle = (idle * 2).min(poll);
            }
        }
        if shared.should_exit() {
            return;
        }
    }
}
