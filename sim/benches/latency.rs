//! Plain timing benchmark of the simulator (harness = false; about a minute in all). Prints
//! one line per case with the median of several samples (sim/README.md, "Performance").
//!
//! Run: `cargo bench -p ascendcl-sim --bench latency`. `ACLSIM_BENCH_LOAD=N` runs N
//! busy-looping child processes during the measurements ("under load"). The first case is
//! the floor: a plain pthread mutex/condvar hand-off between two threads, measured in the
//! same run, against which the simulator's stream-to-stream and callback hand-offs compare.

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ascendcl::pt::{PCond, PMutex, spawn};
use ascendcl::*;

const ACL_EVENT_SYNC: u32 = 1;

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
    ok(aclrtCreateEventWithFlag(&mut e, ACL_EVENT_SYNC));
    e
}

// ---- Floor: two threads handing a token back and forth through a pthread condvar ------

static TOKEN: PMutex<(u8, bool)> = PMutex::new((0, false));
static CV_A: PCond = PCond::new();
static CV_B: PCond = PCond::new();

/// One round trip = two hand-offs (A -> B -> A), like an event ping-pong.
fn bench_floor() -> Duration {
    let t = spawn(|| {
        let mut g = TOKEN.lock();
        loop {
            while g.0 != 1 && !g.1 {
                CV_B.wait(&mut g);
            }
            if g.1 {
                return;
            }
            g.0 = 0;
            CV_A.signal();
        }
    })
    .expect("spawn");
    let n = 2_000u32;
    let mut samples = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        for _ in 0..n {
            let mut g = TOKEN.lock();
            g.0 = 1;
            CV_B.signal();
            while g.0 != 0 {
                CV_A.wait(&mut g);
            }
        }
        samples.push(start.elapsed() / n);
    }
    TOKEN.lock().1 = true;
    CV_B.signal();
    t.join();
    median(samples)
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

/// Two streams hand control back and forth through two events; the host only issues.
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

/// One event cycle seen from the host: record on `a`, wait + reset on `b`, synchronize `b`.
fn event_cycles(n: u32) -> Duration {
    let (a, b) = (new_stream(), new_stream());
    let e = new_event();
    let mut samples = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        ok(aclrtRecordEvent(e, a));
        ok(aclrtStreamWaitEvent(b, e));
        ok(aclrtResetEvent(e, b));
        ok(aclrtSynchronizeStream(b));
        samples.push(t.elapsed());
    }
    ok(aclrtSynchronizeStream(a));
    ok(aclrtDestroyEvent(e));
    ok(aclrtDestroyStream(a));
    ok(aclrtDestroyStream(b));
    median(samples)
}

/// The event cycle with `idle` other streams alive (each with its parked worker).
fn bench_idle_streams(idle: usize) -> Duration {
    let streams: Vec<_> = (0..idle).map(|_| new_stream()).collect();
    std::thread::sleep(Duration::from_millis(200)); // their workers start and park
    let d = event_cycles(1_000);
    for s in streams {
        ok(aclrtDestroyStream(s));
    }
    d
}

static RELEASE: Mutex<bool> = Mutex::new(false);
static RELEASED: Condvar = Condvar::new();

/// A kernel body that holds its stream (parked, not spinning) until [`release`].
unsafe extern "C" fn hold(_: *mut c_void, _: *const *mut c_void, _: usize) {
    let mut r = RELEASE.lock().expect("lock");
    while !*r {
        r = RELEASED.wait(r).expect("wait");
    }
}

fn release(v: bool) {
    *RELEASE.lock().expect("lock") = v;
    RELEASED.notify_all();
}

/// `depth` waits queued on stream `c` for a plain event whose record is held behind a
/// kernel on stream `d`; releasing the kernel lets the record release them all: the cost
/// per queued wait, from the release to the synchronize. Before the release, event round
/// trips on two other streams (with `aclrtSynchronizeEvent`): their cost should not depend
/// on how much work is queued elsewhere.
fn bench_queue_depth(depth: u32) -> (Duration, Duration) {
    let (a, b, c, d) = (new_stream(), new_stream(), new_stream(), new_stream());
    let e = new_event();
    let mut p = null_mut();
    ok(aclrtCreateEvent(&mut p));
    let mut drain = Vec::new();
    let mut trip = Vec::new();
    for _ in 0..5 {
        release(false);
        ok(aclsimLaunchKernel(
            d,
            0,
            Some(hold),
            null_mut(),
            std::ptr::null(),
            0,
        ));
        ok(aclrtRecordEvent(p, d));
        for _ in 0..depth {
            ok(aclrtStreamWaitEvent(c, p));
        }
        for _ in 0..200 {
            let t = Instant::now();
            ok(aclrtRecordEvent(e, a));
            ok(aclrtStreamWaitEvent(b, e));
            ok(aclrtResetEvent(e, b));
            ok(aclrtSynchronizeEvent(e));
            ok(aclrtSynchronizeStream(b));
            trip.push(t.elapsed());
        }
        let t = Instant::now();
        release(true);
        ok(aclrtSynchronizeStream(c));
        drain.push(t.elapsed() / depth);
        ok(aclrtSynchronizeStream(d));
    }
    for ev in [p, e] {
        ok(aclrtDestroyEvent(ev));
    }
    for s in [a, b, c, d] {
        ok(aclrtDestroyStream(s));
    }
    (median(drain), median(trip))
}

unsafe extern "C" fn empty_cb(_: *mut c_void) {}

/// A report thread for `stream`: subscribed, then processing callbacks until `stop` (it
/// waits with `timeout_ms`; -1 = forever, ended by the unsubscribe's 107012).
fn report_thread(
    stream: *mut c_void,
    timeout_ms: i32,
    stop: Arc<AtomicBool>,
) -> (u64, std::thread::JoinHandle<()>) {
    let mut ctx = null_mut();
    ok(aclrtGetCurrentContext(&mut ctx));
    let ctx_addr = ctx as usize;
    let (tx, rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let th = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            ok(aclrtSetCurrentContext(ctx_addr as *mut c_void));
            // SAFETY: always safe.
            tx.send(unsafe { libc::pthread_self() } as u64)
                .expect("send id");
            go_rx.recv().expect("subscribed");
            while !stop.load(Ordering::Acquire) {
                let r = aclrtProcessReport(timeout_ms);
                if r == 107012 {
                    return; // unsubscribed
                }
                assert!(r == 0 || r == 507012, "process report {r}");
            }
        })
        .expect("spawn report thread");
    let tid = rx.recv().expect("thread id");
    ok(aclrtSubscribeReport(tid, stream));
    go_tx.send(()).expect("go");
    (tid, th)
}

fn callback_round_trips(s: *mut c_void, n: usize) -> Duration {
    let mut samples = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        ok(aclrtLaunchCallback(Some(empty_cb), null_mut(), 1, s));
        ok(aclrtSynchronizeStream(s));
        samples.push(t.elapsed());
    }
    median(samples)
}

fn bench_callback() -> Duration {
    let s = new_stream();
    let stop = Arc::new(AtomicBool::new(false));
    let (tid, th) = report_thread(s, 10, stop.clone());
    let d = callback_round_trips(s, 2_000);
    stop.store(true, Ordering::Release);
    ok(aclrtUnSubscribeReport(tid, s));
    th.join().expect("join");
    ok(aclrtDestroyStream(s));
    d
}

fn cpu_time() -> Duration {
    // SAFETY: a zeroed rusage is a valid out buffer for getrusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// `n` report threads (each subscribed to its own stream) waiting forever in
/// aclrtProcessReport: the process's CPU use while idle (CPU time / wall time over
/// `idle`), then a callback round trip on one of the streams.
fn bench_report_threads(n: usize, idle: Duration) -> (f64, Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    let streams: Vec<_> = (0..n).map(|_| new_stream()).collect();
    let threads: Vec<_> = streams
        .iter()
        .map(|s| report_thread(*s, -1, stop.clone()))
        .collect();
    std::thread::sleep(Duration::from_millis(300)); // let them all park
    let (c0, w0) = (cpu_time(), Instant::now());
    std::thread::sleep(idle);
    let cpu = (cpu_time() - c0).as_secs_f64() / w0.elapsed().as_secs_f64();
    let trip = callback_round_trips(streams[0], 200);
    stop.store(true, Ordering::Release);
    for ((tid, th), s) in threads.into_iter().zip(&streams) {
        ok(aclrtUnSubscribeReport(tid, *s));
        th.join().expect("join");
    }
    for s in streams {
        ok(aclrtDestroyStream(s));
    }
    (cpu, trip)
}

/// A 1 MiB asynchronous host-to-device copy plus the synchronize, against a host memcpy of
/// the same buffers.
fn bench_copy() -> (Duration, Duration) {
    const N: usize = 1 << 20;
    let s = new_stream();
    let (mut d, mut h) = (null_mut(), null_mut());
    ok(aclrtMalloc(&mut d, N, 0));
    ok(aclrtMallocHost(&mut h, N));
    // SAFETY: both are live allocations of N bytes.
    unsafe { std::ptr::write_bytes(h as *mut u8, 1, N) };
    let mut copy = Vec::new();
    let mut memcpy = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        ok(aclrtMemcpyAsync(d, N, h, N, 1, s));
        ok(aclrtSynchronizeStream(s));
        copy.push(t.elapsed());
        let t = Instant::now();
        // SAFETY: disjoint live allocations of N bytes each.
        unsafe { libc::memcpy(d, h, N) };
        std::hint::black_box(d);
        memcpy.push(t.elapsed());
    }
    ok(aclrtFree(d));
    ok(aclrtFreeHost(h));
    ok(aclrtDestroyStream(s));
    (median(copy), median(memcpy))
}

fn main() {
    // SAFETY: single-threaded at this point.
    unsafe { std::env::set_var("ACLSIM_QUIET", "1") };
    let load: usize = std::env::var("ACLSIM_BENCH_LOAD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut hogs: Vec<_> = (0..load)
        .map(|_| {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("spawn load")
        })
        .collect();
    println!("load: {load} busy process(es)");
    ok(aclInit(std::ptr::null()));
    ok(aclrtSetDevice(0));
    // ACLSIM_BENCH_ONLY=floor,cycle,...: run only the named cases.
    let only = std::env::var("ACLSIM_BENCH_ONLY").unwrap_or_default();
    let run = |name: &str| only.is_empty() || only.split(',').any(|o| o == name);
    if run("floor") {
        let f = bench_floor();
        println!("floor: pthread condvar hand-off, round trip (2 hand-offs): median {f:?}");
    }
    if run("enqueue") {
        let e = bench_enqueue();
        println!("enqueue (aclsimLaunchKernel, empty task): median {e:?} per task");
    }
    if run("pingpong") {
        let p = bench_ping_pong();
        println!("two-stream event ping-pong (record/wait/reset x2): median {p:?} per round trip");
    }
    if run("callback") {
        let c = bench_callback();
        println!("callback round trip (launch BLOCK + synchronize): median {c:?}");
    }
    if run("copy") {
        let (copy, memcpy) = bench_copy();
        println!(
            "1 MiB async copy + synchronize: median {copy:?}; host memcpy {memcpy:?} (ratio {:.2})",
            copy.as_secs_f64() / memcpy.as_secs_f64()
        );
    }
    if run("depth") {
        for depth in [1_000, 16_000] {
            let (drain, trip) = bench_queue_depth(depth);
            println!(
                "queue depth {depth}: drain {drain:?} per queued wait; event round trip with them queued {trip:?}"
            );
        }
    }
    if run("cycle") {
        for idle in [0, 1_024] {
            let d = bench_idle_streams(idle);
            println!(
                "event cycle (record, wait, reset, synchronize) with {idle} idle streams: median {d:?}"
            );
        }
    }
    if run("reporters") {
        let (cpu, trip) = bench_report_threads(1_024, Duration::from_secs(3));
        println!(
            "1024 report threads parked: idle CPU {:.1}% of one core; callback round trip {trip:?}",
            cpu * 100.0
        );
    }
    ok(aclrtResetDevice(0));
    ok(aclFinalize());
    for h in &mut hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    assert_eq!(aclsimFindingCount(), 0, "benchmark made checker findings");
}
