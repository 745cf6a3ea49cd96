//! What a stream and its context share with other threads besides joins: a stream's reset
//! counts (E5: `ResetCounts`, marked by the stream's thread once a reset is issued,
//! synchronised there and through an event on another thread) and a context's exclusive use
//! (S6, C1: `ExclusiveUse`, claimed by a subscription and a stop-on-failure stream at once).
//! The library's own types; the runtime is a count of reset tasks issued and run.

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

use super::check;
use crate::typed::join_state::{ExclusiveUse, ResetCounts, STOPS_ON_FAILURE, USES_CALLBACKS};

/// One stream's reset tasks: issued, and run by a synchronisation.
#[derive(Default)]
struct Queue {
    issued: usize,
    done: usize,
}

struct Stream {
    queue: Mutex<Queue>,
    resets: ResetCounts,
}

impl Stream {
    fn queue(&self) -> loom::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An event reset issued, then marked (`Stream::mark_reset_pending` after the call).
    fn reset(&self) {
        self.queue().issued += 1;
        self.resets.mark();
    }

    /// `Stream::synchronize` (or `synchronize_shared`, from an event's thread), as
    /// `synchronize_counting_resets` calls the counts around `aclrtSynchronizeStream`:
    /// what was issued when the call began is done when it returns.
    fn synchronize(&self) {
        let resets = self.resets.issued();
        {
            let mut queue = self.queue();
            queue.done = queue.issued;
        }
        self.resets.synchronized(resets);
    }

    /// The invariant: resets counted done are done.
    fn check(&self) {
        let marked = self.resets.issued();
        if !self.resets.pending() {
            assert!(
                self.queue().done >= usize::try_from(marked).unwrap_or(usize::MAX),
                "a reset counted done before it ran (E5)"
            );
        }
    }
}

/// The stream's thread issues resets and synchronises while an event's release on another
/// thread synchronises the stream too (`Stream::synchronize_shared`): whenever no reset is
/// pending by the counts, every reset marked is done, whichever synchronisation finished last
/// (an older one may store an older count: pending again, never the reverse).
#[test]
fn e5_a_reset_counts_as_done_only_once_a_synchronisation_covered_it() {
    check(4, || {
        let stream = Arc::new(Stream {
            queue: Mutex::new(Queue::default()),
            resets: ResetCounts::new(),
        });
        let event = {
            let stream = Arc::clone(&stream);
            thread::spawn(move || {
                stream.check();
                stream.synchronize();
                stream.check();
            })
        };
        stream.reset();
        stream.check();
        stream.synchronize();
        stream.check();
        stream.reset();
        stream.check();
        event.join().unwrap_or_else(|_| panic!("event thread"));
        stream.synchronize();
        assert!(!stream.resets.pending());
        stream.check();
    });
}

/// A subscription and a stop-on-failure stream claim one context at once (S6, C1): exactly
/// one of them gets it, and the context says so; the same use claimed twice is granted twice.
#[test]
fn s6_c1_a_context_is_claimed_for_one_use_only() {
    check(4, || {
        let uses = Arc::new(ExclusiveUse::new());
        let callbacks_first = Arc::new(AtomicBool::new(false));
        let other = {
            let (uses, first) = (Arc::clone(&uses), Arc::clone(&callbacks_first));
            thread::spawn(move || {
                let granted = uses.claim(USES_CALLBACKS);
                first.store(granted, SeqCst);
                assert!(!granted || uses.claim(USES_CALLBACKS), "the same use again");
            })
        };
        let stops = uses.claim(STOPS_ON_FAILURE);
        other.join().unwrap_or_else(|_| panic!("other"));
        let callbacks = callbacks_first.load(SeqCst);
        assert!(stops != callbacks, "both uses granted, or neither");
        assert_eq!(uses.is(STOPS_ON_FAILURE), stops);
        assert_eq!(uses.is(USES_CALLBACKS), callbacks);
    });
}
