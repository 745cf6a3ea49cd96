//! The deferred release of a model dropped while executions are pending (MD7):
//! `ModelShared::defer` on the model's thread while pipeline slots on other threads prove
//! their frames done (`end`). The library's own type; the release is a counting closure
//! (the real one unloads the model).

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::check;
use crate::typed::model::shared::ModelShared;

/// Two executions pending, each ended on its own thread while the model is dropped: the
/// release runs exactly once, and only once both executions ended.
#[test]
fn md7_a_dropped_model_is_released_once_after_its_last_execution() {
    check(4, || {
        let shared = std::sync::Arc::new(ModelShared::new());
        for _ in 0..2 {
            shared
                .begin(std::ptr::null_mut())
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let (ended, released) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let slots: Vec<_> = (0..2)
            .map(|_| {
                let (shared, ended) = (std::sync::Arc::clone(&shared), Arc::clone(&ended));
                thread::spawn(move || {
                    ended.fetch_add(1, SeqCst);
                    shared.end();
                })
            })
            .collect();
        let release = {
            let (ended, released) = (Arc::clone(&ended), Arc::clone(&released));
            Box::new(move || {
                assert_eq!(ended.load(SeqCst), 2, "released with an execution pending");
                released.fetch_add(1, SeqCst);
            })
        };
        shared.defer(release);
        for slot in slots {
            slot.join().unwrap_or_else(|_| panic!("slot"));
        }
        assert_eq!(released.load(SeqCst), 1);
        assert_eq!(shared.pending(), 0);
    });
}
