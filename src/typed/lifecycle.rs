//! The process's runtime lifecycle (P2) as a state machine of its own: one `Acl` alive at a
//! time, initialisation and finalisation serialised, a failed start's clean-up remembered,
//! and the shared runtime of [`Acl::shared`](crate::Acl::shared) initialised once. The
//! runtime calls are behind [`RuntimeCalls`], so that the library runs this code on the
//! runtime and the loom models (`src/typed/loom/lifecycle.rs`) on a model of it.

use crate::sys::sync::{AtomicBool, InitOnce, Initialised, Mutex, Ordering};
use crate::typed::error::{Error, Result};

/// The calls a start and an end of the runtime make.
pub(crate) trait RuntimeCalls {
    /// The loaded library (`&'static Api`).
    type Library: Copy;
    /// Loads the library, or finds it loaded.
    fn load(&self) -> Result<Self::Library>;
    /// What is refused before `aclInit`: a call from a callback (C8), a configuration file
    /// `aclInit` cannot read.
    fn check(&self) -> Result<()>;
    /// `aclInit`. Called under the lifecycle lock with no `Acl` alive and the runtime not
    /// initialised.
    fn init(&self, library: Self::Library) -> Result<()>;
    /// `aclrtSetOpWaitTimeout(0)` (P3a), right after `init`, nothing created yet.
    fn disarm(&self, library: Self::Library) -> Result<()>;
    /// `aclFinalize`. Called under the lifecycle lock, with nothing created in the runtime
    /// (after a failed start) or the token's children all released (an end).
    fn finalize(&self, library: Self::Library) -> Result<()>;
}

/// The process-wide lifecycle state (P2).
#[derive(Debug)]
pub(crate) struct Lifecycle {
    /// Serialises initialisation and finalisation, so that no caller sees an initialisation
    /// in progress (or failing) as a live `Acl`. No user code runs under it.
    lock: Mutex<()>,
    /// Whether an `Acl` is alive in this process. Changed only under `lock`.
    alive: AtomicBool,
    /// A failed start left the runtime initialised: its `aclFinalize` failed too. The next
    /// start continues from there instead of calling `aclInit` again (which would answer
    /// 100002 forever). Changed only under `lock`.
    initialised_without_token: AtomicBool,
}

/// Where a failed start's clean-up errors go, for the caller to report once no lock is held
/// (the drop-error handler is user code, which may call in here).
pub(crate) type CleanupErrors = Vec<(&'static str, Error)>;

impl Lifecycle {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Lifecycle {
        Lifecycle {
            lock: Mutex::new(()),
            alive: AtomicBool::new(false),
            initialised_without_token: AtomicBool::new(false),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Lifecycle {
        Lifecycle {
            lock: Mutex::new(()),
            alive: AtomicBool::new(false),
            initialised_without_token: AtomicBool::new(false),
        }
    }

    /// Starts the runtime for a new token: [`Error::AlreadyInitialized`] while one is alive.
    /// On success the caller makes the token, which [`end`](Self::end) must end.
    pub(crate) fn start<C: RuntimeCalls>(
        &self,
        calls: &C,
        cleanup_errors: &mut CleanupErrors,
    ) -> Result<C::Library> {
        // A poisoned lock only means a panic elsewhere; the flags are still consistent.
        let _lifecycle = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.alive.load(Ordering::Acquire) {
            return Err(Error::AlreadyInitialized);
        }
        let library = calls.load()?;
        self.start_locked(calls, library, cleanup_errors)?;
        self.alive.store(true, Ordering::Release);
        Ok(library)
    }

    /// `aclInit`, then `aclrtSetOpWaitTimeout(0)`: typed waits never time out (P3). A stream
    /// wait that ends by timeout lets the tasks behind it run without the event, which no
    /// typed guarantee survives (a late record leaves the event's flag set while its state
    /// says *Reset*; a read is no longer ordered after its writer). The runtime's default is
    /// already "never"; setting it makes that independent of the runtime's version and
    /// configuration. Hangs are bounded on the host instead (`synchronize_with`), which
    /// orders nothing and so cannot break anything.
    ///
    /// Called under the lock with no `Acl` alive.
    fn start_locked<C: RuntimeCalls>(
        &self,
        calls: &C,
        library: C::Library,
        cleanup_errors: &mut CleanupErrors,
    ) -> Result<()> {
        calls.check()?;
        if !self.initialised_without_token.load(Ordering::Acquire) {
            calls.init(library)?;
        }
        // From here the runtime is initialised, with nothing created in it.
        let Err(e) = calls.disarm(library) else {
            self.initialised_without_token
                .store(false, Ordering::Release);
            return Ok(());
        };
        // No token may be returned with the timeout armed (P3a): finalize, trying twice.
        for attempt in 0..2 {
            match calls.finalize(library) {
                Ok(()) => {
                    self.initialised_without_token
                        .store(false, Ordering::Release);
                    return Err(e);
                }
                Err(error) => cleanup_errors.push((
                    if attempt == 0 {
                        "Acl::init (finalize after a failed start)"
                    } else {
                        "Acl::init (finalize after a failed start, again; the next init continues from it)"
                    },
                    error,
                )),
            }
        }
        self.initialised_without_token
            .store(true, Ordering::Release);
        Err(e)
    }

    /// Ends the runtime of the token that [`start`](Self::start) made: `may_release` (no
    /// device leaked, not in a callback), then `aclFinalize`. On failure the token stays
    /// alive.
    pub(crate) fn end<C: RuntimeCalls>(
        &self,
        calls: &C,
        library: C::Library,
        may_release: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let _lifecycle = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        may_release()?;
        calls.finalize(library)?;
        self.alive.store(false, Ordering::Release);
        Ok(())
    }

    /// The shared runtime in `cell`, started by the first call that succeeds (`make` turns
    /// the started library into the token kept there, never ended); every other call gets
    /// the same value, found ([`Initialised::Before`]: the caller checks its options against it).
    pub(crate) fn shared<'c, C: RuntimeCalls, T>(
        &self,
        cell: &'c InitOnce<T>,
        calls: &C,
        make: impl FnOnce(C::Library) -> T,
        cleanup_errors: &mut CleanupErrors,
    ) -> Result<(&'c T, Initialised)> {
        cell.get_or_try_init(|| self.start(calls, cleanup_errors).map(make))
    }
}
