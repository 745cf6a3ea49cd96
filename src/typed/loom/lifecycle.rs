//! The runtime's lifecycle (P2): first calls of `Acl::shared` racing each other, an owned
//! `Acl::init` and its `finalize` racing them, a failed start (its clean-up failing too)
//! retried. The library's own `Lifecycle` and `InitOnce` (the same code as
//! `Acl::shared_with`, `Acl::init_with` and `Acl::finalize`, and as the library loader's
//! `load_global`); the runtime is a model that asserts the rules it would answer with an
//! error: `aclInit` twice (100002), `aclFinalize` when not initialised (100037). Not
//! modelled: loading the library (a constant here), the configuration-file check.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::check;
use crate::sys::sync::{InitOnce, Initialised};
use crate::typed::error::{Error, Result};
use crate::typed::lifecycle::{CleanupErrors, Lifecycle, RuntimeCalls};

/// The runtime's process state, with faults to inject.
#[derive(Default)]
struct Runtime {
    initialised: AtomicBool,
    inits: AtomicUsize,
    /// The next `disarm` calls that fail.
    failing_disarms: AtomicUsize,
    /// The next `finalize` calls that fail.
    failing_finalizes: AtomicUsize,
}

/// Takes one of `faults` if any is left.
fn fault(faults: &AtomicUsize) -> bool {
    faults
        .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

fn injected() -> Error {
    Error::InvalidArgument("an injected runtime failure")
}

impl RuntimeCalls for Runtime {
    type Library = usize;

    fn load(&self) -> Result<usize> {
        Ok(1)
    }

    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn init(&self, _: usize) -> Result<()> {
        assert!(
            !self.initialised.swap(true, SeqCst),
            "aclInit twice: 100002 (P2)"
        );
        self.inits.fetch_add(1, SeqCst);
        Ok(())
    }

    fn disarm(&self, _: usize) -> Result<()> {
        assert!(self.initialised.load(SeqCst), "a call before aclInit (P1)");
        if fault(&self.failing_disarms) {
            return Err(injected());
        }
        Ok(())
    }

    fn finalize(&self, _: usize) -> Result<()> {
        assert!(
            self.initialised.load(SeqCst),
            "aclFinalize twice: 100037 (P2)"
        );
        if fault(&self.failing_finalizes) {
            return Err(injected());
        }
        self.initialised.store(false, SeqCst);
        Ok(())
    }
}

/// What a process shares: the lifecycle, `Acl::shared`'s cell, the runtime.
struct Process {
    lifecycle: Lifecycle,
    shared: InitOnce<usize>,
    runtime: Runtime,
    /// Tokens alive (owned and shared): never more than one (P2).
    tokens: AtomicUsize,
}

impl Process {
    fn new(runtime: Runtime) -> Arc<Process> {
        Arc::new(Process {
            lifecycle: Lifecycle::new(),
            shared: InitOnce::new(),
            runtime,
            tokens: AtomicUsize::new(0),
        })
    }

    /// `Acl::shared`: the value, and whether this call started the runtime.
    fn shared(&self) -> Result<(&usize, Initialised)> {
        let mut cleanup = CleanupErrors::new();
        let make = |library| {
            assert_eq!(self.tokens.fetch_add(1, SeqCst), 0, "two live tokens (P2)");
            library
        };
        self.lifecycle
            .shared(&self.shared, &self.runtime, make, &mut cleanup)
    }

    /// `Acl::init` then, if it succeeded, `Acl::finalize`.
    fn init_and_finalize(&self) -> Result<()> {
        let mut cleanup = CleanupErrors::new();
        let library = self.lifecycle.start(&self.runtime, &mut cleanup)?;
        assert_eq!(self.tokens.fetch_add(1, SeqCst), 0, "two live tokens (P2)");
        assert!(self.runtime.initialised.load(SeqCst));
        self.tokens.fetch_sub(1, SeqCst);
        self.lifecycle
            .end(&self.runtime, library, || Ok(()))
            .unwrap_or_else(|e| panic!("finalize: {e}"));
        Ok(())
    }
}

/// Two first calls of `Acl::shared` at once: one `aclInit`, both get the same runtime,
/// exactly one of them started it.
#[test]
fn p2_first_calls_of_acl_shared_initialise_once() {
    check(4, || {
        let process = Process::new(Runtime::default());
        let other = {
            let process = Arc::clone(&process);
            thread::spawn(move || {
                let (value, by) = process.shared().unwrap_or_else(|e| panic!("{e}"));
                (std::ptr::from_ref(value) as usize, by)
            })
        };
        let (value, by) = process.shared().unwrap_or_else(|e| panic!("{e}"));
        let (other_value, other_by) = other.join().unwrap_or_else(|_| panic!("other"));
        assert_eq!(std::ptr::from_ref(value) as usize, other_value);
        assert_eq!(
            [by, other_by]
                .iter()
                .filter(|b| **b == Initialised::Here)
                .count(),
            1
        );
        assert_eq!(process.runtime.inits.load(SeqCst), 1);
        assert!(process.runtime.initialised.load(SeqCst));
    });
}

/// An owned `Acl::init` + `finalize` racing two `Acl::shared` calls whose first start fails
/// (the wait timeout cannot be disarmed, and the clean-up's finalize fails twice, leaving
/// the runtime initialised): never two live tokens, never `aclInit` on an initialised
/// runtime nor `aclFinalize` on a finalized one; the failed start is continued, not
/// initialised again; `Acl::shared` either fails (another live token or the fault) or,
/// once it succeeds, stays.
#[test]
fn p2_an_owned_init_and_a_failed_shared_start_never_overlap() {
    check(4, || {
        let process = Process::new(Runtime {
            failing_disarms: AtomicUsize::new(1),
            failing_finalizes: AtomicUsize::new(2),
            ..Runtime::default()
        });
        let owner = {
            let process = Arc::clone(&process);
            thread::spawn(move || match process.init_and_finalize() {
                Ok(()) | Err(Error::AlreadyInitialized) => {}
                Err(Error::InvalidArgument(_)) => {}
                Err(other) => panic!("{other}"),
            })
        };
        let mut shared = None;
        for _ in 0..2 {
            match process.shared() {
                Ok((value, _)) => shared = Some(*value),
                Err(Error::AlreadyInitialized | Error::InvalidArgument(_)) => {}
                Err(other) => panic!("{other}"),
            }
        }
        owner.join().unwrap_or_else(|_| panic!("owner"));
        if shared.is_some() {
            assert!(process.runtime.initialised.load(SeqCst));
            assert_eq!(process.tokens.load(SeqCst), 1);
            assert!(process.shared.get().is_some());
        }
        assert!(process.runtime.inits.load(SeqCst) <= 2);
    });
}
