//! The synchronisation primitives of the crate's hand-written concurrent state, in one place:
//! `std`'s in every normal build (plain re-exports, so they cost nothing), `loom`'s in a
//! model-checking build (`RUSTFLAGS="--cfg loom"`), where the tests of `src/typed/loom/` run every
//! interleaving of a few threads over the same code the library runs.
//!
//! Everything shared between threads that the models cover goes through here: the atomics,
//! the locks, the cells a slot's owner writes, the statics (through [`sync_static!`], since
//! loom's types have no `const` constructor and must be fresh for every execution), and
//! the per-thread binding cache (through [`thread_local!`]).

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard, OnceLock, RwLock};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard, RwLock};
#[cfg(loom)]
pub(crate) use loom::thread_local;

/// A `static` of the facade's types: a plain `static` in a normal build; under loom a lazy
/// one, created afresh for every execution of a model (loom's `lazy_static!`).
macro_rules! sync_static {
    ($(#[$attr:meta])* static $name:ident: $t:ty = $init:expr;) => {
        #[cfg(not(loom))]
        $(#[$attr])*
        static $name: $t = $init;
        #[cfg(loom)]
        loom::lazy_static! {
            $(#[$attr])*
            static ref $name: $t = $init;
        }
    };
    ($(#[$attr:meta])* pub(crate) static $name:ident: $t:ty = $init:expr;) => {
        #[cfg(not(loom))]
        $(#[$attr])*
        pub(crate) static $name: $t = $init;
        #[cfg(loom)]
        loom::lazy_static! {
            $(#[$attr])*
            pub(crate) static ref $name: $t = $init;
        }
    };
}
pub(crate) use sync_static;

/// The time since `start`. Under loom, zero: time does not pass in a model, and code that
/// branches on it must take the same branch in every execution (loom replays them).
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn elapsed(start: std::time::Instant) -> std::time::Duration {
    start.elapsed()
}

/// The time since `start`: zero under loom (see the normal build's).
#[cfg(loom)]
pub(crate) fn elapsed(_start: std::time::Instant) -> std::time::Duration {
    std::time::Duration::ZERO
}

/// `std::cell::UnsafeCell` with loom's access methods (`with`, `with_mut`), so that loom sees
/// every access to the data and reports two that race. In a normal build each method is the
/// raw pointer access it wraps, inlined.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a pointer to the data, to read it.
    #[inline(always)]
    #[allow(dead_code, reason = "loom's API, for the cells that are only read")]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a pointer to the data, to write it.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Under loom, a model of `std::sync::OnceLock` (which loom lacks), built from loom's
/// primitives so that its synchronisation is explored: the value is written once, under the
/// lock, and published by a release store of `set`.
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct OnceLock<T> {
    lock: Mutex<()>,
    set: AtomicBool,
    value: UnsafeCell<Option<T>>,
}

#[cfg(loom)]
impl<T> OnceLock<T> {
    pub(crate) fn new() -> OnceLock<T> {
        OnceLock {
            lock: Mutex::new(()),
            set: AtomicBool::new(false),
            value: UnsafeCell::new(None),
        }
    }

    pub(crate) fn get(&self) -> Option<&T> {
        if !self.set.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: `set` is stored (release) only after the one write of the value, which
        // is never written again: this is a read of a published, immutable value.
        self.value.with(|value| unsafe { (*value).as_ref() })
    }

    pub(crate) fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
        {
            let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
            if !self.set.load(Ordering::Acquire) {
                let value = init();
                // SAFETY: the only write, under the lock, before `set` publishes it; no
                // reader looks at the value before `set` is true.
                self.value.with_mut(|slot| unsafe { *slot = Some(value) });
                self.set.store(true, Ordering::Release);
            }
        }
        self.value.with(|value| {
            // SAFETY: set above or before, never written again.
            let value = unsafe { &*value };
            // SAFETY: `set` is true, stored only after the value was.
            unsafe { value.as_ref().unwrap_unchecked() }
        })
    }
}

/// A value initialised by the first caller that succeeds, for the life of the process (the
/// loaded library, `Acl::shared`'s runtime): concurrent first callers run `init` one at a
/// time, a failed `init` leaves it empty for the next caller, and every caller after the
/// first success gets the same value without taking the lock.
#[derive(Debug)]
pub(crate) struct InitOnce<T> {
    value: OnceLock<T>,
    /// Serialises the first initialisations (`OnceLock` has no fallible `get_or_try_init`
    /// on stable).
    first: Mutex<()>,
}

/// Whether [`InitOnce::get_or_try_init`] returned a value this call initialised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Initialised {
    /// This call ran `init`.
    Here,
    /// An earlier call had (the caller checks its own request against it).
    Before,
}

impl<T> InitOnce<T> {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> InitOnce<T> {
        InitOnce {
            value: OnceLock::new(),
            first: Mutex::new(()),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> InitOnce<T> {
        InitOnce {
            value: OnceLock::new(),
            first: Mutex::new(()),
        }
    }

    /// The value, if initialised.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        self.value.get()
    }

    /// The value, initialised by `init` if no call has yet; `init`'s error otherwise, which
    /// leaves it empty. `init` runs under the lock, so it runs at most once successfully.
    pub(crate) fn get_or_try_init<E>(
        &self,
        init: impl FnOnce() -> Result<T, E>,
    ) -> Result<(&T, Initialised), E> {
        if let Some(value) = self.value.get() {
            return Ok((value, Initialised::Before));
        }
        // A poisoned lock only means an `init` panicked; the value is still consistent.
        let _first = self.first.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(value) = self.value.get() {
            return Ok((value, Initialised::Before));
        }
        let value = init()?;
        // Set under the lock, so never already set here.
        Ok((self.value.get_or_init(move || value), Initialised::Here))
    }
}
