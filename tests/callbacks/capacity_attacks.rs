//! A subscription's capacity (its slots, one per callback in flight), attacked from safe
//! code: capacity 1 with a blocking callback, inline and boxed closures mixed to fill it,
//! refusals at the boundary (capacity and injected launch failures, drops that panic), the
//! wrap-around of the slot search, subscriptions moved between threads and dropped at full
//! capacity. Nothing launched may be lost or run twice, no refused closure may run, and
//! every refused one is dropped exactly once. Injected faults are process-wide: those tests
//! run in a child process (`support::isolated`).

use crate::support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use ascend_typestate::{CallbackMode, Error, ReportThread};
use support::callbacks::Bomb;
use support::isolated::isolated;
use support::sim::Session;

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A gate a blocking callback waits on (released by the test).
fn gate() -> (Arc<Barrier>, Arc<Barrier>) {
    let b = Arc::new(Barrier::new(2));
    (Arc::clone(&b), b)
}

/// Capacity 1: one blocking callback holds the only slot; every other launch is refused
/// (inline, boxed, zero-sized) and its closure dropped once, never run; once it has run,
/// the slot serves again, many times.
#[test]
fn capacity_one_with_a_blocking_callback() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let report = ReportThread::spawn(&device).unwrap();
        let stream = report
            .subscribe_with_capacity(device.create_stream().unwrap(), 1)
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let (g, gate) = gate();
        stream
            .launch(CallbackMode::Blocking, move || {
                g.wait();
            })
            .unwrap();
        for i in 0..10 {
            let counted = Counted(Arc::clone(&dropped));
            let r = Arc::clone(&ran);
            let refused = if i % 3 == 0 {
                let big = [7u8; 200];
                stream.launch(CallbackMode::NonBlocking, move || {
                    let _keep = (&counted, big);
                    r.fetch_add(1, Ordering::SeqCst);
                })
            } else if i % 3 == 1 {
                stream.launch(CallbackMode::Blocking, move || {
                    let _keep = &counted;
                    r.fetch_add(1, Ordering::SeqCst);
                })
            } else {
                drop((counted, r));
                stream.launch(CallbackMode::NonBlocking, || {})
            };
            assert!(
                matches!(refused, Err(Error::CallbackCapacity { capacity: 1 })),
                "{refused:?}"
            );
        }
        assert_eq!(dropped.load(Ordering::SeqCst), 10);
        assert_eq!(stream.pending_callbacks(), 1);
        gate.wait();
        stream.synchronize().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 0, "a refused closure ran");
        for _ in 0..200 {
            let r = Arc::clone(&ran);
            // Retry while the one slot is still held by the previous callback.
            loop {
                let r = Arc::clone(&r);
                match stream.launch(CallbackMode::Blocking, move || {
                    r.fetch_add(1, Ordering::SeqCst);
                }) {
                    Ok(()) => break,
                    Err(Error::CallbackCapacity { .. }) => std::thread::yield_now(),
                    Err(e) => panic!("{e:?}"),
                }
            }
        }
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 200);
        stream.destroy().unwrap();
        report.stop().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Exactly 48 bytes (inline), 49 bytes and an over-aligned closure (boxed), and zero-sized
/// ones fill a capacity of 8 together: the ninth is refused whatever its kind; each ran
/// closure ran once with its own data.
#[test]
fn inline_and_boxed_closures_fill_capacity_together() {
    #[repr(align(32))]
    struct Aligned(u64);
    let session = Session::start();
    {
        let device = session.default_device(0);
        let report = ReportThread::spawn(&device).unwrap();
        let stream = report
            .subscribe_with_capacity(device.create_stream().unwrap(), 8)
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::<u64>::new()));
        for round in 0..30u64 {
            let (g, gate) = gate();
            stream
                .launch(CallbackMode::Blocking, move || {
                    g.wait();
                })
                .unwrap();
            for k in 0..7u64 {
                let id = round * 100 + k;
                let s = Arc::clone(&seen);
                let launched = match k % 4 {
                    0 => {
                        // 8 (Arc) + 40 = 48 bytes: inline.
                        let pad = [id; 5];
                        stream.launch(CallbackMode::NonBlocking, move || {
                            s.lock().unwrap().push(pad[0] + pad[4] - id);
                        })
                    }
                    1 => {
                        // 8 + 41 bytes: boxed.
                        let pad = [id as u8; 41];
                        stream.launch(CallbackMode::NonBlocking, move || {
                            std::hint::black_box(&pad);
                            s.lock().unwrap().push(id);
                        })
                    }
                    2 => {
                        let a = Aligned(id);
                        stream.launch(CallbackMode::Blocking, move || {
                            s.lock().unwrap().push(a.0);
                        })
                    }
                    _ => {
                        s.lock().unwrap().push(id);
                        stream.launch(CallbackMode::NonBlocking, || {})
                    }
                };
                launched.unwrap();
            }
            assert_eq!(stream.pending_callbacks(), 8);
            let dropped = Arc::new(AtomicUsize::new(0));
            for kind in 0..3 {
                let counted = Counted(Arc::clone(&dropped));
                let refused = match kind {
                    0 => stream.launch(CallbackMode::NonBlocking, move || {
                        let _k = &counted;
                        panic!("a refused inline closure ran");
                    }),
                    1 => {
                        let big = [0u8; 100];
                        stream.launch(CallbackMode::NonBlocking, move || {
                            let _k = (&counted, big);
                            panic!("a refused boxed closure ran");
                        })
                    }
                    _ => {
                        let a = Aligned(1);
                        stream.launch(CallbackMode::NonBlocking, move || {
                            let _k = (&counted, &a);
                            panic!("a refused aligned closure ran");
                        })
                    }
                };
                assert!(
                    matches!(refused, Err(Error::CallbackCapacity { capacity: 8 })),
                    "{refused:?}"
                );
            }
            assert_eq!(dropped.load(Ordering::SeqCst), 3);
            gate.wait();
            stream.synchronize().unwrap();
            while stream.pending_callbacks() != 0 {
                std::thread::yield_now();
            }
        }
        let stream = stream.unsubscribe().unwrap();
        let mut seen = seen.lock().unwrap().clone();
        seen.sort_unstable();
        let mut expected: Vec<u64> = (0..30u64)
            .flat_map(|r| (0..7u64).map(move |k| r * 100 + k))
            .collect();
        expected.sort_unstable();
        assert_eq!(seen, expected, "lost or duplicated callbacks");
        assert!(report.take_panics().is_empty());
        stream.destroy().unwrap();
        report.stop().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// The slot search wraps around: capacity 5, bursts of 1 to 5 callbacks so that the hint
/// lands on every index and past the end; every callback records its sequence number, and
/// the sequence is exactly 0..n in order (one stream runs them in launch order).
#[test]
fn slot_search_wraps_around_without_losing_or_repeating() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let report = ReportThread::spawn(&device).unwrap();
        let stream = report
            .subscribe_with_capacity(device.create_stream().unwrap(), 5)
            .unwrap();
        let order = Arc::new(Mutex::new(Vec::<u32>::new()));
        let mut seq = 0u32;
        for burst in 0..300u32 {
            let n = 1 + (burst * 7 + burst / 5) % 5;
            for _ in 0..n {
                let o = Arc::clone(&order);
                let me = seq;
                // Boxed every third: the boxed path frees its slot too.
                let launched = if me.is_multiple_of(3) {
                    let pad = [me; 16];
                    stream.launch(CallbackMode::NonBlocking, move || {
                        o.lock().unwrap().push(pad[15]);
                    })
                } else {
                    stream.launch(CallbackMode::NonBlocking, move || {
                        o.lock().unwrap().push(me);
                    })
                };
                match launched {
                    Ok(()) => seq += 1,
                    Err(Error::CallbackCapacity { .. }) => {}
                    Err(e) => panic!("{e:?}"),
                }
            }
            if burst % 4 == 0 {
                stream.synchronize().unwrap();
            }
        }
        let stream = stream.unsubscribe().unwrap();
        let order = order.lock().unwrap().clone();
        assert_eq!(
            order,
            (0..seq).collect::<Vec<_>>(),
            "lost, repeated or reordered"
        );
        stream.destroy().unwrap();
        report.stop().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Injected launch failures at the capacity boundary: with capacity - 1 in flight, the
/// last slot's launch fails (inline, then boxed, each with a capture that panics in
/// `Drop`): the panic comes out of `launch`, the slot is given back (the next launch takes
/// it), and the capacity is still exact after that.
#[test]
fn injected_launch_failure_at_the_boundary_gives_the_slot_back() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.default_device(0);
            let report = ReportThread::spawn(&device).unwrap();
            let stream = report
                .subscribe_with_capacity(device.create_stream().unwrap(), 3)
                .unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            for boxed in [false, true, false, true] {
                let (g, gate) = gate();
                stream
                    .launch(CallbackMode::Blocking, move || {
                        g.wait();
                    })
                    .unwrap();
                let r = Arc::clone(&ran);
                stream
                    .launch(CallbackMode::NonBlocking, move || {
                        r.fetch_add(1, Ordering::SeqCst);
                    })
                    .unwrap();
                session.sim.inject_fault("aclrtLaunchCallback", 507_000, 1);
                let bomb = Bomb("refused launch");
                let r = Arc::clone(&ran);
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    if boxed {
                        let big = [0u8; 128];
                        stream.launch(CallbackMode::NonBlocking, move || {
                            let _b = (&bomb, big);
                            r.fetch_add(1000, Ordering::SeqCst);
                        })
                    } else {
                        stream.launch(CallbackMode::NonBlocking, move || {
                            let _b = &bomb;
                            r.fetch_add(1000, Ordering::SeqCst);
                        })
                    }
                }));
                assert!(outcome.is_err(), "the capture's drop panics out of launch");
                assert_eq!(stream.pending_callbacks(), 2);
                // The refused launch's slot is free again: exactly one more fits.
                let r = Arc::clone(&ran);
                stream
                    .launch(CallbackMode::NonBlocking, move || {
                        r.fetch_add(1, Ordering::SeqCst);
                    })
                    .unwrap();
                let full = stream.launch(CallbackMode::NonBlocking, || {});
                assert!(
                    matches!(full, Err(Error::CallbackCapacity { capacity: 3 })),
                    "{full:?}"
                );
                gate.wait();
                stream.synchronize().unwrap();
            }
            let stream = stream.unsubscribe().unwrap();
            assert_eq!(
                ran.load(Ordering::SeqCst),
                8,
                "refused closures ran or runs lost"
            );
            stream.destroy().unwrap();
            report.stop().unwrap();
            device.reset().unwrap();
        }
        let findings = session.finish();
        assert!(findings.is_empty(), "{findings:#?}");
    });
}

/// A capacity refusal of a closure whose capture panics in `Drop`: the panic comes out of
/// `launch`, nothing is counted in flight, and the subscription is released normally.
#[test]
fn capacity_refusal_with_a_panicking_drop() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let report = ReportThread::spawn(&device).unwrap();
        let stream = report
            .subscribe_with_capacity(device.create_stream().unwrap(), 2)
            .unwrap();
        let (g, gate) = gate();
        stream
            .launch(CallbackMode::Blocking, move || {
                g.wait();
            })
            .unwrap();
        stream.launch(CallbackMode::NonBlocking, || {}).unwrap();
        for boxed in [false, true] {
            let bomb = Bomb("capacity refusal");
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                if boxed {
                    let big = [0u8; 64];
                    stream.launch(CallbackMode::NonBlocking, move || {
                        let _b = (&bomb, big);
                    })
                } else {
                    stream.launch(CallbackMode::NonBlocking, move || {
                        let _b = &bomb;
                    })
                }
            }));
            assert!(outcome.is_err());
            assert_eq!(stream.pending_callbacks(), 2);
        }
        gate.wait();
        let stream = stream.unsubscribe().unwrap();
        stream.destroy().unwrap();
        report.stop().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Closures that panic, and closures whose captures panic in `Drop` after running, at full
/// capacity (inline and boxed): each panic is kept once, and the slots are all free again.
#[test]
fn panicking_callbacks_free_their_slots() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let report = ReportThread::spawn(&device).unwrap();
        let stream = report
            .subscribe_with_capacity(device.create_stream().unwrap(), 4)
            .unwrap();
        for _round in 0..10 {
            let (g, gate) = gate();
            stream
                .launch(CallbackMode::Blocking, move || {
                    g.wait();
                })
                .unwrap();
            stream
                .launch(CallbackMode::NonBlocking, || panic!("inline panics"))
                .unwrap();
            let big = [1u8; 90];
            stream
                .launch(CallbackMode::NonBlocking, move || {
                    std::hint::black_box(big);
                    panic!("boxed panics")
                })
                .unwrap();
            let bomb = Bomb("a capture after the run");
            stream
                .launch(CallbackMode::NonBlocking, move || {
                    let _b = bomb;
                })
                .unwrap();
            assert!(matches!(
                stream.launch(CallbackMode::NonBlocking, || {}),
                Err(Error::CallbackCapacity { capacity: 4 })
            ));
            gate.wait();
            stream.synchronize().unwrap();
            while stream.pending_callbacks() != 0 {
                std::thread::yield_now();
            }
            // All four slots free again.
            for _ in 0..4 {
                stream.launch(CallbackMode::NonBlocking, || {}).unwrap();
            }
            stream.synchronize().unwrap();
            while stream.pending_callbacks() != 0 {
                std::thread::yield_now();
            }
        }
        let stream = stream.unsubscribe().unwrap();
        let panics = report.take_panics();
        assert_eq!(panics.len(), 30, "{panics:#?}");
        stream.destroy().unwrap();
        report.stop().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Subscriptions on one report thread, each moved to its own thread (Send), filled to
/// capacity behind a blocking callback and unsubscribed (or dropped) while full: the
/// unsubscribe waits for every callback; every launched closure ran once.
#[test]
fn full_subscriptions_on_many_threads_unsubscribed_while_full() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let report = ReportThread::spawn(&device).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let launched = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|scope| {
            for t in 0..4usize {
                let stream = report
                    .subscribe_with_capacity(device.create_stream().unwrap(), 3 + t)
                    .unwrap();
                let (ran, launched) = (Arc::clone(&ran), Arc::clone(&launched));
                scope.spawn(move || {
                    for round in 0..20 {
                        let (g, gate) = gate();
                        stream
                            .launch(CallbackMode::Blocking, move || {
                                g.wait();
                            })
                            .unwrap();
                        launched.fetch_add(1, Ordering::SeqCst);
                        loop {
                            let r = Arc::clone(&ran);
                            let res = if round % 2 == 0 {
                                stream.launch(CallbackMode::NonBlocking, move || {
                                    r.fetch_add(1, Ordering::SeqCst);
                                })
                            } else {
                                let big = [2u8; 60];
                                stream.launch(CallbackMode::NonBlocking, move || {
                                    std::hint::black_box(big);
                                    r.fetch_add(1, Ordering::SeqCst);
                                })
                            };
                            match res {
                                Ok(()) => {
                                    launched.fetch_add(1, Ordering::SeqCst);
                                }
                                Err(Error::CallbackCapacity { .. }) => break,
                                Err(e) => panic!("{e:?}"),
                            }
                        }
                        assert_eq!(stream.pending_callbacks(), 3 + t);
                        // Released from yet another thread, a little later.
                        let opener = std::thread::spawn(move || {
                            std::thread::sleep(Duration::from_millis(2));
                            gate.wait();
                        });
                        if round == 19 {
                            break;
                        }
                        stream.synchronize().unwrap();
                        opener.join().unwrap();
                    }
                    // Full at the end of the last round: unsubscribe (even t) or drop.
                    if t % 2 == 0 {
                        stream.unsubscribe().unwrap().destroy().unwrap();
                    } else {
                        drop(stream);
                    }
                });
            }
        });
        // The gate closures count as ran too (they do not increment `ran`).
        let gates = 4 * 20;
        assert_eq!(
            ran.load(Ordering::SeqCst) + gates,
            launched.load(Ordering::SeqCst)
        );
        report.stop().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// The largest capacity: every slot filled behind one blocking callback, none allocates a
/// box, all run, the subscription is released.
#[test]
fn maximum_capacity_filled() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let report = ReportThread::spawn(&device).unwrap();
        assert!(
            report
                .subscribe_with_capacity(
                    device.create_stream().unwrap(),
                    ascend_typestate::MAX_CALLBACK_CAPACITY + 1
                )
                .is_err()
        );
        let stream = report
            .subscribe_with_capacity(
                device.create_stream().unwrap(),
                ascend_typestate::MAX_CALLBACK_CAPACITY,
            )
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let (g, gate) = gate();
        stream
            .launch(CallbackMode::Blocking, move || {
                g.wait();
            })
            .unwrap();
        for _ in 1..ascend_typestate::MAX_CALLBACK_CAPACITY {
            let r = Arc::clone(&ran);
            stream
                .launch(CallbackMode::NonBlocking, move || {
                    r.fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
        }
        let full = stream.launch(CallbackMode::NonBlocking, || {});
        assert!(
            matches!(full, Err(Error::CallbackCapacity { capacity: 65_536 })),
            "{full:?}"
        );
        gate.wait();
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(
            ran.load(Ordering::Relaxed),
            ascend_typestate::MAX_CALLBACK_CAPACITY - 1
        );
        stream.destroy().unwrap();
        report.stop().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}
