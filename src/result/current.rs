//! Which context the typed API last made current on each thread (D6), kept here, beside
//! the calls that change the current context behind its back, so that those calls can
//! invalidate it without this layer knowing the typed one.

use std::cell::Cell;

use crate::sys::sync::thread_local;

#[cfg(not(loom))]
thread_local! {
    /// The id of the context the typed API last made current on this thread (0: unknown).
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}
// Under loom, one per model thread (loom's macro takes no `const` initialiser).
#[cfg(loom)]
thread_local! {
    static CURRENT: Cell<u64> = Cell::new(0);
}

/// The value meaning "this thread is running a host callback" (C8).
pub(crate) const INSIDE_CALLBACK: u64 = u64::MAX;

/// The cached id, [`INSIDE_CALLBACK`], or 0.
#[inline(always)]
pub(crate) fn get() -> u64 {
    CURRENT.with(Cell::get)
}

/// Records that the context with this id is now current (or [`INSIDE_CALLBACK`]); returns
/// the previous value.
#[inline(always)]
pub(crate) fn replace(id: u64) -> u64 {
    CURRENT.with(|c| c.replace(id))
}

/// Forgets which context is current on this thread, after a runtime call that changed it:
/// `aclrtSetDevice`, `aclrtResetDevice(Force)`, `aclrtCreateContext`,
/// `aclrtDestroyContext`, `aclrtSetCurrentContext`. The callback mark stays.
pub(crate) fn forget() {
    CURRENT.with(|c| {
        if c.get() != INSIDE_CALLBACK {
            c.set(0);
        }
    });
}
