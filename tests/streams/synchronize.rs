//! The one-compare stream synchronisation (`Context::id_if_no_joins`: D6 binding and E9 join
//! bookkeeping) and the async scope's `many` flag and out-of-line unwind guard (M1).

use crate::support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use ascend_typestate::{Error, Event, MallocPolicy, Reset};
use support::sim::Session;

/// Two contexts on one thread; ctx1 has join events waiting (its value is JOINS_WAITING),
/// ctx2 none; synchronisations alternate between them so that the cache holds the other
/// context's id each time.
#[test]
fn two_contexts_one_thread_with_and_without_joins() {
    let session = Session::start();
    let reports = support::DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.acl().set_device(0).unwrap();
        let device1 = session.acl().set_device(1).unwrap();
        let ctx1 = device.create_context().unwrap();
        let ctx2 = device.create_context().unwrap();
        let ctx3 = device1.create_context().unwrap();
        let (a1, b1, c1) = (
            ctx1.create_stream().unwrap(),
            ctx1.create_stream().unwrap(),
            ctx1.create_stream().unwrap(),
        );
        let (a2, b2) = (ctx2.create_stream().unwrap(), ctx2.create_stream().unwrap());
        let a3 = ctx3.create_stream().unwrap();
        let mut e1: Event<'_, Reset> = ctx1.create_event().unwrap().into();
        let mut e2: Event<'_, Reset> = ctx2.create_event().unwrap().into();
        for i in 0..200 {
            let _ = a1.is_complete();
            session.sim.sleep_kernel(a1.as_raw(), 50);
            // Joins in ctx1: two waiting streams; and a re-record on another stream.
            e1 = e1
                .record(if i % 2 == 0 { &a1 } else { &c1 })
                .unwrap()
                .wait(&b1, |mut w| {
                    w.also_wait(&c1)?;
                    w.reset()
                })
                .unwrap();
            // ctx2 becomes current.
            e2 = e2.record(&a2).unwrap().wait_and_reset(&b2).unwrap();
            // Sync a stream of ctx1 while ctx2 is current: must bind ctx1 (D6).
            match i % 4 {
                0 => b1.synchronize().unwrap(),
                1 => a1.synchronize().unwrap(),
                2 => a3.synchronize().unwrap(),
                _ => {}
            }
            // And one of ctx2 while ctx1 (or ctx3) is current.
            b2.synchronize().unwrap();
            a3.synchronize().unwrap();
            c1.synchronize().unwrap();
        }
        drop((e1, e2));
        for s in [a1, b1, c1, a2, b2, a3] {
            s.destroy().unwrap();
        }
        ctx1.destroy().unwrap();
        ctx2.destroy().unwrap();
        ctx3.destroy().unwrap();
        device.reset().unwrap();
        device1.reset().unwrap();
    }
    support::end_clean(session, baseline, &reports);
}

/// The default context and a created one on one thread, and a thread that only ever
/// synchronises streams it was given (its cache starts at 0).
#[test]
fn default_context_and_fresh_threads() {
    let session = Session::start();
    let reports = support::DropErrors::capture();
    {
        let dev = session.default_device(0);
        let dctx: &ascend_typestate::Context<'_> = &dev;
        let d1 = dctx.create_stream().unwrap();
        let d2 = dctx.create_stream().unwrap();
        let device1 = session.acl().set_device(1).unwrap();
        let ctx = device1.create_context().unwrap();
        let s = ctx.create_stream().unwrap();
        let mut e: Event<'_, Reset> = dctx.create_event().unwrap().into();
        for i in 0..100 {
            e = e
                .record(if i % 2 == 0 { &d1 } else { &d2 })
                .unwrap()
                .wait_and_reset(if i % 2 == 0 { &d2 } else { &d1 })
                .unwrap();
            s.synchronize().unwrap();
            // Another thread synchronises the default context's streams: moved there
            // and back (they are Send).
            let (d1b, d2b) = std::thread::scope(|sc| {
                let d1 = &d1;
                let _ = d1;
                sc.spawn(|| {
                    // Only shared refs to the context can cross: streams are moved.
                })
                .join()
                .unwrap();
                ((), ())
            });
            let _ = (d1b, d2b);
        }
        drop(e);
        // Move the streams to a fresh thread and synchronise them there.
        let (d1, d2, s) = std::thread::scope(|sc| {
            sc.spawn(move || {
                d1.synchronize().unwrap();
                s.synchronize().unwrap();
                d2.synchronize().unwrap();
                (d1, d2, s)
            })
            .join()
            .unwrap()
        });
        d1.destroy().unwrap();
        d2.destroy().unwrap();
        s.destroy().unwrap();
        ctx.destroy().unwrap();
        device1.reset().unwrap();
        drop(dev);
    }
    let reports = reports.take();
    let findings = session.finish();
    assert!(reports.is_empty(), "{reports:?}");
    support::sim::assert_no_findings(&findings);
}

/// Several threads share one context; each re-records events across its own streams
/// (joins) and never/sometimes synchronises, while another thread synchronises the device
/// and its own streams. Join events must neither leak nor be destroyed under their tasks.
#[test]
fn threads_share_a_context_joins_and_syncs() {
    let session = Session::start();
    let reports = support::DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let sim = &session.sim;
        std::thread::scope(|sc| {
            for t in 0..3usize {
                let ctx = &ctx;
                sc.spawn(move || {
                    let (a, b, c) = (
                        ctx.create_stream().unwrap(),
                        ctx.create_stream().unwrap(),
                        ctx.create_stream().unwrap(),
                    );
                    let mut e: Event<'_, Reset> = ctx.create_event().unwrap().into();
                    let streams = [&a, &b, &c];
                    for i in 0..400usize {
                        let (r, w) = (streams[i % 3], streams[(i + 1 + t) % 3]);
                        if i % 7 == 0 {
                            sim.sleep_kernel(r.as_raw(), 100);
                        }
                        e = if i % 5 == 0 {
                            e.record(r)
                                .unwrap()
                                .wait(w, |mut x| {
                                    x.also_wait(streams[(i + 2) % 3])?;
                                    x.reset()
                                })
                                .unwrap()
                        } else {
                            e.record(r).unwrap().wait_and_reset(w).unwrap()
                        };
                        if t == 0 && i % 50 == 0 {
                            ctx.synchronize_device().unwrap();
                        }
                        if t == 1 && i % 13 == 0 {
                            w.synchronize().unwrap();
                        }
                    }
                    drop(e);
                    for s in [a, b, c] {
                        s.destroy().unwrap();
                    }
                });
            }
        });
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    support::end_clean(session, baseline, &reports);
}

/// Async scope: two or three streams, slow copies, a mid-scope synchronize, then more work;
/// the body returns Ok / Err / panics after the second stream. Buffers are freed right
/// after the scope (M2 would be a finding if a copy still ran).
#[test]
fn async_scope_many_streams_every_way_out() {
    let session = Session::start();
    let reports = support::DropErrors::capture();
    support::quiet_panics(&["red:"]);
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        for way in 0..3 {
            for variant in 0..6 {
                let host = ctx.alloc_host::<u32>(1 << 16).unwrap();
                let mut d1 = ctx.alloc::<u32>(1 << 16, MallocPolicy::HugeFirst).unwrap();
                let mut d2 = ctx.alloc::<u32>(1 << 16, MallocPolicy::HugeFirst).unwrap();
                let mut d3 = ctx.alloc::<u32>(1 << 16, MallocPolicy::HugeFirst).unwrap();
                let mut back = ctx.alloc_host::<u32>(1 << 16).unwrap();
                let sim = &session.sim;
                let r = catch_unwind(AssertUnwindSafe(|| {
                    ctx.async_scope(|scope| -> ascend_typestate::Result<()> {
                        match variant {
                            0 => {
                                // first s1, then s2; sync s2 mid-scope; more on s2.
                                let p = scope.copy(&s1, &mut d1, &*host)?;
                                sim.sleep_kernel(s2.as_raw(), 2_000);
                                let q = scope.copy(&s2, &mut d2, p)?;
                                scope.synchronize(&s2)?;
                                sim.sleep_kernel(s2.as_raw(), 3_000);
                                scope.copy(&s2, &mut back, q)?;
                            }
                            1 => {
                                // first s1 synchronised mid-scope, then s2 slow.
                                scope.copy(&s1, &mut d1, &*host)?;
                                scope.synchronize(&s1)?;
                                sim.sleep_kernel(s2.as_raw(), 3_000);
                                scope.copy(&s2, &mut d2, &*host)?;
                            }
                            2 => {
                                // s1, s2, s1 again, s3 slow
                                scope.memset(&s1, &mut d1, 1)?;
                                scope.copy(&s2, &mut d2, &*host)?;
                                scope.copy(&s1, &mut back, &*host)?;
                                sim.sleep_kernel(s3.as_raw(), 3_000);
                                scope.copy(&s3, &mut d3, &*host)?;
                            }
                            3 => {
                                // memset only on the second stream, slow
                                scope.memset(&s1, &mut d1, 0)?;
                                sim.sleep_kernel(s2.as_raw(), 3_000);
                                scope.memset(&s2, &mut d2, 0)?;
                                scope.synchronize(&s1)?;
                            }
                            4 => {
                                // a failing copy on the second stream (other context? no:
                                // too long): s2 not remembered; s1 slow.
                                sim.sleep_kernel(s1.as_raw(), 3_000);
                                scope.copy(&s1, &mut d1, &*host)?;
                                let small = ctx.alloc::<u32>(4, MallocPolicy::HugeFirst);
                                drop(small);
                                sim.sleep_kernel(s2.as_raw(), 3_000);
                                scope.copy(&s2, &mut back, &d2)?;
                            }
                            _ => {
                                // a simulated kernel on s3 reading s1's pending result
                                let p = scope.copy(&s1, &mut d1, &*host)?;
                                scope.simulated_map(
                                    &s3,
                                    Duration::from_millis(3),
                                    p,
                                    &mut d3,
                                    |x: u32| x + 1,
                                )?;
                            }
                        }
                        match way {
                            0 => Ok(()),
                            1 => Err(Error::InvalidArgument("red: body error")),
                            _ => panic!("red: body panic"),
                        }
                    })
                }));
                // Free everything at once: a still-running task is an M2 finding.
                drop(back);
                drop(d1);
                drop(d2);
                drop(d3);
                drop(host);
                if way == 2 {
                    assert!(r.is_err());
                }
            }
        }
        for s in [s1, s2, s3] {
            s.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let reports = reports.take();
    let findings = session.finish();
    assert!(reports.is_empty(), "{reports:?}");
    support::sim::assert_no_findings(&findings);
}

/// A scope that used two streams, where the first stream's synchronisation fails at the
/// end (an injected async task failure): the second must still be synchronised.
#[test]
fn async_scope_first_stream_fails_second_still_synchronised() {
    let session = Session::start();
    session.expect_findings();
    let reports = support::DropErrors::capture();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        for variant in 0..4 {
            let host = ctx.alloc_host::<u32>(1 << 16).unwrap();
            let mut d1 = ctx.alloc::<u32>(1 << 16, MallocPolicy::HugeFirst).unwrap();
            let mut d2 = ctx.alloc::<u32>(1 << 16, MallocPolicy::HugeFirst).unwrap();
            let sim = &session.sim;
            let r = ctx.async_scope(|scope| -> ascend_typestate::Result<()> {
                sim.inject_task_failure(s1.as_raw(), 507000);
                scope.copy(&s1, &mut d1, &*host)?;
                sim.sleep_kernel(s2.as_raw(), 4_000);
                scope.copy(&s2, &mut d2, &*host)?;
                if variant == 1 {
                    // A synchronize mid-scope that fails (the task error).
                    let _ = scope.synchronize(&s1);
                }
                if variant == 2 {
                    sim.inject_fault("aclrtSynchronizeStream", 507000, 1);
                }
                if variant == 3 {
                    return Err(Error::InvalidArgument("red: err"));
                }
                Ok(())
            });
            println!("variant {variant}: {r:?}");
            drop(d1);
            drop(d2);
            drop(host);
        }
        session.sim.clear_faults();
        for s in [s1, s2] {
            s.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let reports = reports.take();
    println!("reports: {reports:#?}");
    let findings = session.finish();
    let bad: Vec<_> = findings
        .iter()
        .filter(|f| f.rule.starts_with('M') || f.rule == "E9" || f.rule == "D6")
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Join events whose destruction fails (injected) during a synchronisation go back to the
/// list (id_if_no_joins must say so again); synchronisation faults; the pool's reclaim after
/// 64 unsynchronised joins. Nothing may leak, no E9.
#[test]
fn join_destroy_faults_and_reclaim() {
    let session = Session::start();
    session.expect_findings();
    let reports = support::DropErrors::capture();
    let baseline = session.sim.live_objects();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (a, b, c) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let mut e: Event<'_, Reset> = ctx.create_event().unwrap().into();
        let mut f: Event<'_, Reset> = ctx.create_event().unwrap().into();
        for i in 0..600usize {
            // e: a -> b, then re-recorded on a (join after b's reset, waited by a).
            e = e.record(&a).unwrap().wait_and_reset(&b).unwrap();
            f = f
                .record(&b)
                .unwrap()
                .wait(&c, |mut w| {
                    w.also_wait(&a)?;
                    w.reset()
                })
                .unwrap();
            if i % 17 == 3 {
                session
                    .sim
                    .inject_fault("aclrtDestroyEvent", 507000, 1 + (i % 3) as u32);
                let _ = a.synchronize();
                let _ = c.synchronize();
                session.sim.clear_faults();
            }
            if i % 29 == 7 {
                session
                    .sim
                    .inject_fault("aclrtSynchronizeStream", 507000, 1);
                let _ = c.synchronize();
                session.sim.clear_faults();
            }
            if i % 101 == 50 {
                ctx.synchronize_device().unwrap();
            }
        }
        drop((e, f));
        for s in [a, b, c] {
            s.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let live = session.sim.live_objects() - baseline;
    let reports = reports.take();
    let findings = session.finish();
    println!("{} reports", reports.len());
    assert!(reports.iter().all(|r| r.contains("507000")), "{reports:#?}");
    assert_eq!(live, 0);
    support::sim::assert_no_findings(&findings);
}
