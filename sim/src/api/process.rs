//! Process: aclInit, aclFinalize (P1-P3).
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`, `calls`, `pt`, `trace`),
//! never the reverse.

use std::ffi::{c_char, c_void};
use std::time::{Duration, Instant};

use crate::calls::CallId;
use crate::state::{CUR_CTX, Device, G, HOST_CV, IN_CALLBACK, Rt, code};
use crate::{calls, env_flag, exec, ffi, trace};

#[unsafe(no_mangle)]
pub extern "C" fn aclInit(configPath: *const c_char) -> i32 {
    calls::count(CallId::aclInit);
    ffi(|| {
        let _ = configPath; // The JSON config file is not interpreted (README).
        let mut g = G.lock();
        if g.rt.is_some() {
            return Err(code::REPEAT_INITIALIZE); // P2
        }
        let device_count = g.device_count_override.unwrap_or_else(|| {
            std::env::var("ACLSIM_DEVICE_COUNT")
                .ok()
                .and_then(|v| v.trim().parse::<u32>().ok())
                .filter(|n| (1..=64).contains(n))
                .unwrap_or(2)
        });
        let check = env_flag("ACLSIM_CHECK", true);
        let quiet = env_flag("ACLSIM_QUIET", false);
        let run_mode = match std::env::var("ACLSIM_RUN_MODE") {
            Ok(v) if v.trim().eq_ignore_ascii_case("device") => 0,
            _ => 1,
        };
        let deadlock_ms = std::env::var("ACLSIM_DEADLOCK_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(500);
        // P3: the op wait timeout aclInit starts with (seconds, 0 = never).
        let op_wait_timeout = std::env::var("ACLSIM_OP_WAIT_TIMEOUT")
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .unwrap_or(0);
        let trace = std::env::var("ACLSIM_TRACE")
            .ok()
            .filter(|p| !p.is_empty())
            .map(trace::Trace::new);
        g.check = check;
        g.quiet = quiet;
        g.ever_init = true;
        let next_id = g.next_id;
        g.rt = Some(Box::new(Rt {
            check,
            quiet,
            run_mode,
            device_count,
            deadlock_after: Duration::from_millis(deadlock_ms),
            next_id,
            devices: (0..device_count).map(|_| Device::default()).collect(),
            contexts: Default::default(),
            streams: Default::default(),
            events: Default::default(),
            allocs: Default::default(),
            subs: Default::default(),
            op_wait_timeout,
            t0: Instant::now(),
            findings: Vec::new(),
            trace,
            progress: 0,
            faults: Vec::new(),
            extra: crate::extra::Extra::from_env(),
            sync_waiters: Vec::new(),
            models: Default::default(),
            dvpp: Default::default(),
        }));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclFinalize() -> i32 {
    calls::count(CallId::aclFinalize);
    ffi(|| {
        let mut g = G.lock();
        if g.rt.is_none() {
            return Err(if g.ever_init {
                code::REPEAT_FINALIZE // P2
            } else {
                code::UNINITIALIZE // P1
            });
        }
        if IN_CALLBACK.with(|c| c.get()) {
            if let Some(rt) = g.rt.as_deref_mut() {
                rt.report(
                    "C8",
                    "aclFinalize called from inside a callback or kernel body; rejected with 107000".into(),
                );
            }
            return Err(code::RT_PARAM_INVALID);
        }
        let Some(rt) = g.rt.as_deref_mut() else {
            return Err(code::UNINITIALIZE);
        };
        // An injected failure (aclsimInjectFault): the runtime stays initialized.
        if !rt.faults.is_empty()
            && let Some(code) = rt.take_fault("aclFinalize")
        {
            return Err(code);
        }
        // P2 / D3: one leak report listing every live resource.
        let mut live = rt.describe_live(None);
        for (i, d) in rt.devices.iter().enumerate() {
            if d.refs > 0 {
                live.push(format!(
                    "device {i} set {} time(s) without aclrtResetDevice",
                    d.refs
                ));
            }
        }
        if !live.is_empty() {
            rt.report(
                "P2",
                format!(
                    "aclFinalize with {} live resource(s): {}. Release them in reverse order (D3: events and streams, contexts, aclrtResetDevice) before aclFinalize; the simulator frees them now",
                    live.len(),
                    live.join(", ")
                ),
            );
        }
        let ids: Vec<u64> = rt.streams.keys().copied().collect();
        // Every parked host waiter and report thread returns (100001 for the latter).
        for sub in rt.subs.values() {
            if let Some(w) = sub.waiter {
                exec::wake(w);
            }
        }
        for sub in rt.extra.host_func_subs.values() {
            if let Some(w) = sub.waiter {
                exec::wake(w);
            }
        }
        let reapers = exec::kill_streams(rt, &ids);
        let Some(mut rt) = g.rt.take() else {
            return Err(code::UNINITIALIZE);
        };
        let findings = std::mem::take(&mut rt.findings);
        g.saved_findings.extend(findings);
        g.next_id = rt.next_id;
        HOST_CV.broadcast();
        let trace = rt.trace.take();
        g.unlocked(|| exec::reap(reapers));
        // Workers that another thread (a concurrent aclrtDestroyStream, aclrtDestroyContext
        // or aclrtResetDevice) is joining may still run a task on this memory: wait for them.
        exec::wait_reaped(&mut g, &ids);
        // So may a host thread copying tracked memory without the lock (exec::pinned).
        while g.pinned.iter().any(|p| rt.allocs.contains_key(p)) {
            HOST_CV.wait(&mut g);
        }
        g.unlocked(move || {
            // Every worker is joined: no task can touch the memory any more.
            for (_, a) in std::mem::take(&mut rt.allocs) {
                // SAFETY: allocated by libc::calloc in aclrtMalloc/aclrtMallocHost and not
                // yet freed (freed ones were removed from the map).
                unsafe { libc::free(a.base as *mut c_void) };
            }
            drop(rt);
            if let Some(t) = trace
                && let Err(e) = t.write()
            {
                eprintln!("aclsim: cannot write trace {}: {e}", t.path);
            }
        });
        CUR_CTX.with(|c| c.set(0));
        Ok(())
    })
}
