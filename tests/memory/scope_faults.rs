//! Fault injection (through the SAFE `Acl::simulator()` API) inside async scopes, and error
//! paths of buffers. Every case runs in a child process (this test binary re-run for one test)
//! under a watchdog.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ascend_typestate::MallocPolicy;
use ascend_typestate::{Acl, Context, Error, InitOptions, Result};

const CHILD_ENV: &str = "RED_MEMORY_FAULTS_CHILD";
const FAULT_ENV: &str = "RED_MEMORY_FAULT";

#[derive(Debug)]
#[allow(dead_code)]
struct ChildOutcome {
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    elapsed: Duration,
    stdout: String,
    stderr: String,
}

fn spawn_child(name: &str, bound: Duration, env: &[(&str, String)]) -> ChildOutcome {
    let start = Instant::now();
    let mut vars: Vec<(&str, &std::ffi::OsStr)> = vec![(CHILD_ENV, std::ffi::OsStr::new(name))];
    vars.extend(
        env.iter()
            .map(|(k, v)| (*k, std::ffi::OsStr::new(v.as_str()))),
    );
    let out = support::child::run(name, &vars, bound, support::child::Stderr::Piped);
    ChildOutcome {
        code: out.code(),
        signal: out.signal(),
        timed_out: out.timed_out(),
        elapsed: start.elapsed(),
        stdout: out.stdout,
        stderr: out.stderr,
    }
}

fn is_child(name: &str) -> bool {
    std::env::var(CHILD_ENV).as_deref() == Ok(name)
}

fn sim_path() -> PathBuf {
    support::simulator_path()
}

// ---------------------------------------------------------------------------------------
// F: a safe call sequence aborts the process: `Simulator::inject_fault` is safe, and two
// failing synchronisations at the end of an async scope abort (documented in
// `Context::async_scope`, but the crate claims no safe program can abort).
// ---------------------------------------------------------------------------------------

#[test]
fn two_failed_synchronisations_do_not_abort_an_async_scope() {
    const NAME: &str = "two_failed_synchronisations_do_not_abort_an_async_scope";
    if is_child(NAME) {
        let acl = Acl::init_with(&InitOptions::default().library(sim_path())).unwrap();
        let device = acl.set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let input = vec![1u8; 4096];
        let mut dev = ctx.alloc::<u8>(4096, MallocPolicy::HugeFirst).unwrap();
        acl.simulator()
            .unwrap()
            .inject_fault("aclrtSynchronizeStream", 507000, 0, 2)
            .unwrap();
        let r = ctx.async_scope(|scope| scope.copy(&stream, &mut dev, &input).map(drop));
        println!("scope returned {r:?}");
        return;
    }
    let out = spawn_child(NAME, Duration::from_secs(20), &[]);
    println!("{out:#?}");
    assert!(
        out.code == Some(0),
        "the child did not exit normally: code {:?} signal {:?}\n{}",
        out.code,
        out.signal,
        out.stderr
    );
}

// ---------------------------------------------------------------------------------------
// F: `alloc_host` of an over-aligned Pod (`__m256`, align 32) on memory the runtime returns
// 16-aligned: the allocation is released with `let _ = free_host(..)`. If that release
// fails, the error is discarded (not returned, not reported) and the pinned allocation is
// leaked without being counted as a child of the context: everything then tears down
// "cleanly" and aclFinalize reports the leak (P2).
// ---------------------------------------------------------------------------------------

#[cfg(target_arch = "x86_64")]
#[test]
fn alloc_host_misaligned_release_failure_is_reported() {
    use std::arch::x86_64::__m256;
    const NAME: &str = "alloc_host_misaligned_release_failure_is_reported";
    if is_child(NAME) {
        let drops = support::DropErrors::capture();
        let session = support::sim::Session::start();
        {
            let sim = session.acl().simulator().unwrap();
            let device = session.acl().set_device(0).unwrap();
            let ctx = device.create_context().unwrap();
            sim.inject_fault("aclrtFreeHost", 507000, 0, 1).unwrap();
            let r = ctx.alloc_host::<__m256>(4096);
            println!("alloc_host: {:?}", r.as_ref().map(|_| ()));
            drop(r);
            println!("freeHost calls: {}", sim.call_count("aclrtFreeHost"));
            println!("live objects before teardown: {}", sim.live_objects());
            ctx.destroy().unwrap();
            device.reset().unwrap();
        }
        let findings = session.finish();
        println!("drop errors reported: {:?}", drops.take());
        println!("FINDINGS {findings:#?}");
        assert!(findings.is_empty(), "checker findings");
        return;
    }
    let out = spawn_child(NAME, Duration::from_secs(20), &[]);
    println!("{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.code, Some(0));
}

// ---------------------------------------------------------------------------------------
// F: the drop-error handler is called while `Context::deferred` is locked
// (`try_destroy_deferred`, second failing join-event destruction). A handler that touches
// the same context (here: `synchronize_device`, via a leaked `&'static Context`) deadlocks.
// ---------------------------------------------------------------------------------------

static CTX: OnceLock<&'static Context<'static>> = OnceLock::new();

fn syncing_handler(what: &'static str, error: &Error) {
    eprintln!("handler: {what}: {error}");
    if let Some(ctx) = CTX.get() {
        eprintln!("handler: synchronize_device ...");
        let r = ctx.synchronize_device();
        eprintln!("handler: synchronize_device -> {r:?}");
    }
}

#[test]
fn drop_error_handler_runs_with_no_lock_held() {
    const NAME: &str = "drop_error_handler_runs_with_no_lock_held";
    if is_child(NAME) {
        let acl: &'static Acl = Box::leak(Box::new(
            Acl::init_with(&InitOptions::default().library(sim_path())).unwrap(),
        ));
        let device = Box::leak(Box::new(acl.set_device(0).unwrap()));
        let ctx: &'static Context<'static> = Box::leak(Box::new(device.create_context().unwrap()));
        CTX.set(ctx).ok();
        let (a, b) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let input: Vec<u32> = (0..1024).collect();
        let mut x = ctx.alloc::<u32>(1024, MallocPolicy::HugeFirst).unwrap();
        let (mut o1, mut o2) = (vec![0u32; 1024], vec![0u32; 1024]);
        ascend_typestate::set_drop_error_handler(syncing_handler);
        let sim = acl.simulator().unwrap();
        let r = ctx.async_scope(|scope| {
            let p = scope.copy(&a, &mut x, &input)?;
            scope.copy(&b, &mut o1, p)?; // join a -> b
            scope.copy(&b, &mut o2, p)?; // another join a -> b
            // Both join events' destruction (at b's synchronisation) fail once.
            sim.inject_fault("aclrtDestroyEvent", 507000, 0, 2)?;
            Ok(())
        });
        println!("scope returned {r:?}");
        assert_eq!(o1, input);
        return;
    }
    let out = spawn_child(NAME, Duration::from_secs(15), &[]);
    println!("{out:#?}");
    assert!(!out.timed_out, "deadlock: the child hung\n{}", out.stderr);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------
// One injected failure at each runtime call of a program of nested, multi-context,
// multi-stream async scopes (plus a panicking one).
// ---------------------------------------------------------------------------------------

const N: usize = 512;

fn step(x: u32) -> u32 {
    x.wrapping_mul(5).wrapping_add(1)
}

fn check(ok: bool, what: &'static str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(what))
    }
}

/// Every family of scope work; explicit teardown; every error propagated with `?`.
fn program(path: &Path, fault: Option<(&str, u32)>) -> Result<()> {
    let acl = Acl::init_with(&InitOptions::default().library(path))?;
    let sim = acl.simulator().expect("simulator");
    sim.reset_call_counts();
    if let Some((call, skip)) = fault {
        sim.inject_fault(call, 507000, skip, 1)?;
    }
    let d0 = acl.set_device(0)?;
    let d1 = acl.set_device(1)?;
    let ca = d0.create_context()?;
    let cb = d0.create_context()?;
    let cc = d1.create_context()?;
    let a1 = ca.create_stream()?;
    let a2 = ca.create_stream()?;
    let a3 = ca.create_stream()?;
    let b1 = cb.create_stream()?;
    let c1 = cc.create_stream()?;
    let input: Vec<u32> = (0..N as u32).collect();
    let want: Vec<u32> = input.iter().map(|&v| step(v)).collect();
    let mut pinned = ca.alloc_host::<u32>(N)?;
    pinned.copy_from_slice(&input);
    let mut x = ca.alloc::<u32>(N, MallocPolicy::HugeFirst)?;
    let mut y = ca.alloc::<u32>(N, MallocPolicy::NormalOnly)?;
    let mut f = ca.alloc::<u8>(64, MallocPolicy::HugeOnly)?;
    let mut z = cb.alloc::<u32>(N, MallocPolicy::HugeFirst)?;
    let mut w = cc.alloc::<u32>(N, MallocPolicy::HugeFirst)?;
    let mut o = [
        vec![0u32; N],
        vec![0u32; N],
        vec![0u32; N],
        vec![0u32; N],
        vec![0u32; N],
        vec![0u32; N],
    ];
    let [o1, o2, o3, o4, o5, o6] = &mut o;
    ca.async_scope(|s| {
        s.memset(&a3, &mut f, 0x5A)?;
        let px = s.copy(&a1, &mut x, &pinned)?;
        let py = s.simulated_map(&a2, Duration::from_millis(1), px, &mut y, step)?;
        s.copy(&a3, o1, py)?;
        s.copy(&a3, o2, py)?;
        s.copy(&a1, o3, py)?;
        cb.async_scope(|t| {
            let pz = t.copy(&b1, &mut z, &pinned)?;
            t.copy(&b1, o4, pz)?;
            ca.async_scope(|u| u.copy(&a2, o5, py).map(drop))?;
            Ok(())
        })?;
        cc.async_scope(|t| {
            let pw = t.copy(&c1, &mut w, &input)?;
            t.copy(&c1, o6, pw)?;
            Ok(())
        })?;
        Ok(())
    })?;
    check(
        o[0] == want && o[1] == want && o[2] == want,
        "self-check: pending reads",
    )?;
    check(o[3] == input && o[5] == input, "self-check: other contexts")?;
    check(o[4] == want, "self-check: nested scope")?;

    // A panicking scope with work pending on two streams.
    let mut o7 = vec![0u32; N];
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ca.async_scope(|s| -> Result<()> {
            let p = s.copy(&a1, &mut x, &input)?;
            s.copy(&a2, &mut o7, p)?;
            panic!("red: a bug in the scope");
        })
    }));
    match panicked {
        Err(_) => check(o7 == input, "self-check: the panicking scope's copy")?,
        Ok(r) => r?, // an injected error ended the body before the panic
    }

    // Synchronous copies and memsets of views.
    ca.memset(&mut x, 0)?;
    ca.copy(
        &mut x.slice_mut(N / 2..).unwrap(),
        &y.slice(..N / 2).unwrap(),
    )?;
    let mut back = vec![1u32; N];
    ca.copy(&mut back[..], &x)?;
    check(back[..N / 2].iter().all(|&v| v == 0), "self-check: memset")?;
    check(back[N / 2..] == want[..N / 2], "self-check: D2D view")?;
    let mut flags = [0u8; 64];
    ca.copy(&mut flags[..], &f)?;
    check(flags.iter().all(|&b| b == 0x5A), "self-check: async memset")?;

    // Teardown.
    w.free()?;
    z.free()?;
    f.free()?;
    y.free()?;
    x.free()?;
    pinned.free()?;
    c1.destroy()?;
    b1.destroy()?;
    a3.destroy()?;
    a2.destroy()?;
    a1.destroy()?;
    cc.destroy()?;
    cb.destroy()?;
    ca.destroy()?;
    d1.reset()?;
    d0.reset()?;
    acl.finalize()?;
    Ok(())
}

const FUNCTIONS: &[&str] = &[
    "aclrtSetDevice",
    "aclrtResetDevice",
    "aclrtCreateContext",
    "aclrtDestroyContext",
    "aclrtSetCurrentContext",
    "aclrtCreateStream",
    "aclrtDestroyStream",
    "aclrtSynchronizeStream",
    "aclrtStreamWaitEvent",
    "aclrtCreateEventWithFlag",
    "aclrtDestroyEvent",
    "aclrtRecordEvent",
    "aclrtResetEvent",
    "aclrtMalloc",
    "aclrtFree",
    "aclrtMallocHost",
    "aclrtFreeHost",
    "aclrtMemcpy",
    "aclrtMemcpyAsync",
    "aclrtMemset",
    "aclrtMemsetAsync",
    "aclsimLaunchKernel",
    "aclrtSynchronizeDevice",
    "aclFinalize",
    "aclrtGetDevice",
    "aclrtGetCurrentContext",
];

/// The child side of one case: runs the program with the fault in [`FAULT_ENV`], then
/// prints one `RESULT` line.
#[test]
fn scope_fault_case() {
    const NAME: &str = "scope_fault_case";
    if !is_child(NAME) {
        return;
    }
    let path = sim_path();
    let drops = support::DropErrors::capture();
    let sim = support::sim::Sim::open(&path);
    let spec = std::env::var(FAULT_ENV).unwrap_or_default();
    let fault = spec
        .split_once(':')
        .map(|(c, k)| (c.to_owned(), k.parse::<u32>().unwrap()));
    let r = program(&path, fault.as_ref().map(|(c, k)| (c.as_str(), *k)));
    let counts: Vec<String> = FUNCTIONS
        .iter()
        .map(|f| format!("{f}={}", sim.call_count(f)))
        .collect();
    let findings = sim.findings();
    let live = sim.live_objects();
    let initialized = sim.runtime_initialized();
    let drop_errors = drops.take();
    println!(
        "RESULT\t{}\t{:?}\t{}\t{}\t{:?}\t{:?}",
        spec,
        r.as_ref().err().map(|e| e.to_string()),
        live,
        initialized,
        findings
            .iter()
            .map(|f| format!("[{}] {}", f.rule, f.message))
            .collect::<Vec<_>>(),
        drop_errors
    );
    println!("COUNTS\t{}", counts.join(","));
}

#[test]
fn one_fault_at_each_call_inside_async_scopes() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    // The clean run: call counts.
    let clean = spawn_child("scope_fault_case", Duration::from_secs(30), &[]);
    let result = clean
        .stdout
        .lines()
        .find_map(|l| l.find("RESULT\t").map(|i| l[i..].to_owned()))
        .unwrap_or_else(|| panic!("clean run: {clean:#?}"));
    assert!(
        result.contains("\tNone\t0\tfalse\t[]\t[]"),
        "clean run not clean: {result}\n{}",
        clean.stderr
    );
    let counts: Vec<(String, u32)> = clean
        .stdout
        .lines()
        .find_map(|l| l.find("COUNTS\t").map(|i| &l[i + 7..]))
        .unwrap()
        .split(',')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_owned(), v.parse().unwrap())
        })
        .collect();
    println!("clean counts: {counts:?}");
    let only = std::env::var("RED_ONLY").ok();
    let mut problems = Vec::new();
    let mut cases = 0;
    for (call, n) in &counts {
        if only.as_deref().is_some_and(|o| o != call) {
            continue;
        }
        for k in 0..*n {
            cases += 1;
            let spec = format!("{call}:{k}");
            let out = spawn_child(
                "scope_fault_case",
                Duration::from_secs(20),
                &[(FAULT_ENV, spec.clone())],
            );
            let line = out
                .stdout
                .lines()
                .find_map(|l| l.find("RESULT\t").map(|i| l[i..].to_owned()));
            let bad = match &line {
                None => true,
                Some(l) => {
                    let f: Vec<&str> = l.split('\t').collect();
                    // live objects 0, finalized, no findings, the error returned or reported
                    let returned = f[2] != "None";
                    let reported = f[6] != "[]";
                    f[3] != "0"
                        || f[4] != "false"
                        || f[5] != "[]"
                        || !(returned || reported)
                        || f[2].contains("self-check")
                }
            };
            if bad || out.timed_out || out.code != Some(0) {
                let tail: String = out
                    .stderr
                    .lines()
                    .filter(|l| l.starts_with("ascend-typestate") || l.contains("panicked"))
                    .take(6)
                    .collect::<Vec<_>>()
                    .join("\n      ");
                problems.push(format!(
                    "{spec}: code {:?} signal {:?} timed_out {} ({:?})\n    {}\n      {}",
                    out.code,
                    out.signal,
                    out.timed_out,
                    out.elapsed,
                    line.unwrap_or_else(|| "<no result line>".into()),
                    tail
                ));
            }
        }
    }
    println!("{cases} cases, {} problems", problems.len());
    for p in &problems {
        println!("{p}");
    }
    assert!(problems.is_empty(), "{} problem case(s)", problems.len());
}
