//! Memory: host-side races with pending copies, for helgrind / memcheck.
//!
//! Run under valgrind with the test harness single-threaded, e.g.
//! `valgrind --tool=helgrind target/debug/deps/memory-* host_races:: --test-threads=1`.
//! Without valgrind, the tests check their results and the checker.

use crate::support;

use std::time::Duration;

use ascend_typestate::MallocPolicy;
use support::sim::{Session, assert_no_findings};

const N: usize = 1 << 14;

/// Copies on two streams: H2D on s1, a kernel on s2 (joined after s1), D2H on s1 (joined
/// after s2) into the left half of a Vec while the host writes the right half, and D2H on
/// s2 of the raw upload; the host reads the sources meanwhile. After the scope the host
/// reads every destination.
#[test]
fn two_streams_host_side() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let input: Vec<u32> = (0..N as u32).collect();
        let mut pinned = ctx.alloc_host::<u32>(N).unwrap();
        pinned.copy_from_slice(&input);
        let mut x = ctx.alloc::<u32>(N, MallocPolicy::HugeFirst).unwrap();
        let mut y = ctx.alloc::<u32>(N, MallocPolicy::HugeFirst).unwrap();
        let mut out = vec![0u32; 2 * N];
        let mut raw = vec![0u32; N];
        let mut pinned_out = ctx.alloc_host::<u32>(N).unwrap();
        for round in 0..3u32 {
            let sum = ctx
                .async_scope(|scope| {
                    let px = scope.copy(&s1, &mut x, &pinned)?;
                    let py =
                        scope.simulated_map(&s2, Duration::from_micros(200), px, &mut y, |v| {
                            v ^ 0xA5A5
                        })?;
                    let (left, right) = out.split_at_mut(N);
                    scope.copy(&s1, left, py)?;
                    scope.copy(&s2, &mut raw, px)?;
                    scope.copy(&s2, &mut *pinned_out, py)?;
                    // The host meanwhile: writes memory next to a pending destination and
                    // reads the pending copies' sources.
                    right.fill(round);
                    let sum: u64 = pinned.iter().map(|&v| u64::from(v)).sum::<u64>()
                        + input.iter().map(|&v| u64::from(v)).sum::<u64>();
                    Ok(sum)
                })
                .unwrap();
            assert!(sum > 0);
            let want: Vec<u32> = input.iter().map(|v| v ^ 0xA5A5).collect();
            assert_eq!(&out[..N], &want[..]);
            assert!(out[N..].iter().all(|&v| v == round));
            assert_eq!(raw, input);
            assert_eq!(&pinned_out[..], &want[..]);
        }
    }
    assert_no_findings(&session.finish());
}

/// A panic inside a two-stream scope: the host reads the destinations after unwinding.
#[test]
fn two_streams_panic_then_host_reads() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let input: Vec<u64> = (0..N as u64).collect();
        let mut x = ctx.alloc::<u64>(N, MallocPolicy::HugeFirst).unwrap();
        let mut a = vec![0u64; N];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = ctx.async_scope(|scope| -> ascend_typestate::Result<()> {
                let px = scope.copy(&s1, &mut x, &input)?;
                scope.copy(&s2, &mut a, px)?;
                panic!("red: panic with copies pending");
            });
        }));
        assert!(r.is_err());
        assert_eq!(a, input);
    }
    assert_no_findings(&session.finish());
}

/// Two threads run async scopes with cross-stream joins on one context while a third
/// synchronises the device in a loop (destroying deferred join events): data checked,
/// checker silent (E9: no join destroyed while referenced).
#[test]
fn scopes_on_two_threads_and_device_synchronisation() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|t| {
            let syncer = t.spawn(|| {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    ctx.synchronize_device().unwrap();
                    n += 1;
                }
                n
            });
            let workers: Vec<_> = (0..2u32)
                .map(|w| {
                    let ctx = &ctx;
                    t.spawn(move || {
                        let (a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
                        let mut x = ctx.alloc::<u32>(4096, MallocPolicy::HugeFirst).unwrap();
                        for round in 0..40u32 {
                            let input: Vec<u32> = (0..4096).map(|i| i ^ round ^ w).collect();
                            let mut o1 = vec![0u32; 4096];
                            let mut o2 = vec![0u32; 4096];
                            ctx.async_scope(|s| {
                                let p = s.copy(&a, &mut x, &input)?;
                                s.copy(&b, &mut o1, p)?;
                                s.copy(&b, &mut o2, p)?;
                                Ok(())
                            })
                            .unwrap();
                            assert_eq!(o1, input);
                            assert_eq!(o2, input);
                        }
                    })
                })
                .collect();
            for w in workers {
                w.join().unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            println!("device synchronisations: {}", syncer.join().unwrap());
        });
        // The context, and the join events it keeps for reuse (at most 64), destroyed with it.
        let live = session.sim.live_objects();
        assert!(
            (1..=65).contains(&live),
            "only the context and its kept joins: {live}"
        );
        ctx.destroy().unwrap();
        device.reset().unwrap();
        assert_eq!(session.sim.live_objects(), 0);
    }
    assert_no_findings(&session.finish());
}

/// Two consecutive failures of a join event's reset (the crate retries once): the wait is
/// never reset, and the join is destroyed later (E4).
#[test]
fn join_reset_failing_twice() {
    let session = Session::start();
    let result;
    {
        let sim = session.acl().simulator().unwrap();
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let input = vec![1u32; 64];
        let mut x = ctx.alloc::<u32>(64, MallocPolicy::HugeFirst).unwrap();
        let mut o = vec![0u32; 64];
        let drops = support::DropErrors::capture();
        result = ctx.async_scope(|s| {
            let p = s.copy(&a, &mut x, &input)?;
            sim.inject_fault("aclrtResetEvent", 507000, 0, 2)?;
            s.copy(&b, &mut o, p)?;
            Ok(())
        });
        println!("scope: {result:?}; reported: {:?}", drops.take());
    }
    let findings = session.finish();
    println!("FINDINGS {findings:#?}");
    assert_no_findings(&findings);
}
