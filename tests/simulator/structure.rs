//! The layered structure's seams: one mismatch diagnosis, transparent error wrappers,
//! the process-wide host-function ticket registry, and the simulator running released event
//! tasks on the releasing thread. Safe code only (the simulator's test hooks aside).

use crate::support;

use std::error::Error as _;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ascend_typestate::{Error, Failed, MallocPolicy, Stream, WaitError};
use support::sim::{Session, assert_no_findings};

fn is_ctx(e: &Error) -> bool {
    matches!(e, Error::ContextMismatch { .. })
}
fn is_dev(e: &Error) -> bool {
    matches!(e, Error::DeviceMismatch { .. })
}
/// The message must not talk about an event where none is involved.
fn no_event(e: &Error) {
    let text = e.to_string();
    assert!(!text.contains("event"), "mentions an event: {text}");
}
/// Transparent: Display and source are the inner error's; the chain does not repeat.
fn transparent<E: std::error::Error>(outer: &E, inner: &Error) {
    assert_eq!(outer.to_string(), inner.to_string());
    let (a, b) = (outer.source(), inner.source());
    assert_eq!(a.is_some(), b.is_some());
    if let (Some(a), Some(b)) = (a, b) {
        assert!(std::ptr::addr_eq(a, b), "a different source");
    }
    let mut seen = vec![outer.to_string()];
    let mut next = outer.source();
    while let Some(s) = next {
        let text = s.to_string();
        assert!(!seen.contains(&text), "repeated in the chain: {text}");
        seen.push(text);
        next = s.source();
    }
}

#[test]
fn d6_mismatch_everywhere_context_then_device() {
    let session = Session::start();
    {
        let d0 = session.acl().set_device(0).unwrap();
        let d1 = session.acl().set_device(1).unwrap();
        let ca = d0.create_context().unwrap();
        let cb = d0.create_context().unwrap();
        let cc = d1.create_context().unwrap();
        let sa = ca.create_stream().unwrap();
        let sa2 = ca.create_stream().unwrap();
        let sb = cb.create_stream().unwrap();
        let sc = cc.create_stream().unwrap();

        // record
        let ev = ca.create_event().unwrap();
        let f = ev.try_record(&sb).unwrap_err();
        assert!(is_ctx(&f.error), "{:?}", f.error);
        no_event(&f.error);
        transparent(&f, &f.error);
        let (_, ev) = f.into_parts();
        let f = ev.try_record(&sc).unwrap_err();
        assert!(is_dev(&f.error), "{:?}", f.error);
        no_event(&f.error);
        transparent(&f, &f.error);
        let (_, ev) = f.into_parts();

        // wait, wait_and_reset
        let ev = ev.try_record(&sa).unwrap();
        let ev = match ev.try_wait(&sb, |w| w.reset()) {
            Err(WaitError::NotWaited(f)) => {
                assert!(is_ctx(&f.error), "{:?}", f.error);
                no_event(&f.error);
                f.value
            }
            other => panic!("{other:?}"),
        };
        let ev = match ev.try_wait(&sc, |w| w.reset()) {
            Err(e @ WaitError::NotWaited(_)) => {
                assert!(is_dev(e.error()), "{e:?}");
                no_event(e.error());
                transparent(&e, e.error());
                let WaitError::NotWaited(f) = e else {
                    unreachable!()
                };
                f.value
            }
            other => panic!("{other:?}"),
        };
        let ev = match ev.try_wait_and_reset(&sb) {
            Err(WaitError::NotWaited(f)) => {
                assert!(is_ctx(&f.error), "{:?}", f.error);
                f.value
            }
            other => panic!("{other:?}"),
        };
        let ev = match ev.try_wait_and_reset(&sc) {
            Err(WaitError::NotWaited(f)) => {
                assert!(is_dev(&f.error), "{:?}", f.error);
                f.value
            }
            other => panic!("{other:?}"),
        };
        // also_wait
        let seen: Mutex<Vec<Error>> = Mutex::new(Vec::new());
        let ev = ev
            .wait(&sa, |mut w| {
                seen.lock().unwrap().push(w.also_wait(&sb).unwrap_err());
                seen.lock().unwrap().push(w.also_wait(&sc).unwrap_err());
                w.also_wait(&sa2)?;
                w.reset()
            })
            .unwrap();
        let seen = seen.into_inner().unwrap();
        assert!(is_ctx(&seen[0]), "{:?}", seen[0]);
        assert!(is_dev(&seen[1]), "{:?}", seen[1]);
        seen.iter().for_each(no_event);

        // elapsed_since
        let start_b = cb.create_event().unwrap().record(&sb).unwrap();
        let start_c = cc.create_event().unwrap().record(&sc).unwrap();
        let end = ev.record(&sa).unwrap();
        sa.synchronize().unwrap();
        sb.synchronize().unwrap();
        sc.synchronize().unwrap();
        let e = end.elapsed_since(&start_b).unwrap_err();
        assert!(is_ctx(&e), "{e:?}");
        let e = end.elapsed_since(&start_c).unwrap_err();
        assert!(is_dev(&e), "{e:?}");
        eprintln!("elapsed_since, other device: {e}");

        // async scope copy / memset with a stream of another context / device
        let input: Vec<u32> = (0..64).collect();
        let mut xa = ca.alloc::<u32>(64, MallocPolicy::HugeFirst).unwrap();
        let mut xa2 = ca.alloc::<u32>(64, MallocPolicy::HugeFirst).unwrap();
        let mut host = vec![0u32; 64];
        let (mut h1, mut h2) = (vec![0u32; 64], vec![0u32; 64]);
        let errs = ca
            .async_scope(|scope| {
                let mut errs = vec![
                    scope.copy(&sb, &mut h1[..], &input[..]).unwrap_err(),
                    scope.copy(&sc, &mut h2[..], &input[..]).unwrap_err(),
                    scope.memset(&sb, &mut xa, 1).unwrap_err(),
                    scope.memset(&sc, &mut xa2, 1).unwrap_err(),
                ];
                // A pending result read in nested scopes of another context / device.
                let p = scope.copy(&sa, &mut host[..], &input[..])?;
                let mut hb = vec![0u32; 64];
                let mut hc = vec![0u32; 64];
                errs.push(
                    cb.async_scope(|inner| inner.copy(&sb, &mut hb[..], p).map(drop))
                        .unwrap_err(),
                );
                errs.push(
                    cc.async_scope(|inner| inner.copy(&sc, &mut hc[..], p).map(drop))
                        .unwrap_err(),
                );
                Ok(errs)
            })
            .unwrap();
        let kinds: Vec<bool> = errs.iter().map(is_ctx).collect();
        assert_eq!(kinds, [true, false, true, false, true, false], "{errs:#?}");
        for (i, e) in errs.iter().enumerate() {
            if i % 2 == 1 {
                assert!(is_dev(e), "{e:?}");
            }
            no_event(e);
            eprintln!("scope error {i}: {e}");
        }
        assert_eq!(host, input);

        drop(xa);
        drop(xa2);
        end.destroy().unwrap();
        start_b.destroy().unwrap();
        start_c.destroy().unwrap();
        for s in [sa, sa2, sb, sc] {
            s.destroy().unwrap();
        }
        ca.destroy().unwrap();
        cb.destroy().unwrap();
        cc.destroy().unwrap();
        d0.reset().unwrap();
        d1.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0);
    assert_no_findings(&session.finish());
}

#[test]
fn failed_and_wait_error_are_transparent_for_a_runtime_error() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let ev = ctx.create_event().unwrap();
        session.sim.inject_fault("aclrtRecordEvent", 107000, 1);
        let f: Failed<_> = ev.try_record(&s1).unwrap_err();
        assert!(matches!(f.error, Error::Runtime { .. }));
        transparent(&f, &f.error);
        let boxed: Box<dyn std::error::Error> = Box::new(
            ctx.create_event()
                .unwrap()
                .record(&s1)
                .unwrap()
                .wait(&s2, |_w| Err(Error::InvalidArgument("body failed")))
                .map(drop)
                .unwrap_err(),
        );
        assert_eq!(boxed.to_string(), "invalid argument: body failed");
        s1.synchronize().unwrap();
        s2.synchronize().unwrap();
        drop(f);
    }
    assert_no_findings(&session.finish());
}

// ---- E3: the host-function ticket registry under threads, faults and task failures ----

struct Token {
    id: usize,
    drops: Arc<Vec<AtomicU8>>,
}
impl Drop for Token {
    fn drop(&mut self) {
        self.drops[self.id].fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn c10_host_function_registry_hammered() {
    const THREADS: usize = 4;
    const STREAMS: usize = 3;
    const PER: usize = 150;
    const TOTAL: usize = THREADS * STREAMS * PER;
    let session = Session::start();
    let runs: Arc<Vec<AtomicU8>> = Arc::new((0..TOTAL).map(|_| AtomicU8::new(0)).collect());
    let drops: Arc<Vec<AtomicU8>> = Arc::new((0..TOTAL).map(|_| AtomicU8::new(0)).collect());
    let launched_ok = AtomicUsize::new(0);
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let sim = &session.sim;
        std::thread::scope(|ts| {
            for t in 0..THREADS {
                let (ctx, runs, drops) = (&ctx, &runs, &drops);
                let launched_ok = &launched_ok;
                ts.spawn(move || {
                    let streams: Vec<_> = (0..STREAMS)
                        .map(|_| ctx.create_stream().unwrap().with_host_functions())
                        .collect();
                    let last: Vec<Arc<Mutex<Option<usize>>>> =
                        (0..STREAMS).map(|_| Arc::new(Mutex::new(None))).collect();
                    for i in 0..PER {
                        for (k, stream) in streams.iter().enumerate() {
                            let id = (t * STREAMS + k) * PER + i;
                            if i % 17 == 5 && k == 0 {
                                sim.inject_fault("aclrtLaunchHostFunc", 107000, 2);
                            }
                            if i % 13 == 7 {
                                sim.inject_task_failure(stream.as_raw(), 507011);
                            }
                            let token = Token {
                                id,
                                drops: Arc::clone(drops),
                            };
                            let runs = Arc::clone(runs);
                            let last = Arc::clone(&last[k]);
                            let body = move || {
                                let token = token;
                                runs[token.id].fetch_add(1, Ordering::SeqCst);
                                let mut l = last.lock().unwrap();
                                if l.is_some_and(|p| p >= token.id) {
                                    ORDER.fetch_add(1, Ordering::SeqCst);
                                }
                                *l = Some(token.id);
                            };
                            if stream.launch(body).is_ok() {
                                launched_ok.fetch_add(1, Ordering::SeqCst);
                            }
                            if i % 29 == 0 {
                                let _ = stream.synchronize();
                            }
                        }
                    }
                    for s in streams {
                        let mut s = s;
                        loop {
                            match s.try_destroy() {
                                Ok(()) => break,
                                Err(f) => s = f.value,
                            }
                        }
                    }
                });
            }
        });
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(Arc::strong_count(&runs), 1, "a closure was leaked");
    assert_eq!(Arc::strong_count(&drops), 1, "a closure was leaked");
    let mut ran = 0;
    for id in 0..TOTAL {
        let (r, d) = (
            runs[id].load(Ordering::SeqCst),
            drops[id].load(Ordering::SeqCst),
        );
        assert!(r <= 1, "closure {id} ran {r} times");
        assert_eq!(d, 1, "closure {id} dropped {d} times");
        ran += r as usize;
    }
    let ok = launched_ok.load(Ordering::SeqCst);
    eprintln!("launched {ok} of {TOTAL}, ran {ran}");
    assert!(ran <= ok && ran > 0 && ok < TOTAL);
    assert_eq!(ORDER.load(Ordering::SeqCst), 0, "out of order per stream");
    assert_eq!(session.sim.live_objects(), 0);
    assert_no_findings(&session.finish());
}

static ORDER: AtomicUsize = AtomicUsize::new(0);

// ---- E4: ordering through the inline release of event tasks ----

static LOG: Mutex<Vec<usize>> = Mutex::new(Vec::new());

unsafe extern "C" fn log_kernel(user: *mut c_void, _: *const *mut c_void, _: usize) {
    LOG.lock().unwrap().push(user as usize);
}

fn pos(log: &[usize], tag: usize) -> usize {
    log.iter()
        .position(|&t| t == tag)
        .unwrap_or_else(|| panic!("tag {tag} missing in {log:?}"))
}

#[test]
fn e3_e5_fan_out_fan_in_and_long_chains_keep_order() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        const N: usize = 12;
        let s: Vec<Stream<'_>> = (0..N).map(|_| ctx.create_stream().unwrap()).collect();
        let mut fan: ascend_typestate::Event<'_, ascend_typestate::Reset> =
            ctx.create_event().unwrap().into();
        let mut joins: Vec<ascend_typestate::Event<'_, ascend_typestate::Reset>> =
            (0..N).map(|_| ctx.create_event().unwrap().into()).collect();
        for round in 0..30usize {
            LOG.lock().unwrap().clear();
            let base = round * 1000;
            // Fan out: s0 (slow) -> every other stream.
            session
                .sim
                .sleep_kernel(s[0].as_raw(), 300 + (round as u64 % 5) * 100);
            session
                .sim
                .body_kernel(s[0].as_raw(), 0, log_kernel, base as *mut c_void);
            let recorded = fan.record(&s[0]).unwrap();
            fan = recorded
                .wait(&s[1], |mut w| {
                    for st in &s[2..] {
                        w.also_wait(st)?;
                    }
                    w.reset()
                })
                .unwrap();
            for (i, st) in s.iter().enumerate().skip(1) {
                session
                    .sim
                    .sleep_kernel(st.as_raw(), ((i * 37 + round * 11) % 200) as u64);
                session
                    .sim
                    .body_kernel(st.as_raw(), 0, log_kernel, (base + i) as *mut c_void);
            }
            // Chain s1 -> s2 -> ... -> s(N-1) -> s0, each hop one event (wait_and_reset).
            let mut next = Vec::new();
            for (i, j) in joins.drain(..).enumerate() {
                let from = &s[(i % (N - 1)) + 1];
                let to = &s[((i + 1) % (N - 1)) + 1];
                let to = if i == N - 1 { &s[0] } else { to };
                let r = j.record(from).unwrap();
                next.push(r.wait_and_reset(to).unwrap());
            }
            joins = next;
            session
                .sim
                .body_kernel(s[0].as_raw(), 0, log_kernel, (base + 999) as *mut c_void);
            for st in &s {
                st.synchronize().unwrap();
            }
            let log = LOG.lock().unwrap().clone();
            let p0 = pos(&log, base);
            for i in 1..N {
                assert!(
                    pos(&log, base + i) > p0,
                    "round {round}: {i} before fan-out {log:?}"
                );
            }
            assert_eq!(*log.last().unwrap(), base + 999, "round {round}: {log:?}");
        }
        fan.destroy().unwrap();
        for j in joins {
            j.destroy().unwrap();
        }
        for st in s {
            st.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0);
    assert_no_findings(&session.finish());
}

/// Copies chained across 4+ streams in one scope (internal join events), with kernels,
/// then nested fan-out reads of the last pending result.
#[test]
fn m1_e3_copy_chain_across_streams_data_order() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        const N: usize = 6;
        let s: Vec<Stream<'_>> = (0..N).map(|_| ctx.create_stream().unwrap()).collect();
        let mut bufs: Vec<_> = (0..N)
            .map(|_| ctx.alloc::<u64>(4096, MallocPolicy::HugeFirst).unwrap())
            .collect();
        for round in 0..20u64 {
            let input: Vec<u64> = (0..4096).map(|i| i * 7 + round).collect();
            let mut outs: Vec<Vec<u64>> = (0..3).map(|_| vec![0; 4096]).collect();
            let [o0, o1, o2] = &mut outs[..] else {
                unreachable!()
            };
            let (first, rest) = bufs.split_first_mut().unwrap();
            ctx.async_scope(|scope| {
                session.sim.sleep_kernel(s[0].as_raw(), 200 + round * 30);
                let mut p = scope.copy(&s[0], first, &input[..])?;
                for (i, b) in rest.iter_mut().enumerate() {
                    session
                        .sim
                        .sleep_kernel(s[i + 1].as_raw(), ((i as u64 * 53 + round * 17) % 150) + 1);
                    p = scope.copy(&s[i + 1], b, p)?;
                }
                // Fan out the last result to three streams, one of them the writer.
                session.sim.sleep_kernel(s[1].as_raw(), 100);
                scope.copy(&s[1], &mut o0[..], p)?;
                scope.copy(&s[N - 1], &mut o1[..], p)?;
                scope.copy(&s[2], &mut o2[..], p)?;
                Ok(())
            })
            .unwrap();
            for o in &outs {
                assert!(o == &input, "round {round}: stale data");
            }
        }
        drop(bufs);
        for st in s {
            st.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(session.sim.live_objects(), 0);
    assert_no_findings(&session.finish());
}

/// The E5 checker, raw C-style: waits on s2 and s3, then a reset on s2 not ordered after
/// s3's wait, which is queued behind a kernel. The record releases s2 inline (on s1's
/// thread), whose wait and reset run at once and overtake s3's wait: E5 must still be
/// flagged with the inline release. (The typed fan-out above, via also_wait, is not.)
#[test]
fn e5_raw_overtake_is_still_flagged_with_inline_release() {
    use ascend_typestate::sys::bindings::ACL_EVENT_SYNC;
    let session = Session::start();
    session.expect_findings();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        s1.synchronize().unwrap(); // binds the context on this thread
        let api = session.acl().api();
        // SAFETY: raw event in the bound context, used only here and destroyed below after
        // every stream is synchronised; no typed handle refers to it.
        let ev = unsafe { api.create_event_with_flag(ACL_EVENT_SYNC) }.unwrap();
        session.sim.sleep_kernel(s1.as_raw(), 2_000);
        session.sim.sleep_kernel(s3.as_raw(), 20_000);
        // SAFETY: as above; live streams of the bound context.
        unsafe { api.stream_wait_event(s2.as_raw(), ev) }.unwrap();
        // SAFETY: as above.
        unsafe { api.stream_wait_event(s3.as_raw(), ev) }.unwrap();
        // SAFETY: as above. Not ordered after s3's wait: the E5 mistake.
        unsafe { api.reset_event(ev, s2.as_raw()) }.unwrap();
        // SAFETY: as above.
        unsafe { api.record_event(ev, s1.as_raw()) }.unwrap();
        // s3 would wait forever for a reset flag: record again to release it.
        std::thread::sleep(std::time::Duration::from_millis(5));
        // SAFETY: as above.
        unsafe { api.record_event(ev, s1.as_raw()) }.unwrap();
        for s in [&s1, &s2, &s3] {
            s.synchronize().unwrap();
        }
        // SAFETY: every stream that used it is synchronised.
        unsafe { api.destroy_event(ev) }.unwrap();
        for s in [s1, s2, s3] {
            s.destroy().unwrap();
        }
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    eprintln!("{findings:#?}");
    assert!(findings.iter().any(|f| f.rule == "E5"), "{findings:#?}");
}
