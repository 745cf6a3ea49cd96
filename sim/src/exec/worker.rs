//! Stream workers (S1: one thread per stream, tasks in issue order): the loop that runs
//! [`step`](super::step::step) under the lock and task bodies ([`Job`]) without it.
//!
//! Layer: executor; imports `exec::step`, the rules and the plain data, nothing above.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use super::step::{Job, Step, step};
use crate::pt::PCond;
use crate::rules::task::complete_front;
use crate::state::{CUR_CTX, G, IN_CALLBACK, STREAM_BASE, code, handle};

/// Worker loop of stream `sid`. `cv_addr` is the address of the stream's boxed condvar,
/// which outlives this thread (it is dropped only after the thread is joined).
pub(super) fn worker(sid: u64, cv_addr: usize) {
    // SAFETY: see above: the Box<PCond> is owned by the stream (or by whoever tears the
    // stream down) until after pthread_join on this thread returns.
    let cv: &PCond = unsafe { &*(cv_addr as *const PCond) };
    let mut g = G.lock();
    loop {
        let step = {
            let Some(rt) = g.rt.as_deref_mut() else {
                return;
            };
            match rt.streams.get(&sid) {
                None => return,
                Some(s) if s.stop => return,
                Some(_) => {}
            }
            step(rt, sid)
        };
        match step {
            Step::Idle => cv.wait(&mut g),
            Step::WaitFor(d) => cv.wait_timeout(&mut g, d),
            Step::Continue => {}
            Step::Run(Job::Dvpp(work)) => {
                let result = g.unlocked(|| work.execute());
                let Some(rt) = g.rt.as_deref_mut() else {
                    return;
                };
                task_ran(rt, sid, &work, result);
                crate::extra::after_run(rt, sid);
                complete_front(rt, sid);
            }
            Step::Run(job) => {
                let failed = g.unlocked(|| run_job(job));
                let Some(rt) = g.rt.as_deref_mut() else {
                    return;
                };
                if let Some(msg) = failed {
                    crate::extra::task_failed(rt, sid, code::RT_INTERNAL_ERROR);
                    rt.report(
                        "C8",
                        format!(
                            "{msg} on stream {:#x}; a kernel function or host function must not panic",
                            handle(STREAM_BASE, sid)
                        ),
                    );
                }
                crate::extra::after_run(rt, sid);
                complete_front(rt, sid);
            }
        }
    }
}

/// Runs a job without the lock. Returns a panic message if a kernel body panicked.
fn run_job(job: Job) -> Option<String> {
    match job {
        Job::Copy { dst, src, count } => {
            // SAFETY: both ranges were validated at issue (M1) to lie inside live tracked
            // allocations, kept alive by their use count (M2), or in untracked host memory
            // the caller must keep alive until the stream is synchronized (M1 contract).
            unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, count) };
            None
        }
        Job::Set { ptr, value, count } => {
            // SAFETY: as for Copy.
            unsafe { std::ptr::write_bytes(ptr as *mut u8, value, count) };
            None
        }
        Job::Kernel {
            dur_us,
            f,
            ud,
            bufs,
        } => {
            if dur_us > 0 {
                std::thread::sleep(Duration::from_micros(dur_us));
            }
            let f = f?;
            let ptrs: Vec<*mut libc::c_void> = bufs.iter().map(|b| *b as *mut _).collect();
            IN_CALLBACK.with(|c| c.set(true));
            let r = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: a kernel body supplied by the caller through aclsimLaunchKernel,
                // called with the user data and buffer list it registered.
                unsafe { f(ud as *mut libc::c_void, ptrs.as_ptr(), ptrs.len()) }
            }));
            IN_CALLBACK.with(|c| c.set(false));
            r.err().map(|_| "kernel body panicked".to_string())
        }
        Job::Host { f, ud, ctx } => {
            // C10: C8 applies inside a host function as inside a callback; it runs in the
            // stream's context (so queries such as aclrtStreamQuery(NULL) resolve).
            let saved = CUR_CTX.with(|c| c.replace(ctx));
            IN_CALLBACK.with(|c| c.set(true));
            let r = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: a host function and its argument as registered by
                // aclrtLaunchHostFunc, called once.
                unsafe { f(ud as *mut libc::c_void) }
            }));
            IN_CALLBACK.with(|c| c.set(false));
            CUR_CTX.with(|c| c.set(saved));
            r.err().map(|_| "host function panicked".to_string())
        }
        Job::Model(run) => {
            run.run();
            None
        }
        // Run by the worker loop itself (its result goes into the output description).
        Job::Dvpp(work) => work.execute().err(),
    }
}

/// A stream worker ran media task `work` at the head of `sid`: its result goes into its
/// output description (a decode's width, height and strides, DV6), a failure to the
/// stream (P3b).
fn task_ran(
    rt: &mut crate::state::Rt,
    sid: u64,
    work: &crate::state::dvpp::Work,
    result: Result<(), String>,
) {
    use crate::state::dvpp::Work;
    match result {
        Ok(()) => {
            let written = match work {
                Work::Decode { layout, .. } => Some([
                    layout.width,
                    layout.height,
                    layout.width_stride,
                    layout.height_stride,
                ]),
                Work::Resize { .. } => None,
            };
            crate::rules::dvpp::report_result(rt, work.desc(), Ok(written));
        }
        // Why (corrupt data, a header changed since the submission) is not kept: the code
        // is what the board reports too.
        Err(_) => {
            crate::rules::dvpp::report_result(
                rt,
                work.desc(),
                Err(crate::rules::dvpp::TASK_FAILED),
            );
            crate::extra::task_failed(rt, sid, crate::rules::dvpp::TASK_FAILED);
        }
    }
}
