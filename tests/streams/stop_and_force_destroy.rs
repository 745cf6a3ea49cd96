//! Attacks on the stream functions beyond the seeds (S6 stop on failure, S7 stream
//! configuration, S8 force destroy, P5 operator timeouts), kept as regression tests. Safe
//! code only in the attacking parts. Risky ones arm a watchdog that exits the process
//! (code 99) if the test hangs. Host functions (C10) are in `tests/host_functions/misuse.rs`.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ascend_typestate::{AclError, CallbackMode, Error, ReportThread, StreamConfig};
use support::sim::{Session, assert_no_findings, assert_only_discarded};
use support::watchdog;

const CHILD_ENV: &str = "STREAM_EXTRAS_CHILD";

// ---------------------------------------------------------------------------------------
// S6: stop on failure.
// ---------------------------------------------------------------------------------------

/// S6 vs C1: a callback the stop dropped would never run, and unsubscribing waits for every
/// launched callback (this hung before the two were kept to separate contexts). A context
/// with a stop-on-failure stream refuses subscriptions, and the reverse; the stream is
/// given back, and both work in two contexts.
#[test]
fn s6_c1_stop_on_failure_and_callbacks_need_separate_contexts() {
    let _w = watchdog(
        "s6_c1_stop_on_failure_and_callbacks_need_separate_contexts",
        30,
    );
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let s1 = ctx
            .create_stream_with(StreamConfig::new().stop_on_failure())
            .unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let plain = match report.try_subscribe(ctx.create_stream().unwrap()) {
            Err(failed) => {
                assert!(
                    matches!(failed.error, Error::InvalidArgument(_)),
                    "{:?}",
                    failed.error
                );
                failed.value
            }
            Ok(_) => panic!("a subscription in a context with a stop-on-failure stream"),
        };
        plain.destroy().unwrap();
        report.stop().unwrap();
        // The other way round, in a second context.
        let other = device.create_context().unwrap();
        let report = ReportThread::spawn(&other).unwrap();
        let subscribed = report.subscribe(other.create_stream().unwrap()).unwrap();
        match other.create_stream_with(StreamConfig::new().stop_on_failure()) {
            Err(Error::InvalidArgument(_)) => {}
            other => panic!("a stop-on-failure stream beside a subscription: {other:?}"),
        }
        // Each in its own context: the stop leaves the callbacks alone.
        let ran = Arc::new(AtomicUsize::new(0));
        let r = Arc::clone(&ran);
        subscribed.is_complete().unwrap(); // binds its context for the raw kernel below
        session.sim.sleep_kernel(subscribed.as_raw(), 50_000);
        subscribed
            .launch(CallbackMode::Blocking, move || {
                _ = r.fetch_add(1, Ordering::SeqCst)
            })
            .unwrap();
        s1.is_complete().unwrap(); // binds its context for the raw kernel below
        session.sim.inject_task_failure(s1.as_raw(), 507_899);
        session.sim.sleep_kernel(s1.as_raw(), 1_000);
        assert!(s1.synchronize().is_err());
        subscribed.unsubscribe().unwrap().destroy().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        report.stop().unwrap();
        other.destroy().unwrap();
        s1.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

/// After a stop: launch of a host function is refused; is the closure given back?
/// Every other typed op after the stop: errors (never a silent success), no hang, no leak.
#[test]
fn s6_every_typed_operation_after_a_stop() {
    let _w = watchdog("s6_every_typed_operation_after_a_stop", 30);
    let session = Session::start();
    let owned = Arc::new(());
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let s1 = ctx
            .create_stream_with(StreamConfig::new().stop_on_failure())
            .unwrap();
        let s2 = ctx.create_stream().unwrap();
        let hf = ctx.create_stream().unwrap().with_host_functions();
        let mut host = ctx.alloc_host::<u32>(16).unwrap();
        host.fill(7);
        let mut dev = ctx
            .alloc::<u32>(16, ascend_typestate::MallocPolicy::HugeFirst)
            .unwrap();
        // Pending work on s2 and hf, dropped by the stop.
        session.sim.sleep_kernel(s2.as_raw(), 200_000);
        session.sim.sleep_kernel(hf.as_raw(), 200_000);
        let o = Arc::clone(&owned);
        hf.launch(move || drop(o)).unwrap();
        let copy_outcome = ctx.async_scope(|scope| {
            let _w = scope.copy(&s2, &mut dev, &*host)?;
            session.sim.inject_task_failure(s1.as_raw(), 507_899);
            session.sim.sleep_kernel(s1.as_raw(), 1_000);
            Ok(())
        });
        println!("async scope whose copy the stop dropped: {copy_outcome:?}");
        assert!(copy_outcome.is_err(), "a dropped copy reported as success");
        // After the stop.
        let o = Arc::clone(&owned);
        println!("hf.launch: {:?}", hf.launch(move || drop(o)));
        println!("hf.pending: {}", hf.pending());
        let ev = ctx.create_event().unwrap();
        let ev = match ev.try_record(&s2) {
            Ok(_) => panic!("record after stop accepted"),
            Err(f) => {
                println!("record: {:?}", f.error);
                f.value
            }
        };
        println!(
            "memset in scope: {:?}",
            ctx.async_scope(|scope| {
                scope.memset(&s2, &mut dev, 0)?;
                Ok(())
            })
        );
        println!("sync copy: {:?}", ctx.copy(&mut dev, &*host));
        println!("s2.is_complete: {:?}", s2.is_complete());
        println!("hf.synchronize: {:?}", hf.synchronize());
        println!("hf.synchronize: {:?}", hf.synchronize());
        println!("s1.synchronize: {:?}", s1.synchronize());
        println!("s2.synchronize: {:?}", s2.synchronize());
        println!("ctx.synchronize_device: {:?}", ctx.synchronize_device());
        println!(
            "create_stream after stop: {:?}",
            ctx.create_stream().map(|s| {
                let r = s.try_destroy();
                format!("{:?}", r.err().map(|f| f.error))
            })
        );
        println!(
            "ReportThread after stop: {:?}",
            ReportThread::spawn(&ctx).map(|r| r.stop())
        );
        ev.destroy().unwrap();
        hf.destroy().unwrap();
        println!(
            "s1.destroy_force: {:?}",
            s1.try_destroy_force().err().map(|f| f.error)
        );
        s2.destroy().unwrap();
        drop(dev);
        drop(host);
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(Arc::strong_count(&owned), 1);
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

/// S6: a wait scope / wait_and_reset across the stop, then Drop-only teardown.
#[test]
fn s6_wait_scope_across_the_stop() {
    let _w = watchdog("s6_wait_scope_across_the_stop", 30);
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let s1 = ctx
            .create_stream_with(StreamConfig::new().stop_on_failure())
            .unwrap();
        let (a, b, c) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        session.sim.sleep_kernel(a.as_raw(), 100_000);
        let ev = ctx.create_event().unwrap().record(&a).unwrap();
        let ev = ev.wait(&b, |mut w| {
            w.also_wait(&c)?;
            session.sim.inject_task_failure(s1.as_raw(), 507_899);
            session.sim.sleep_kernel(s1.as_raw(), 1_000);
            std::thread::sleep(Duration::from_millis(20));
            w.reset()
        });
        match ev {
            Ok(ev) => {
                println!("wait scope across the stop: Ok");
                // Record again after the stop: join b -> c needed.
                match ev.try_record(&c) {
                    Ok(r) => {
                        println!("record after stop: Ok (!)");
                        drop(r)
                    }
                    Err(f) => {
                        println!("record after stop: {:?}", f.error);
                        drop(f.value)
                    }
                }
            }
            Err(e) => println!("wait scope across the stop: {e:?}"),
        }
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

// ---------------------------------------------------------------------------------------
// S7: create_stream_with.
// ---------------------------------------------------------------------------------------

#[test]
fn s7_failure_mode_fault_leaks_nothing() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        session
            .sim
            .inject_fault("aclrtSetStreamFailureMode", 107_000, 1);
        let r = ctx.create_stream_with(StreamConfig::new().stop_on_failure());
        println!("create_stream_with (fault on the failure mode): {r:?}");
        assert!(r.is_err());
        drop(r);
        for p in 0..=7u8 {
            let cfg = StreamConfig::new()
                .priority(p)
                .fast_launch()
                .fast_sync()
                .stop_on_failure();
            ctx.create_stream_with(cfg).unwrap().destroy().unwrap();
        }
        println!(
            "priority 255: {:?}",
            ctx.create_stream_with(StreamConfig::new().priority(255))
        );
        session
            .sim
            .inject_fault("aclrtCreateStreamWithConfig", 207_008, 1);
        println!(
            "create fault: {:?}",
            ctx.create_stream_with(StreamConfig::new().priority(1))
        );
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

// ---------------------------------------------------------------------------------------
// S8: force destroy.
// ---------------------------------------------------------------------------------------

/// A join whose RECORD is on the force-destroyed stream: E recorded on a, waited+reset on b
/// (reset pending behind a long kernel), recorded on c (join b -> c). The event is gone;
/// then b is force-destroyed. Does c still wait for the dropped join record?
#[test]
fn s8_force_destroy_the_recording_side_of_a_join() {
    let _w = watchdog("s8_force_destroy_the_recording_side_of_a_join", 30);
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (a, b, c) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let ev = ctx.create_event().unwrap().record(&a).unwrap();
        session.sim.sleep_kernel(b.as_raw(), 300_000);
        let ev = ev.wait_and_reset(&b).unwrap();
        // The record on c fails after its join was issued (aclrtRecordEvent: join first).
        session
            .sim
            .inject_fault_at("aclrtRecordEvent", 107_000, 1, 1);
        let ev = match ev.try_record(&c) {
            Ok(_) => panic!("fault not hit"),
            Err(f) => {
                println!("record on c: {:?}", f.error);
                f.value
            }
        };
        // Make b look synchronised? Only by synchronising it (which passes the join).
        println!("c.is_complete: {:?}", c.is_complete());
        ev.destroy().unwrap();
        b.destroy_force().unwrap();
        println!(
            "c.synchronize_with(2s): {:?}",
            c.synchronize_with(ascend_typestate::timeout!(2000))
        );
        drop((a, c));
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

/// Force destroy of the stream a Waited scope's also_wait stream must join into.
#[test]
fn s8_force_destroy_after_wait_scope_joins() {
    let _w = watchdog("s8_force_destroy_after_wait_scope_joins", 30);
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (a, b, c) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        session.sim.sleep_kernel(a.as_raw(), 100_000);
        let ev = ctx.create_event().unwrap().record(&a).unwrap();
        session.sim.sleep_kernel(c.as_raw(), 300_000);
        let ev = ev
            .wait(&b, |mut w| {
                w.also_wait(&c)?;
                w.reset()
            })
            .unwrap();
        // Reset pending on b, which waits on a join recorded on c (behind a 300 ms kernel).
        b.synchronize_with(ascend_typestate::timeout!(5000))
            .unwrap();
        ev.destroy().unwrap();
        // Nothing typed waits on c now; force it.
        c.destroy_force().unwrap();
        a.destroy().unwrap();
        b.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

/// Force destroy of a HostFnStream while a closure runs, with more queued.
#[test]
fn s8_force_destroy_host_fn_stream_while_a_closure_runs() {
    let _w = watchdog("s8_force_destroy_host_fn_stream_while_a_closure_runs", 30);
    let session = Session::start();
    session.expect_findings();
    let owned = Arc::new(());
    let ran = Arc::new(AtomicUsize::new(0));
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        for round in 0..30 {
            let stream = ctx.create_stream().unwrap().with_host_functions();
            for _ in 0..5 {
                let (o, r) = (Arc::clone(&owned), Arc::clone(&ran));
                stream
                    .launch(move || {
                        let _o = o;
                        std::thread::sleep(Duration::from_micros(200 * (round % 3)));
                        r.fetch_add(1, Ordering::SeqCst);
                    })
                    .unwrap();
            }
            std::thread::sleep(Duration::from_micros(100 * round));
            stream.destroy_force().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let ran = ran.load(Ordering::SeqCst);
    println!("closures run: {ran}");
    assert_eq!(Arc::strong_count(&owned), 1);
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    // Every closure either ran or was discarded and reported (S8).
    assert_only_discarded(&session.finish(), 150 - ran..=150 - ran);
}

// ---------------------------------------------------------------------------------------
// P5: operator execute timeout.
// ---------------------------------------------------------------------------------------

/// A kernel stopped by the timeout on the writer stream of an async-scope copy, then the
/// pending result read on another stream (join): order kept, error reported, nothing leaks.
#[test]
fn p5_timed_out_kernel_inside_an_async_scope_with_a_join() {
    let _w = watchdog("p5_timed_out_kernel_inside_an_async_scope_with_a_join", 30);
    let session = Session::start();
    {
        let acl = session.acl();
        acl.set_op_execute_timeout(Duration::from_millis(10))
            .unwrap();
        let device = acl.set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut host = ctx.alloc_host::<u32>(1024).unwrap();
        host.fill(0xAB);
        let mut d1 = ctx
            .alloc::<u32>(1024, ascend_typestate::MallocPolicy::HugeFirst)
            .unwrap();
        let mut back = ctx.alloc_host::<u32>(1024).unwrap();
        let out = ctx.async_scope(|scope| {
            session.sim.sleep_kernel(s1.as_raw(), 200_000);
            let w = scope.copy(&s1, &mut d1, &*host)?;
            scope.copy(&s2, &mut *back, w)?;
            Ok(())
        });
        println!("scope: {out:?}");
        println!("back[0] = {:#x}", back[0]);
        let ev = ctx.create_event().unwrap().record(&s1).unwrap();
        println!("event sync: {:?}", ev.synchronize());
        ev.destroy().unwrap();
        acl.set_op_execute_timeout(Duration::ZERO).unwrap();
        drop((d1, host, back));
        s1.destroy().unwrap();
        s2.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0, "leaked runtime objects");
    assert_no_findings(&session.finish());
}

#[allow(dead_code)]
fn _uses(_: AclError, _: Error) {}

/// The join pool: a join aimed at a stream that is force-destroyed (S8) while a device
/// synchronisation returns must never be kept for reuse with its flag set: its wait and reset
/// are dropped. Here an event leaked after its record on `b` (safe code) leaves such a join;
/// the next join of the context must still order a chained copy. Run in a child process
/// (leaks).
#[test]
fn s8_e5_a_join_of_a_force_destroyed_stream_is_never_reused() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let (status, out, err) = support::child::in_child(
        "child_join_of_a_force_destroyed_stream",
        CHILD_ENV,
        std::time::Duration::from_secs(60),
    );
    assert!(status.is_some_and(|s| s.success()), "{out}\n{err}");
    assert!(out.contains("1 passed"), "{out}");
}

#[test]
fn child_join_of_a_force_destroyed_stream() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    use ascend_typestate::MallocPolicy;
    let session = Session::start();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let (r, x, y) = (
        ctx.create_stream().unwrap(),
        ctx.create_stream().unwrap(),
        ctx.create_stream().unwrap(),
    );
    let b = ctx.create_stream().unwrap().with_host_functions();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    b.launch(move || {
        let _ = rx.recv();
    })
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let e = ctx.create_event().unwrap().record(&r).unwrap();
    let e = e.wait_and_reset(&r).unwrap();
    // A join r -> b: its record runs at once, its wait and reset queue behind the host fn.
    std::mem::forget(e.record(&b).unwrap());
    std::thread::scope(|s| {
        let t = s.spawn(move || b.destroy_force().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(50));
        ctx.synchronize_device().unwrap();
        tx.send(()).unwrap();
        t.join().unwrap();
    });
    // A chain x -> y: a join, which must order y's copy after x's kernel.
    let input: Vec<u32> = (0..256).collect();
    let mut a = ctx.alloc::<u32>(256, MallocPolicy::HugeFirst).unwrap();
    ctx.copy(&mut a, &input[..]).unwrap();
    let mut mid = ctx.alloc::<u32>(256, MallocPolicy::HugeFirst).unwrap();
    let mut host = vec![0u32; 256];
    ctx.async_scope(|scope| {
        let p = scope.simulated_map(
            &x,
            std::time::Duration::from_millis(100),
            &a,
            &mut mid,
            |v| v + 1,
        )?;
        scope.copy(&y, &mut host, p)?;
        Ok(())
    })
    .unwrap();
    let stale = host
        .iter()
        .zip(&input)
        .filter(|(h, v)| **h != **v + 1)
        .count();
    assert_eq!(stale, 0, "the copy on y ran before x's kernel");
    // Everything leaks with the child process (the forgotten event keeps its context).
    std::mem::forget((a, mid, r, x, y));
}
