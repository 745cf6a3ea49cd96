//! Device/host buffers and async scopes (memory area).
//!
//! Every test that could crash, abort or hang runs its body in a child process (this test
//! binary, re-run for that one test) under a watchdog.

use crate::support;

use std::time::Duration;

use ascend_typestate::{Error, MallocPolicy};
use support::sim::{Finding, Session, assert_no_findings};

const CHILD_ENV: &str = "RED_MEMORY_CHILD";

/// What a child run ended with (all of it printed on failure).
#[derive(Debug)]
#[allow(dead_code)]
pub struct ChildOutcome {
    /// Exit code (None: killed by a signal or by the watchdog).
    code: Option<i32>,
    /// Signal number, if any.
    signal: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

/// Runs `body` in a child process when this is the parent; in the child, runs it.
/// Returns `None` in the child (after the body returned; the harness then exits).
fn in_child(name: &str, bound: Duration, body: impl FnOnce()) -> Option<ChildOutcome> {
    if std::env::var(CHILD_ENV).as_deref() == Ok(name) {
        body();
        return None;
    }
    let out = support::child::run(
        name,
        &[(CHILD_ENV, std::ffi::OsStr::new(name))],
        bound,
        support::child::Stderr::Piped,
    );
    Some(ChildOutcome {
        code: out.code(),
        signal: out.signal(),
        timed_out: out.timed_out(),
        stdout: out.stdout,
        stderr: out.stderr,
    })
}

fn rules(findings: &[Finding]) -> Vec<&str> {
    findings.iter().map(|f| f.rule.as_str()).collect()
}

// ---------------------------------------------------------------------------------------
// F1: `MemoryMut::written` is a safe public function that wraps ANY pending result as a
// host (or device) source, bypassing the location check of `Pending::host` / `device`.
// The copy kind is then derived from the forged type: a device pointer is passed as the
// source of an H2H copy (or a host pointer as the source of a D2H/D2D copy).
// ---------------------------------------------------------------------------------------

#[test]
fn pending_read_across_streams_and_nested_scopes() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (a, b, c) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let input: Vec<u32> = (0..4096).collect();
        let mut x = ctx.alloc::<u32>(4096, MallocPolicy::HugeFirst).unwrap();
        let mut y = ctx.alloc::<u32>(4096, MallocPolicy::HugeFirst).unwrap();
        let mut out1 = vec![0u32; 4096];
        let mut out2 = vec![0u32; 4096];
        let mut out3 = vec![0u32; 4096];
        let mut out4 = vec![0u32; 4096];
        let mut live_after_first = None;
        for round in 0..20 {
            ctx.async_scope(|scope| {
                let px = scope.copy(&a, &mut x, &input)?;
                let py = scope.simulated_map(&a, Duration::from_millis(3), px, &mut y, |v| {
                    v.wrapping_mul(7)
                })?;
                scope.copy(&b, &mut out1, py)?;
                scope.copy(&b, &mut out2, py)?; // a second join to b
                // A nested scope of the same context reads the outer pending on c.
                ctx.async_scope(|inner| {
                    inner.copy(&c, &mut out3, py)?;
                    Ok(())
                })?;
                scope.copy(&c, &mut out4, px)?;
                Ok(())
            })
            .unwrap();
            let want: Vec<u32> = input.iter().map(|v| v.wrapping_mul(7)).collect();
            assert_eq!(out1, want);
            assert_eq!(out2, want);
            assert_eq!(out3, want);
            assert_eq!(out4, input);
            out1.fill(0);
            out2.fill(0);
            out3.fill(0);
            out4.fill(0);
            if round == 0 {
                live_after_first = Some(session.sim.live_objects());
            }
        }
        // 3 streams, 2 buffers, the context, and the join events it keeps for reuse once the
        // scopes' synchronisations showed them done: as many after 20 rounds as after one
        // (none left pending, none created anew).
        let live = session.sim.live_objects();
        assert_eq!(Some(live), live_after_first, "joins accumulate");
        assert!((6..=6 + 64).contains(&live), "{live}");
    }
    assert_no_findings(&session.finish());
}

/// A pending result of one context read in a nested scope of another context (same device
/// and other device): typed errors, nothing issued, nothing flagged.
#[test]
fn pending_of_another_context_or_device_in_nested_scope() {
    let session = Session::start();
    {
        let d0 = session.acl().set_device(0).unwrap();
        let d1 = session.acl().set_device(1).unwrap();
        let ctx_a = d0.create_context().unwrap();
        let ctx_b = d0.create_context().unwrap();
        let ctx_c = d1.create_context().unwrap();
        let sa = ctx_a.create_stream().unwrap();
        let sb = ctx_b.create_stream().unwrap();
        let sc = ctx_c.create_stream().unwrap();
        let input: Vec<u8> = (0..=255).collect();
        let mut xa = ctx_a.alloc::<u8>(256, MallocPolicy::HugeFirst).unwrap();
        let mut hb = vec![0u8; 256];
        let mut hc = vec![0u8; 256];
        let mut hbh = vec![0u8; 256];
        let mut hch = vec![0u8; 256];
        let mut host_a = vec![0u8; 256];
        let mut xb = ctx_b.alloc::<u8>(256, MallocPolicy::HugeFirst).unwrap();
        ctx_a
            .async_scope(|scope| {
                let p = scope.copy(&sa, &mut xa, &input)?;
                let ph = scope.copy(&sa, &mut host_a, &input)?;
                let e1 = ctx_b.async_scope(|inner| inner.copy(&sb, &mut hb, p).map(drop));
                assert!(matches!(e1, Err(Error::ContextMismatch { .. })), "{e1:?}");
                let e2 = ctx_c.async_scope(|inner| inner.copy(&sc, &mut hc, p).map(drop));
                assert!(matches!(e2, Err(Error::DeviceMismatch { .. })), "{e2:?}");
                let e3 = ctx_b.async_scope(|inner| inner.copy(&sb, &mut hbh, ph).map(drop));
                assert!(matches!(e3, Err(Error::ContextMismatch { .. })), "{e3:?}");
                let e4 = ctx_c.async_scope(|inner| inner.copy(&sc, &mut hch, ph).map(drop));
                assert!(matches!(e4, Err(Error::DeviceMismatch { .. })), "{e4:?}");
                let e5 = ctx_b.async_scope(|inner| {
                    inner
                        .simulated_map(&sb, Duration::ZERO, p, &mut xb, |v| v)
                        .map(drop)
                });
                assert!(matches!(e5, Err(Error::ContextMismatch { .. })), "{e5:?}");
                // The stream of another context in this scope.
                let e6 = scope.copy(&sb, &mut hbh, &input[..]);
                assert!(matches!(e6, Err(Error::ContextMismatch { .. })), "{e6:?}");
                Ok(())
            })
            .unwrap();
        assert_eq!(host_a, input);
    }
    assert_no_findings(&session.finish());
}

/// Zero-length views everywhere: at the start, middle and one past the end; async copies,
/// memsets, kernels, synchronous copies.
#[test]
fn zero_length_views_everywhere() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut a = ctx.alloc::<u64>(16, MallocPolicy::HugeFirst).unwrap();
        let mut b = ctx.alloc::<u64>(16, MallocPolicy::HugeFirst).unwrap();
        let empty: Vec<u64> = Vec::new();
        let mut empty_dst: Vec<u64> = Vec::new();
        let mut c = ctx.alloc::<u64>(16, MallocPolicy::HugeFirst).unwrap();
        for at in [0usize, 7, 16] {
            let view = a.slice(at..at).unwrap();
            ctx.copy(&mut empty_dst[..], &view).unwrap();
            ctx.copy(&mut b.slice_mut(at..at).unwrap(), &empty[..])
                .unwrap();
            ctx.copy(&mut b.slice_mut(at..at).unwrap(), &view).unwrap();
            let mut bv = b.slice_mut(at..at).unwrap();
            let mut av = a.slice_mut(at..).unwrap();
            let mut cv = c.slice_mut(at..at).unwrap();
            ctx.async_scope(|scope| {
                let p = scope.copy(&s1, &mut bv, &empty)?;
                scope.copy(&s2, &mut empty_dst, p)?;
                scope.memset(&s1, &mut cv, 3)?;
                // Kernel with empty input, non-empty output, on another stream.
                scope.simulated_map(&s2, Duration::ZERO, p, &mut av, |v| v + 1)?;
                Ok(())
            })
            .unwrap();
        }
        let mut out = [9u64; 16];
        ctx.copy(&mut out[..], &a).unwrap();
        assert_eq!(out, [0; 16]);
    }
    assert_no_findings(&session.finish());
}

/// Sizes near isize::MAX and element types with odd (large) alignment.
#[test]
fn sizes_near_isize_max() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let max = isize::MAX as usize;
        for (len, what) in [
            (max / 2 + 1, "u16 over isize::MAX"),
            (max / 2, "u16 just under"),
            (usize::MAX, "usize::MAX"),
        ] {
            let e = ctx.alloc::<u16>(len, MallocPolicy::HugeFirst).unwrap_err();
            eprintln!("{what}: {e}");
            let e = ctx.alloc_host::<u16>(len).unwrap_err();
            eprintln!("{what} host: {e}");
        }
        let e = ctx.alloc::<u8>(max, MallocPolicy::HugeFirst).unwrap_err();
        eprintln!("u8 isize::MAX: {e}");
        let e = ctx
            .alloc::<[u8; 4096]>(max / 4096, MallocPolicy::HugeFirst)
            .unwrap_err();
        eprintln!("[u8;4096]: {e}");
        // ZST elements: huge slices with zero bytes.
        let stream = ctx.create_stream().unwrap();
        let src = vec![(); usize::MAX];
        let mut dst = vec![(); usize::MAX];
        ctx.copy(&mut dst[..], &src[..]).unwrap();
        ctx.async_scope(|scope| {
            let p = scope.copy(&stream, &mut dst, &src)?;
            let _ = p;
            Ok(())
        })
        .unwrap();
        assert!(ctx.alloc::<()>(5, MallocPolicy::HugeFirst).is_err());
    }
    assert_no_findings(&session.finish());
}

#[cfg(target_arch = "x86_64")]
#[test]
fn host_buffer_of_an_over_aligned_pod_type() {
    use std::arch::x86_64::__m256;
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let mut ok = 0;
        let mut misaligned = 0;
        for len in [1usize, 3, 64, 4096, 1 << 16] {
            match ctx.alloc_host::<__m256>(len) {
                Ok(b) => {
                    assert_eq!(b.as_ptr() as usize % 32, 0);
                    ok += 1;
                }
                Err(e) => {
                    eprintln!("alloc_host::<__m256>({len}): {e}");
                    misaligned += 1;
                }
            }
        }
        eprintln!("ok {ok}, misaligned {misaligned}");
        // Device buffers of it: copies through them keep the values.
        let stream = ctx.create_stream().unwrap();
        let src: Vec<[u64; 4]> = (0..1000u64).map(|i| [i, i + 1, i + 2, i + 3]).collect();
        let mut d = ctx
            .alloc::<[u64; 4]>(1000, MallocPolicy::HugeFirst)
            .unwrap();
        let mut d2 = ctx
            .alloc::<[u64; 4]>(1000, MallocPolicy::HugeFirst)
            .unwrap();
        let mut back = vec![[0u64; 4]; 1000];
        let mut dview = d.slice_mut(1..).unwrap();
        let dv = &mut dview;
        ctx.async_scope(|scope| {
            let p = scope.copy(&stream, dv, &src[..999])?;
            let p = scope.simulated_map(&stream, Duration::ZERO, p, &mut d2, |mut v| {
                v[0] += 1;
                v
            })?;
            scope.copy(&stream, &mut back, p)?;
            Ok(())
        })
        .unwrap();
        assert_eq!(back[0], [1, 1, 2, 3]);
        assert_eq!(back[998], [999, 999, 1000, 1001]);
    }
    assert_no_findings(&session.finish());
}

// ---------------------------------------------------------------------------------------
// Panics and leaks in scopes (child processes).
// ---------------------------------------------------------------------------------------

/// A panic in a nested scope of another context, while both have copies pending on two
/// streams each; then everything is torn down explicitly.
#[test]
fn panic_in_nested_scopes_of_two_contexts() {
    let Some(out) = in_child(
        "panic_in_nested_scopes_of_two_contexts",
        Duration::from_secs(30),
        || {
            let session = Session::start();
            {
                let d0 = session.acl().set_device(0).unwrap();
                let ca = d0.create_context().unwrap();
                let cb = d0.create_context().unwrap();
                let (a1, a2) = (ca.create_stream().unwrap(), ca.create_stream().unwrap());
                let (b1, b2) = (cb.create_stream().unwrap(), cb.create_stream().unwrap());
                let host: Vec<u32> = vec![7; 1 << 18];
                let mut xa = ca.alloc::<u32>(1 << 18, MallocPolicy::HugeFirst).unwrap();
                let mut xb = cb.alloc::<u32>(1 << 18, MallocPolicy::HugeFirst).unwrap();
                let mut ya = ca.alloc::<u32>(1 << 18, MallocPolicy::HugeFirst).unwrap();
                let mut yb = cb.alloc::<u32>(1 << 18, MallocPolicy::HugeFirst).unwrap();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let _ = ca.async_scope(|sa| {
                        let p = sa.copy(&a1, &mut xa, &host)?;
                        sa.simulated_map(&a2, Duration::from_millis(20), p, &mut ya, |v| v)?;
                        let _ = cb.async_scope(|sb| -> ascend_typestate::Result<()> {
                            let q = sb.copy(&b1, &mut xb, &host)?;
                            sb.simulated_map(&b2, Duration::from_millis(20), q, &mut yb, |v| v)?;
                            panic!("inner");
                        });
                        Ok(())
                    });
                }));
                assert!(r.is_err());
                let mut check = vec![0u32; 1 << 18];
                ca.copy(&mut check[..], &ya).unwrap();
                assert_eq!(check, host);
                cb.copy(&mut check[..], &yb).unwrap();
                assert_eq!(check, host);
            }
            let f = session.finish();
            println!("FINDINGS {f:?}");
            assert_no_findings(&f);
        },
    ) else {
        return;
    };
    println!("{out:?}");
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

/// `mem::forget` of what can be forgotten inside a scope: pending results, views, a
/// stream and buffers leaked with `Box::leak` and used by the scope, a nested-scope result.
#[test]
fn forget_inside_a_scope() {
    let Some(out) = in_child("forget_inside_a_scope", Duration::from_secs(30), || {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            let stream = ctx.create_stream().unwrap();
            let input = vec![1u8; 1 << 20];
            let mut x = ctx.alloc::<u8>(1 << 20, MallocPolicy::HugeFirst).unwrap();
            let mut view_owner = ctx.alloc::<u8>(1 << 20, MallocPolicy::HugeFirst).unwrap();
            let mut v = view_owner.slice_mut(..).unwrap();
            ctx.async_scope(|scope| {
                let leaked_stream = Box::leak(Box::new(ctx.create_stream()?));
                let p = scope.copy(&stream, &mut x, &input)?;
                let q = scope.copy(&*leaked_stream, &mut v, p)?;
                let _ = q;
                Ok(())
            })
            .unwrap();
            let mut back = vec![0u8; 1 << 20];
            ctx.copy(&mut back[..], &view_owner).unwrap();
            assert_eq!(back, input);
            drop(stream);
            drop(x);
            drop(view_owner);
            let e = ctx.try_destroy().unwrap_err();
            println!("ctx destroy with a leaked stream: {}", e.error);
        }
        let f = session.sim.findings();
        println!("FINDINGS {f:?}");
        std::process::exit(0);
    }) else {
        return;
    };
    println!("{out:?}");
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[allow(dead_code)]
fn unused(_: &[&str]) {
    let _ = rules;
}

// ---------------------------------------------------------------------------------------
// F: a panic in a `simulated_map` function is written to stderr by `run_map` and
// otherwise dropped: the scope returns Ok, the output is partly written, the drop-error
// handler is not told, the simulator is not told (no async error on the stream).
// ---------------------------------------------------------------------------------------

#[test]
fn kernel_function_panic_is_returned_or_reported() {
    let Some(out) = in_child(
        "kernel_function_panic_is_returned_or_reported",
        Duration::from_secs(30),
        || {
            let drops = support::DropErrors::capture();
            let session = Session::start();
            let result;
            let mut out = vec![0u32; 16];
            {
                let device = session.acl().set_device(0).unwrap();
                let ctx = device.create_context().unwrap();
                let stream = ctx.create_stream().unwrap();
                let input: Vec<u32> = (0..16).collect();
                let mut x = ctx.alloc::<u32>(16, MallocPolicy::HugeFirst).unwrap();
                let mut y = ctx.alloc::<u32>(16, MallocPolicy::HugeFirst).unwrap();
                ctx.memset(&mut y, 0xFF).unwrap();
                result = ctx.async_scope(|scope| {
                    let p = scope.copy(&stream, &mut x, &input)?;
                    let q = scope.simulated_map(&stream, Duration::ZERO, p, &mut y, |v| {
                        assert!(v < 8, "kernel bug at {v}");
                        v + 100
                    })?;
                    scope.copy(&stream, &mut out, q)?;
                    Ok(())
                });
                let s = stream.synchronize();
                println!("stream.synchronize after: {s:?}");
            }
            let findings = session.finish();
            println!("RESULT scope={result:?} out={out:?}");
            let reported = drops.take();
            println!("drop errors: {reported:?}");
            println!("FINDINGS {findings:?}");
            // Never lost: returned, or reported to the drop-error handler.
            assert!(
                result.is_err() || reported.iter().any(|r| r.contains("kernel bug")),
                "a failed kernel, the scope returned Ok and nothing was reported"
            );
        },
    ) else {
        return;
    };
    println!("{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.code, Some(0));
}
