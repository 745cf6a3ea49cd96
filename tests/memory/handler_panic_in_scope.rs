//! A panic escaping `report_drop_error` while an async scope
//! synchronises its streams.
//!
//! `report_drop_error` runs the user's drop-error handler inside `catch_unwind`, and once
//! dropped the caught payload outside of it: a handler panicking with a payload whose `Drop`
//! panics (safe code: `std::panic::panic_any`) unwound out of `report_drop_error`. While
//! `async_scope` synchronised its streams one after the other, the scope then returned (by
//! unwinding) before the other streams were synchronised, with copies into the caller's
//! memory still pending: a data race and a use-after-free in safe code. Payloads are now
//! forgotten, never dropped there.
//!
//! Every test runs in a child process under a watchdog.

use crate::support;

use std::time::{Duration, Instant};

use ascend_typestate::{Error, MallocPolicy};
use support::sim::Session;

const CHILD_ENV: &str = "RED_MEMORY_ESCAPE_CHILD";

fn is_child(name: &str) -> bool {
    std::env::var(CHILD_ENV).as_deref() == Ok(name)
}

fn run_child(name: &str, bound: Duration) -> (Option<i32>, Option<i32>, bool, String, String) {
    let out = support::child::run(
        name,
        &[(CHILD_ENV, std::ffi::OsStr::new(name))],
        bound,
        support::child::Stderr::Piped,
    );
    (
        out.code(),
        out.signal(),
        out.timed_out(),
        out.stdout,
        out.stderr,
    )
}

/// A panic payload whose destructor panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("red: the panic payload's destructor panics");
        }
    }
}

/// The drop-error handler: safe code, panics with a `Bomb` payload.
fn bomb_handler(what: &'static str, error: &Error) {
    eprintln!("red handler: {what}: {error}");
    std::panic::panic_any(Bomb);
}

const N: usize = 1 << 16;

/// The slow kernel's duration: `ms`, or `RED_KERNEL_MS` (longer under valgrind).
fn kernel_time(ms: u64) -> Duration {
    let ms = std::env::var("RED_KERNEL_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ms);
    Duration::from_millis(ms)
}

/// The scope's first stream reads a pending result of a second stream (a join event,
/// destroyed when the first stream is synchronised); a third stream runs a slow kernel then
/// copies into `victim`, a host `Vec`. One `aclrtDestroyEvent` fails (safe
/// `Simulator::inject_fault`), the handler's payload escapes: the scope unwinds before the
/// third stream is synchronised, and `victim` is written by the runtime after the scope.
#[test]
fn handler_payload_cannot_end_scope_synchronisation_early() {
    const NAME: &str = "handler_payload_cannot_end_scope_synchronisation_early";
    if is_child(NAME) {
        let session = Session::start();
        let sim = session.acl().simulator().unwrap();
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let input: Vec<u32> = (1..=N as u32).collect();
        let mut flag = ctx.alloc::<u8>(16, MallocPolicy::HugeFirst).unwrap();
        let mut x = ctx.alloc::<u32>(N, MallocPolicy::HugeFirst).unwrap();
        let mut y = ctx.alloc::<u32>(N, MallocPolicy::HugeFirst).unwrap();
        let mut out1 = vec![0u32; N];
        let mut victim = vec![0u32; N];
        ascend_typestate::set_drop_error_handler(bomb_handler);
        let start = Instant::now();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ctx.async_scope(|scope| {
                scope.memset(&s1, &mut flag, 1)?; // s1 is the scope's first stream
                let px = scope.copy(&s2, &mut x, &input)?;
                scope.copy(&s1, &mut out1, px)?; // join s2 -> s1, destroyed at s1's sync
                let py = scope
                    .simulated_map(&s3, kernel_time(500), px, &mut y, |v| v.wrapping_mul(3))?;
                scope.copy(&s3, &mut victim, py)?; // lands ~500 ms later
                sim.inject_fault("aclrtDestroyEvent", 507000, 0, 1)?;
                Ok(())
            })
        }));
        let elapsed = start.elapsed();
        println!(
            "async_scope ended after {elapsed:?}, by {}",
            if unwound.is_err() {
                "unwinding"
            } else {
                "returning"
            }
        );
        // The scope is over: `victim` is ours alone (no borrow of it exists).
        let before = victim.iter().filter(|&&v| v != 0).count();
        std::thread::sleep(kernel_time(500) * 2);
        let after = victim.iter().filter(|&&v| v != 0).count();
        println!("non-zero elements of victim: right after the scope {before}, later {after}");
        // Use-after-free: free the destination while the copy may still be pending.
        ascend_typestate::set_drop_error_handler(|what, e| eprintln!("{what}: {e}"));
        let findings = sim.findings();
        println!("FINDINGS {findings:?}");
        assert_eq!(
            before, after,
            "memory owned by the caller changed after async_scope returned: a pending copy \
             outlived the scope (M1)"
        );
        return;
    }
    let (code, signal, timed_out, out, err) = run_child(NAME, Duration::from_secs(30));
    println!("code {code:?} signal {signal:?} timed_out {timed_out}\n{out}\n{err}");
    assert_eq!(code, Some(0));
}

/// The same escape, then the destination `Vec` is dropped (freed) and the heap reused while
/// the copy is pending: the runtime writes into freed memory (run under memcheck to see the
/// invalid write; without it, the reused allocation is seen changing).
#[test]
fn handler_payload_cannot_free_a_copy_destination_early() {
    const NAME: &str = "handler_payload_cannot_free_a_copy_destination_early";
    if is_child(NAME) {
        let session = Session::start();
        let sim = session.acl().simulator().unwrap();
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let input: Vec<u32> = (1..=N as u32).collect();
        let mut flag = ctx.alloc::<u8>(16, MallocPolicy::HugeFirst).unwrap();
        let mut x = ctx.alloc::<u32>(N, MallocPolicy::HugeFirst).unwrap();
        let mut y = ctx.alloc::<u32>(N, MallocPolicy::HugeFirst).unwrap();
        let mut out1 = vec![0u32; N];
        let mut victim = Box::new(vec![0u32; N]);
        ascend_typestate::set_drop_error_handler(bomb_handler);
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ctx.async_scope(|scope| {
                scope.memset(&s1, &mut flag, 1)?;
                let px = scope.copy(&s2, &mut x, &input)?;
                scope.copy(&s1, &mut out1, px)?;
                let py = scope
                    .simulated_map(&s3, kernel_time(300), px, &mut y, |v| v.wrapping_mul(3))?;
                scope.copy(&s3, &mut **victim, py)?;
                sim.inject_fault("aclrtDestroyEvent", 507000, 0, 1)?;
                Ok(())
            })
        }));
        drop(victim); // freed while the copy into it is pending
        let reused = vec![0xEEEE_EEEEu32; N]; // likely the same heap block
        std::thread::sleep(kernel_time(300) * 2);
        let changed = reused.iter().filter(|&&v| v != 0xEEEE_EEEE).count();
        println!("elements of a fresh allocation changed by the runtime: {changed}");
        ascend_typestate::set_drop_error_handler(|what, e| eprintln!("{what}: {e}"));
        return;
    }
    let (code, signal, timed_out, out, err) = run_child(NAME, Duration::from_secs(30));
    println!("code {code:?} signal {signal:?} timed_out {timed_out}\n{out}\n{err}");
    assert!(
        out.contains("changed by the runtime: 0"),
        "a freed destination was written after the scope"
    );
}

/// A `simulated_map` function (a plain `fn`, safe code) that panics with a `Bomb` payload:
/// `run_map` catches the panic, then drops the payload inside an `extern "C"` function,
/// where the destructor's panic cannot unwind: the process aborts.
#[test]
fn kernel_payload_destructor_does_not_abort() {
    const NAME: &str = "kernel_payload_destructor_does_not_abort";
    if is_child(NAME) {
        let session = Session::start();
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let input = vec![1u32; 16];
        let mut x = ctx.alloc::<u32>(16, MallocPolicy::HugeFirst).unwrap();
        let mut y = ctx.alloc::<u32>(16, MallocPolicy::HugeFirst).unwrap();
        let r = ctx.async_scope(|scope| {
            let p = scope.copy(&stream, &mut x, &input)?;
            scope.simulated_map(&stream, Duration::ZERO, p, &mut y, |_| {
                std::panic::panic_any(Bomb)
            })?;
            Ok(())
        });
        println!("scope returned {r:?}");
        return;
    }
    let (code, signal, timed_out, out, err) = run_child(NAME, Duration::from_secs(30));
    println!("code {code:?} signal {signal:?} timed_out {timed_out}\n{out}\n{err}");
    assert_eq!(code, Some(0), "the process did not exit normally");
}
