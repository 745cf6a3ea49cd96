//! How many synchronisations failed in each context: a task that fails when it runs is
//! reported once, to whichever synchronisation sees it first (P3b), which need not be the
//! one of the typed scope that issued it. A scope that must know whether one of its tasks may
//! have failed (DV6: the frames its media tasks wrote) compares these counts around its work.
//!
//! The context is the one the typed API last made current on the calling thread (D6, the
//! binding cache of [`current`](super::current)), which every typed synchronisation binds
//! first; a device's synchronisation counts in every context, as it reports the tasks of all
//! the contexts on the device. Contexts share 64 counters by their ids, so another context's
//! failure may count too (a scope then forgets what it need not: never the other way round).

use std::sync::atomic::{AtomicU64, Ordering};

use super::current;

const COUNTERS: usize = 64;

/// Not in the loom facade: no model covers it, and loom's atomics have no `const` constructor.
static FAILED: [AtomicU64; COUNTERS] = [const { AtomicU64::new(0) }; COUNTERS];

fn counter(context_id: u64) -> &'static AtomicU64 {
    // The remainder is below 64: the index is in range.
    &FAILED[(context_id % COUNTERS as u64) as usize]
}

/// Counts a failed synchronisation of a stream or event in the calling thread's current
/// context (the typed API binds the handle's context first, D6); a failed synchronisation of
/// the device in every context, as it reports the tasks of every context on the device.
pub(crate) fn note_failed_synchronisation(call: &str) {
    if call.starts_with("aclrtSynchronizeDevice") {
        for counter in &FAILED {
            counter.fetch_add(1, Ordering::AcqRel);
        }
    } else {
        counter(current::get()).fetch_add(1, Ordering::AcqRel);
    }
}

/// The failed synchronisations counted so far for the context with this id.
pub(crate) fn failed_synchronisations(context_id: u64) -> u64 {
    counter(context_id).load(Ordering::Acquire)
}
