//! Plain timing benchmark of the simulator (harness = false; a few seconds in all):
//! enqueue cost per task, two-stream event ping-pong latency, callback round trip.
//! Run: `cargo bench -p ascendcl-sim --bench latency`. Prints medians.

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ascendcl::*;

fn ok(r: i32) {
    assert_eq!(r, 0, "runtime call failed with {r}");
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn new_stream() -> *mut c_void {
    let mut s = null_mut();
    ok(aclrtCreateStream(&mut s));
    s
}

fn new_event() -> *mut c_void {
    let mut e = null_mut();
    ok(aclrtCreateEvent(&mut e));
    e
}

fn bench_enqueue() -> Duration {
    let s = new_stream();
    let n = 20_000u32;
    let mut samples = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..n {
            ok(aclsimLaunchKernel(
                s,
                0,
                None,
                null_mut(),
                std::ptr::null(),
                0,
            ));
        }
        samples.push(t.elapsed() / n);
        ok(aclrtSynchronizeStream(s));
    }
    ok(aclrtDestroyStream(s));
    median(samples)
}

fn bench_ping_pong() -> Duration {
    let (a, b) = (new_stream(), new_stream());
    let (ea, eb) = (new_event(), new_event());
    let n = 2_000u32;
    let mut samples = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..n {
            ok(aclrtRecordEvent(ea, a));
            ok(aclrtStreamWaitEvent(b, ea));
            ok(aclrtResetEvent(ea, b));
            ok(aclrtRecordEvent(eb, b));
            ok(aclrtStreamWaitEvent(a, eb));
            ok(aclrtResetEvent(eb, a));
        }
        ok(aclrtSynchronizeStream(a));
        ok(aclrtSynchronizeStream(b));
        samples.push(t.elapsed() / n);
    }
    ok(aclrtDestroyEvent(ea));
    ok(aclrtDestroyEvent(eb));
    ok(aclrtDestroyStream(a));
    ok(aclrtDestroyStream(b));
    median(samples)
}

unsafe extern "C" fn empty_cb(_: *mut c_void) {}

fn bench_callback() -> Duration {
    let s = new_stream();
    let mut ctx = null_mut();
    ok(aclrtGetCurrentContext(&mut ctx));
    let ctx_addr = ctx as usize;
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let th = std::thread::spawn(move || {
        ok(aclrtSetCurrentContext(ctx_addr as *mut c_void));
        // SAFETY: always safe.
        tx.send(unsafe { libc::pthread_self() } as u64)
            .expect("send id");
        while !stop2.load(Ordering::Acquire) {
            let r = aclrtProcessReport(10);
            assert!(r == 0 || r == 507012 || r == 107012, "process report {r}");
        }
    });
    let tid = rx.recv().expect("thread id");
    ok(aclrtSubscribeReport(tid, s));
    let mut samples = Vec::new();
    for _ in 0..2_000 {
        let t = Instant::now();
        ok(aclrtLaunchCallback(Some(empty_cb), null_mut(), 1, s));
        ok(aclrtSynchronizeStream(s));
        samples.push(t.elapsed());
    }
    ok(aclrtUnSubscribeReport(tid, s));
    stop.store(true, Ordering::Release);
    th.join().expect("join");
    ok(aclrtDestroyStream(s));
    median(samples)
}

fn main() {
    // SAFETY: single-threaded at this point.
    unsafe { std::env::set_var("ACLSIM_QUIET", "1") };
    ok(aclInit(std::ptr::null()));
    ok(aclrtSetDevice(0));
    let e = bench_enqueue();
    println!("enqueue (aclsimLaunchKernel, empty task): median {e:?} per task");
    let p = bench_ping_pong();
    println!("two-stream event ping-pong (record/wait/reset x2): median {p:?} per round trip");
    let c = bench_callback();
    println!("callback round trip (launch BLOCK + synchronize): median {c:?}");
    ok(aclrtResetDevice(0));
    ok(aclFinalize());
    assert_eq!(aclsimFindingCount(), 0, "benchmark made checker findings");
}
