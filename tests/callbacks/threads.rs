//! Many threads. Concurrent report-thread spawns against the 1024 limit (C4),
//! one report thread shared by many producer threads, subscribe/unsubscribe churn, C3.
//! `RED_SMALL=1` shrinks the counts (for helgrind).

use crate::support;
use crate::support::callbacks as common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ascend_typestate::{CallbackMode, MAX_REPORT_THREADS, ReportThread};
use ascend_typestate::{Error, MallocPolicy};
use support::sim::{Session, assert_no_findings};

fn small() -> bool {
    std::env::var("RED_SMALL").is_ok()
}

fn bounded<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    match common::watchdog(Duration::from_secs(secs), f) {
        None => panic!("hung (watchdog {secs}s)"),
        Some(Err(p)) => std::panic::resume_unwind(p),
        Some(Ok(v)) => v,
    }
}

#[test]
fn concurrent_spawns_respect_the_limit_then_all_serve_a_stream() {
    if small() {
        return;
    }
    bounded(240, || {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let ctx = &ctx;
            let threads: Vec<ReportThread<'_>> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..4)
                    .map(|_| {
                        scope.spawn(move || {
                            let mut mine = Vec::new();
                            let mut refused = 0;
                            for _ in 0..300 {
                                match ReportThread::spawn(ctx) {
                                    Ok(t) => mine.push(t),
                                    Err(Error::TooManyReportThreads { .. }) => refused += 1,
                                    Err(e) => panic!("{e}"),
                                }
                            }
                            (mine, refused)
                        })
                    })
                    .collect();
                let mut all = Vec::new();
                let mut refused = 0;
                for h in handles {
                    let (m, r) = h.join().unwrap();
                    all.extend(m);
                    refused += r;
                }
                assert_eq!(all.len(), MAX_REPORT_THREADS);
                assert_eq!(refused, 1200 - MAX_REPORT_THREADS);
                all
            });
            // Every one of the 1024 serves one stream (the simulator allows 1024 subscribed
            // threads): subscribe, launch, unsubscribe, from 4 threads at once.
            let ran = Arc::new(AtomicUsize::new(0));
            std::thread::scope(|scope| {
                for chunk in threads.chunks(MAX_REPORT_THREADS / 4) {
                    let ran = Arc::clone(&ran);
                    scope.spawn(move || {
                        let subs: Vec<_> = chunk
                            .iter()
                            .map(|t| t.subscribe(ctx.create_stream().unwrap()).unwrap())
                            .collect();
                        for s in &subs {
                            let ran = Arc::clone(&ran);
                            s.launch(CallbackMode::NonBlocking, move || {
                                ran.fetch_add(1, Ordering::SeqCst);
                            })
                            .unwrap();
                        }
                        for s in subs {
                            s.unsubscribe().unwrap().destroy().unwrap();
                        }
                    });
                }
            });
            assert_eq!(ran.load(Ordering::SeqCst), MAX_REPORT_THREADS);
            // Stop them from 4 threads at once.
            let mut threads = threads;
            std::thread::scope(|scope| {
                while !threads.is_empty() {
                    let part: Vec<_> = threads.drain(..threads.len().min(256)).collect();
                    scope.spawn(move || {
                        for t in part {
                            t.stop().unwrap();
                        }
                    });
                }
            });
            // The slots are free again.
            let again: Vec<_> = (0..8).map(|_| ReportThread::spawn(ctx).unwrap()).collect();
            for t in again {
                t.stop().unwrap();
            }
        }
        assert_no_findings(&session.finish());
    });
}

#[test]
fn one_report_thread_shared_by_many_producers() {
    let (producers, per) = if small() { (3, 20) } else { (8, 300) };
    bounded(240, move || {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let report = ReportThread::spawn(&ctx).unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            let stop_polling = AtomicUsize::new(0);
            std::thread::scope(|scope| {
                let report = &report;
                let ctx = &ctx;
                let stop_polling = &stop_polling;
                scope.spawn(move || {
                    while stop_polling.load(Ordering::SeqCst) == 0 {
                        assert!(report.take_panics().is_empty());
                        std::thread::yield_now();
                    }
                });
                let hs: Vec<_> = (0..producers)
                    .map(|p| {
                        let ran = Arc::clone(&ran);
                        scope.spawn(move || {
                            let sub = report.subscribe(ctx.create_stream().unwrap()).unwrap();
                            let mut buf = ctx.alloc::<u32>(64, MallocPolicy::HugeFirst).unwrap();
                            for i in 0..per {
                                if i % 16 == 0 {
                                    ctx.async_scope(|s| {
                                        s.memset(&sub, &mut buf, (i % 251) as u8)?;
                                        Ok(())
                                    })
                                    .unwrap();
                                }
                                let ran = Arc::clone(&ran);
                                let mode = if (i + p) % 3 == 0 {
                                    CallbackMode::Blocking
                                } else {
                                    CallbackMode::NonBlocking
                                };
                                sub.launch(mode, move || {
                                    ran.fetch_add(1, Ordering::SeqCst);
                                })
                                .unwrap();
                            }
                            buf.free().unwrap();
                            sub.unsubscribe().unwrap().destroy().unwrap();
                        })
                    })
                    .collect();
                for h in hs {
                    h.join().unwrap();
                }
                stop_polling.store(1, Ordering::SeqCst);
            });
            assert_eq!(ran.load(Ordering::SeqCst), producers * per);
            report.stop().unwrap();
        }
        assert_no_findings(&session.finish());
    });
}

#[test]
fn subscribe_unsubscribe_churn_across_threads_and_report_threads() {
    let (workers, rounds) = if small() { (2, 5) } else { (4, 60) };
    bounded(240, move || {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let shared = ReportThread::spawn(&ctx).unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            std::thread::scope(|scope| {
                for w in 0..workers {
                    let ctx = &ctx;
                    let shared = &shared;
                    let ran = Arc::clone(&ran);
                    scope.spawn(move || {
                        for r in 0..rounds {
                            let own;
                            let report = if (r + w) % 2 == 0 {
                                shared
                            } else {
                                own = ReportThread::spawn(ctx).unwrap();
                                &own
                            };
                            let sub = report.subscribe(ctx.create_stream().unwrap()).unwrap();
                            for k in 0..3 {
                                let ran = Arc::clone(&ran);
                                let mode = if k == 1 {
                                    CallbackMode::Blocking
                                } else {
                                    CallbackMode::NonBlocking
                                };
                                sub.launch(mode, move || {
                                    ran.fetch_add(1, Ordering::SeqCst);
                                })
                                .unwrap();
                            }
                            // Half dropped (Drop fallback), half unsubscribed explicitly;
                            // the streams are moved to another thread before release.
                            if r % 2 == 0 {
                                drop(sub);
                            } else {
                                let stream = sub.unsubscribe().unwrap();
                                std::thread::scope(|s2| {
                                    s2.spawn(move || stream.destroy().unwrap());
                                });
                            }
                        }
                    });
                }
            });
            assert_eq!(ran.load(Ordering::SeqCst), workers * rounds * 3);
            shared.stop().unwrap();
        }
        assert_no_findings(&session.finish());
    });
}

#[test]
fn a_stream_of_another_device_is_given_back_and_usable() {
    bounded(60, || {
        let session = Session::start();
        {
            let d0 = session.acl().set_device(0).unwrap();
            let d1 = session.acl().set_device(1).unwrap();
            let c0 = d0.create_context().unwrap();
            let c1 = d1.create_context().unwrap();
            let r0 = ReportThread::spawn(&c0).unwrap();
            let r1 = ReportThread::spawn(&c1).unwrap();
            let s1 = c1.create_stream().unwrap();
            let (error, s1) = r0.try_subscribe(s1).unwrap_err().into_parts();
            assert!(matches!(error, Error::DeviceMismatch { .. }));
            let sub = r1.subscribe(s1).unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            let r = Arc::clone(&ran);
            sub.launch(CallbackMode::Blocking, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
            sub.unsubscribe().unwrap().destroy().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 1);
            // A second context of device 0, served by r0 (C3: same device).
            let c0b = d0.create_context().unwrap();
            let sub = r0.subscribe(c0b.create_stream().unwrap()).unwrap();
            let r = Arc::clone(&ran);
            sub.launch(CallbackMode::NonBlocking, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
            sub.unsubscribe().unwrap().destroy().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 2);
            c0b.destroy().unwrap();
            r0.stop().unwrap();
            r1.stop().unwrap();
            c0.destroy().unwrap();
            c1.destroy().unwrap();
            d0.reset().unwrap();
            d1.reset().unwrap();
        }
        assert_no_findings(&session.finish());
    });
}
