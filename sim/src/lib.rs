//! `libascendcl.so`: a CPU simulator of the AscendCL runtime with a strict protocol checker.
//!
//! Every function of `include/ascendcl.h` and `sim/include/aclsim.h` is exported with the C
//! ABI. Semantics and error codes follow `docs/protocol.md` (rule IDs P/D/S/E/C/M);
//! deviations from the real runtime are listed in `sim/README.md`.
//!
//! Structure: [`pt`] pthread primitives (helgrind-friendly), [`state`] the global state,
//! [`exec`] stream workers, host waits and the deadlock watchdog, [`trace`] the Chrome
//! trace, and here the C entry points. Each entry point runs inside `catch_unwind` so a
//! panic never crosses the C ABI (it returns 500000 instead).
#![allow(non_snake_case)]

pub mod calls;
pub mod exec;
pub mod pt;
pub mod state;
pub mod trace;

use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use calls::CallId;
use exec::{WaitEnd, host_wait, teardown_streams};
use pt::{PGuard, self_id};
use state::*;

type R = Result<(), i32>;

fn ffi(f: impl FnOnce() -> R) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => code::SUCCESS,
        Ok(Err(e)) => e,
        Err(_) => code::INTERNAL_ERROR,
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Call {
    /// Pure queries: allowed inside callbacks.
    Query,
    /// Everything else: rejected inside a callback or kernel body (C8).
    Action,
}

/// Locks the state, checks P1 (initialized) and C8 (not inside a callback).
fn enter(name: &str, kind: Call) -> Result<PGuard<'static, Global>, i32> {
    let mut g = G.lock();
    let Some(rt) = g.rt.as_deref_mut() else {
        return Err(code::UNINITIALIZE);
    };
    if kind == Call::Action && IN_CALLBACK.with(|c| c.get()) {
        rt.report(
            "C8",
            format!(
                "{name} called from inside a callback or kernel body on thread {:#x}: a callback must not synchronize, allocate or free runtime resources or launch tasks (it can deadlock the stream); the simulator rejects the call with 107000",
                self_id()
            ),
        );
        return Err(code::RT_PARAM_INVALID);
    }
    // Injected failures (aclsimInjectFault, aclsimInjectFaultAt): the call fails before
    // doing anything, even checking its arguments.
    if !rt.faults.is_empty()
        && let Some(code) = rt.take_fault(name)
    {
        return Err(code);
    }
    Ok(g)
}

fn rt_of<'a>(g: &'a mut PGuard<'static, Global>) -> Result<&'a mut Rt, i32> {
    g.rt.as_deref_mut().ok_or(code::UNINITIALIZE)
}

/// NULL handles and NULL pointers: 100000 (`ACL_ERROR_INVALID_PARAM`) before any other check
/// (current CANN), even before the P1 check, the C8 check and injected failures.
fn non_null(ptrs: &[usize]) -> R {
    if ptrs.contains(&0) {
        Err(code::INVALID_PARAM)
    } else {
        Ok(())
    }
}

/// Writes an output parameter; NULL gives 100000.
fn out<T>(p: *mut T, v: T) -> R {
    if p.is_null() {
        return Err(code::INVALID_PARAM);
    }
    // SAFETY: non-NULL output pointer the caller passed for exactly this value type.
    unsafe { p.write(v) };
    Ok(())
}

fn check_out<T>(p: *mut T) -> R {
    if p.is_null() {
        Err(code::INVALID_PARAM)
    } else {
        Ok(())
    }
}

/// Resolves a stream handle (NULL: the current context's default stream, created lazily).
/// `strict`: the stream must belong to the calling thread's current context (D6, S4).
fn stream_for(rt: &mut Rt, h: usize, strict: bool) -> Result<u64, i32> {
    if h == 0 {
        let ctx = rt.cur_ctx()?;
        if let Some(sid) = rt.contexts.get(&ctx).and_then(|c| c.default_stream)
            && rt.stream_live(sid)
        {
            return Ok(sid);
        }
        let sid = exec::create_stream(rt, ctx, true)?;
        if let Some(c) = rt.contexts.get_mut(&ctx) {
            c.default_stream = Some(sid);
        }
        return Ok(sid);
    }
    let sid = decode(STREAM_BASE, h).ok_or(code::RT_PARAM_INVALID)?;
    let sctx = match rt.streams.get(&sid) {
        Some(s) if !s.dead => s.ctx,
        _ => return Err(code::RT_PARAM_INVALID),
    };
    if strict {
        let cur = rt.cur_ctx()?;
        if sctx != cur {
            return Err(code::RT_STREAM_CONTEXT);
        }
    }
    Ok(sid)
}

fn sh(sid: u64) -> usize {
    handle(STREAM_BASE, sid)
}
fn eh(eid: u64) -> usize {
    handle(EVENT_BASE, eid)
}

fn timeout_ms(t: i32) -> Result<Option<Duration>, i32> {
    match t {
        -1 => Ok(None),
        t if t > 0 => Ok(Some(Duration::from_millis(t as u64))),
        _ => Err(code::RT_PARAM_INVALID),
    }
}

fn env_flag(name: &str, default: bool) -> bool {
    match std::env::var(name) {
        Ok(v) => !matches!(v.trim(), "0" | "false" | "no" | "off" | ""),
        Err(_) => default,
    }
}

// ======================================================================================
// Process (P1-P3)
// ======================================================================================

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

// ======================================================================================
// Device and context (D1-D6)
// ======================================================================================

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetDevice(deviceId: i32) -> i32 {
    calls::count(CallId::aclrtSetDevice);
    ffi(|| {
        let mut g = enter("aclrtSetDevice", Call::Action)?;
        let rt = rt_of(&mut g)?;
        if deviceId < 0 || deviceId as u32 >= rt.device_count {
            return Err(code::RT_INVALID_DEVICEID); // D1
        }
        let d = deviceId as usize;
        rt.devices[d].refs += 1;
        let ctx = match rt.devices[d].default_ctx {
            Some(c) if rt.contexts.contains_key(&c) => c,
            _ => {
                let c = rt.new_id();
                rt.contexts.insert(
                    c,
                    Context {
                        device: deviceId,
                        is_default: true,
                        default_stream: None,
                    },
                );
                rt.devices[d].default_ctx = Some(c);
                c
            }
        };
        CUR_CTX.with(|c| c.set(ctx));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtResetDevice(deviceId: i32) -> i32 {
    calls::count(CallId::aclrtResetDevice);
    ffi(|| {
        let mut g = enter("aclrtResetDevice", Call::Action)?;
        let rt = rt_of(&mut g)?;
        if deviceId < 0 || deviceId as u32 >= rt.device_count {
            return Err(code::RT_INVALID_DEVICEID);
        }
        let d = deviceId as usize;
        if rt.devices[d].refs == 0 {
            return Err(code::RT_CONTEXT_RELEASE_ERROR); // D5
        }
        rt.devices[d].refs -= 1;
        if rt.devices[d].refs > 0 {
            return Ok(());
        }
        // Last reference (D1): D3 says everything on the device must be gone by now.
        let live = rt.describe_live(Some(deviceId));
        if !live.is_empty() {
            rt.report(
                "D3",
                format!(
                    "aclrtResetDevice({deviceId}) releases the device while {} resource(s) on it live: {}. Destroy events and streams, then contexts, free device memory, then reset the device; the simulator releases them now",
                    live.len(),
                    live.join(", ")
                ),
            );
        }
        let sids: Vec<u64> = rt
            .streams
            .iter()
            .filter(|(_, s)| s.device == deviceId)
            .map(|(k, _)| *k)
            .collect();
        teardown_streams(&mut g, sids);
        let rt = rt_of(&mut g)?;
        let ctxs: Vec<u64> = rt
            .contexts
            .iter()
            .filter(|(_, c)| c.device == deviceId)
            .map(|(k, _)| *k)
            .collect();
        for c in &ctxs {
            rt.contexts.remove(c);
        }
        rt.events.retain(|_, e| !ctxs.contains(&e.ctx));
        let mem: Vec<usize> = rt
            .allocs
            .iter()
            .filter(|(_, a)| !a.host && a.device == deviceId)
            .map(|(k, _)| *k)
            .collect();
        for p in mem {
            if let Some(a) = rt.allocs.remove(&p) {
                // SAFETY: calloc'd by aclrtMalloc; its streams are joined, so no task uses it.
                unsafe { libc::free(a.base as *mut c_void) };
            }
        }
        rt.devices[d].default_ctx = None;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetDevice(deviceId: *mut i32) -> i32 {
    calls::count(CallId::aclrtGetDevice);
    ffi(|| {
        non_null(&[deviceId as usize])?;
        let mut g = enter("aclrtGetDevice", Call::Query)?;
        let rt = rt_of(&mut g)?;
        check_out(deviceId)?;
        let ctx = rt.cur_ctx()?;
        let d = rt.contexts.get(&ctx).map_or(-1, |c| c.device);
        out(deviceId, d)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetDeviceCount(count: *mut u32) -> i32 {
    calls::count(CallId::aclrtGetDeviceCount);
    ffi(|| {
        non_null(&[count as usize])?;
        let mut g = enter("aclrtGetDeviceCount", Call::Query)?;
        let rt = rt_of(&mut g)?;
        out(count, rt.device_count)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetRunMode(runMode: *mut i32) -> i32 {
    calls::count(CallId::aclrtGetRunMode);
    ffi(|| {
        non_null(&[runMode as usize])?;
        let mut g = enter("aclrtGetRunMode", Call::Query)?;
        let rt = rt_of(&mut g)?;
        out(runMode, rt.run_mode)
    })
}

/// `timeout`: `None` waits forever, `Some(t)` is the caller's raw value (checked after the
/// fault check, like every argument).
fn sync_device(timeout: Option<i32>, name: &str) -> R {
    let mut g = enter(name, Call::Action)?;
    let timeout = timeout.map_or(Ok(None), timeout_ms)?;
    let rt = rt_of(&mut g)?;
    let ctx = rt.cur_ctx()?;
    let dev = rt.contexts.get(&ctx).map_or(-1, |c| c.device);
    let targets: Vec<u64> = rt
        .streams
        .iter()
        .filter(|(_, s)| s.device == dev && !s.dead)
        .map(|(k, _)| *k)
        .collect();
    let deadline = timeout.map(|d| Instant::now() + d);
    let t2 = targets.clone();
    let what = format!("{name}() on device {dev}");
    host_wait(&mut g, deadline, &targets, &what, move |rt| {
        t2.iter().all(|sid| {
            rt.streams
                .get(sid)
                .is_none_or(|s| s.tasks.is_empty() && s.cb_outstanding == 0)
        })
    })
    .map_err(|e| match e {
        WaitEnd::Timeout => code::RT_STREAM_SYNC_TIMEOUT,
        WaitEnd::Deadlock => code::RT_INTERNAL_ERROR,
        WaitEnd::Gone => code::UNINITIALIZE,
    })?;
    // S2/D4: report asynchronous errors of the device's streams (and clear them).
    let rt = rt_of(&mut g)?;
    let mut err = None;
    for sid in &targets {
        if let Some(s) = rt.streams.get_mut(sid)
            && let Some(e) = s.async_error.take()
        {
            err.get_or_insert(e);
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeDevice() -> i32 {
    calls::count(CallId::aclrtSynchronizeDevice);
    ffi(|| sync_device(None, "aclrtSynchronizeDevice"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeDeviceWithTimeout(timeout: i32) -> i32 {
    calls::count(CallId::aclrtSynchronizeDeviceWithTimeout);
    ffi(|| sync_device(Some(timeout), "aclrtSynchronizeDeviceWithTimeout"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtCreateContext(context: *mut *mut c_void, deviceId: i32) -> i32 {
    calls::count(CallId::aclrtCreateContext);
    ffi(|| {
        non_null(&[context as usize])?;
        let mut g = enter("aclrtCreateContext", Call::Action)?;
        let rt = rt_of(&mut g)?;
        check_out(context)?;
        if deviceId < 0 || deviceId as u32 >= rt.device_count {
            return Err(code::RT_INVALID_DEVICEID);
        }
        // A device that was not set is supported by current CANN (no finding).
        let id = rt.new_id();
        rt.contexts.insert(
            id,
            Context {
                device: deviceId,
                is_default: false,
                default_stream: None,
            },
        );
        CUR_CTX.with(|c| c.set(id)); // D2
        out(context, handle(CTX_BASE, id) as *mut c_void)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyContext(context: *mut c_void) -> i32 {
    calls::count(CallId::aclrtDestroyContext);
    ffi(|| {
        non_null(&[context as usize])?;
        let mut g = enter("aclrtDestroyContext", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = decode(CTX_BASE, context as usize).ok_or(code::RT_PARAM_INVALID)?;
        let c = rt.contexts.get(&id).ok_or(code::RT_PARAM_INVALID)?;
        if c.is_default {
            return Err(code::RT_CONTEXT_NULL); // D5
        }
        let sids: Vec<u64> = rt
            .streams
            .iter()
            .filter(|(_, s)| s.ctx == id && !s.dead)
            .map(|(k, _)| *k)
            .collect();
        let mut live: Vec<String> = sids
            .iter()
            .filter(|s| rt.streams.get(s).is_some_and(|s| !s.is_default))
            .map(|s| format!("stream {:#x}", sh(*s)))
            .collect();
        let eids: Vec<u64> = rt
            .events
            .iter()
            .filter(|(_, e)| e.ctx == id && !e.destroyed)
            .map(|(k, _)| *k)
            .collect();
        live.extend(eids.iter().map(|e| format!("event {:#x}", eh(*e))));
        if !live.is_empty() {
            rt.report(
                "D3",
                format!(
                    "aclrtDestroyContext({:#x}) while {} resource(s) created in it live: {}. Destroy events and streams before their context; the simulator destroys them now",
                    context as usize,
                    live.len(),
                    live.join(", ")
                ),
            );
        }
        teardown_streams(&mut g, sids);
        let rt = rt_of(&mut g)?;
        for e in eids {
            if let Some(ev) = rt.events.get_mut(&e) {
                ev.destroyed = true;
                if ev.refs == 0 {
                    rt.events.remove(&e);
                }
            }
        }
        rt.contexts.remove(&id);
        if CUR_CTX.with(|c| c.get()) == id {
            CUR_CTX.with(|c| c.set(0));
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetCurrentContext(context: *mut c_void) -> i32 {
    calls::count(CallId::aclrtSetCurrentContext);
    ffi(|| {
        non_null(&[context as usize])?;
        let mut g = enter("aclrtSetCurrentContext", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let id = decode(CTX_BASE, context as usize).ok_or(code::RT_PARAM_INVALID)?;
        if !rt.contexts.contains_key(&id) {
            return Err(code::RT_PARAM_INVALID);
        }
        CUR_CTX.with(|c| c.set(id)); // D6
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetCurrentContext(context: *mut *mut c_void) -> i32 {
    calls::count(CallId::aclrtGetCurrentContext);
    ffi(|| {
        non_null(&[context as usize])?;
        let mut g = enter("aclrtGetCurrentContext", Call::Query)?;
        let rt = rt_of(&mut g)?;
        check_out(context)?;
        let id = rt.cur_ctx()?;
        out(context, handle(CTX_BASE, id) as *mut c_void)
    })
}

// ======================================================================================
// Stream (S1-S4)
// ======================================================================================

#[unsafe(no_mangle)]
pub extern "C" fn aclrtCreateStream(stream: *mut *mut c_void) -> i32 {
    calls::count(CallId::aclrtCreateStream);
    ffi(|| {
        non_null(&[stream as usize])?;
        let mut g = enter("aclrtCreateStream", Call::Action)?;
        let rt = rt_of(&mut g)?;
        check_out(stream)?;
        let ctx = rt.cur_ctx()?; // D2
        let sid = exec::create_stream(rt, ctx, false)?;
        out(stream, sh(sid) as *mut c_void)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyStream(stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtDestroyStream);
    ffi(|| {
        non_null(&[stream as usize])?;
        let mut g = enter("aclrtDestroyStream", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?; // S4: own context only
        // S4: the pending tasks and callbacks are waited for (with the deadlock watchdog),
        // then the stream is destroyed. A wait that can never end is diagnosed like a
        // synchronize: the call returns 507000 and the stream stays.
        let what = format!("aclrtDestroyStream({:#x})", sh(sid));
        host_wait(&mut g, None, &[sid], &what, move |rt| {
            rt.streams
                .get(&sid)
                .is_none_or(|s| s.dead || (s.tasks.is_empty() && s.cb_outstanding == 0))
        })
        .map_err(|e| match e {
            WaitEnd::Timeout | WaitEnd::Deadlock => code::RT_INTERNAL_ERROR,
            WaitEnd::Gone => code::UNINITIALIZE,
        })?;
        let rt = rt_of(&mut g)?;
        let sub = match rt.streams.get(&sid) {
            Some(s) if !s.dead => s.subscriber,
            // Destroyed meanwhile by another thread (a device reset, a context destroy).
            _ => return Err(code::RT_PARAM_INVALID),
        };
        if let Some(t) = sub {
            rt.report(
                "C1",
                format!(
                    "aclrtDestroyStream({:#x}) while thread {t:#x} is still subscribed to it: call aclrtUnSubscribeReport first (C1 step 5)",
                    sh(sid)
                ),
            );
        }
        teardown_streams(&mut g, vec![sid]);
        Ok(())
    })
}

fn sync_stream(stream: *mut c_void, timeout: Option<i32>, name: &str) -> R {
    let mut g = enter(name, Call::Action)?;
    let timeout = timeout.map_or(Ok(None), timeout_ms)?;
    let rt = rt_of(&mut g)?;
    let sid = stream_for(rt, stream as usize, true)?;
    let deadline = timeout.map(|d| Instant::now() + d);
    let what = format!("{name}({:#x})", sh(sid));
    // S2: every task done, and every callback launched before the call has run (C5).
    host_wait(&mut g, deadline, &[sid], &what, move |rt| {
        rt.streams
            .get(&sid)
            .is_none_or(|s| s.tasks.is_empty() && s.cb_outstanding == 0)
    })
    .map_err(|e| match e {
        WaitEnd::Timeout => code::RT_STREAM_SYNC_TIMEOUT, // S3
        WaitEnd::Deadlock => code::RT_INTERNAL_ERROR,
        WaitEnd::Gone => code::UNINITIALIZE,
    })?;
    let rt = rt_of(&mut g)?;
    match rt.streams.get_mut(&sid).and_then(|s| s.async_error.take()) {
        Some(e) => Err(e), // S2, P3
        None => Ok(()),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeStream(stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtSynchronizeStream);
    ffi(|| sync_stream(stream, None, "aclrtSynchronizeStream"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeStreamWithTimeout(stream: *mut c_void, timeout: i32) -> i32 {
    calls::count(CallId::aclrtSynchronizeStreamWithTimeout);
    ffi(|| sync_stream(stream, Some(timeout), "aclrtSynchronizeStreamWithTimeout"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtStreamWaitEvent(stream: *mut c_void, event: *mut c_void) -> i32 {
    calls::count(CallId::aclrtStreamWaitEvent);
    ffi(|| {
        non_null(&[event as usize])?;
        let mut g = enter("aclrtStreamWaitEvent", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let eid = rt.event_id(event as usize)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        let e = rt.events.get(&eid).ok_or(code::RT_PARAM_INVALID)?;
        if !e.plain && e.flags & ACL_EVENT_SYNC == 0 {
            return Err(code::RT_FEATURE_NOT_SUPPORT); // E7
        }
        if e.plain && e.records_issued == 0 {
            return Err(code::RT_PARAM_INVALID); // E1: plain event never recorded
        }
        // A plain event waits for the records issued before the wait (it is never reset).
        let after = e.plain.then_some(e.records_issued);
        let timeout =
            (rt.op_wait_timeout > 0).then(|| Duration::from_secs(u64::from(rt.op_wait_timeout))); // P3
        exec::enqueue(
            rt,
            sid,
            TaskKind::Wait {
                ev: eid,
                timeout,
                after,
            },
            Vec::new(),
        );
        Ok(())
    })
}

// ======================================================================================
// Event (E1-E9)
// ======================================================================================

fn create_event(event: *mut *mut c_void, flags: u32, plain: bool, name: &str) -> R {
    non_null(&[event as usize])?;
    let mut g = enter(name, Call::Action)?;
    let rt = rt_of(&mut g)?;
    check_out(event)?;
    let known = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE;
    if flags == 0 || flags & !known != 0 {
        return Err(code::RT_PARAM_INVALID); // E7
    }
    let ctx = rt.cur_ctx()?; // D2
    let id = rt.new_id();
    rt.events.insert(
        id,
        Event {
            ctx,
            flags,
            plain,
            destroyed: false,
            refs: 0,
            records_issued: 0,
            records_finished: 0,
            flag_set: false,
            ts: None,
            last_record: None,
            unreset_waits: 0,
            pending_waits: Vec::new(),
            last_reset_exec: 0,
        },
    );
    out(event, eh(id) as *mut c_void)
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtCreateEvent(event: *mut *mut c_void) -> i32 {
    calls::count(CallId::aclrtCreateEvent);
    // Plain events behave as ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE (as on Atlas A2), except
    // that a wait before any record is rejected (107000, E1).
    ffi(|| {
        create_event(
            event,
            ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE,
            true,
            "aclrtCreateEvent",
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtCreateEventWithFlag(event: *mut *mut c_void, flag: u32) -> i32 {
    calls::count(CallId::aclrtCreateEventWithFlag);
    ffi(|| create_event(event, flag, false, "aclrtCreateEventWithFlag"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyEvent(event: *mut c_void) -> i32 {
    calls::count(CallId::aclrtDestroyEvent);
    ffi(|| {
        non_null(&[event as usize])?;
        let mut g = enter("aclrtDestroyEvent", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let eid = rt.event_id(event as usize)?;
        let (unreset, refs) = match rt.events.get(&eid) {
            // E4 applies to ACL_EVENT_SYNC events: a plain event is never reset.
            Some(e) => (if e.plain { 0 } else { e.unreset_waits }, e.refs),
            None => return Err(code::RT_PARAM_INVALID),
        };
        if unreset > 0 {
            rt.report(
                "E4",
                format!(
                    "event {:#x} destroyed after {unreset} aclrtStreamWaitEvent(s) without aclrtResetEvent: reset the event on the waiting stream right after the wait (create -> record -> wait -> reset)",
                    eh(eid)
                ),
            );
        }
        if refs > 0 {
            rt.report(
                "E9",
                format!(
                    "event {:#x} destroyed while {refs} issued task(s) (record/wait/reset) still refer to it: synchronize the streams that record or wait on it first",
                    eh(eid)
                ),
            );
        }
        if let Some(e) = rt.events.get_mut(&eid) {
            e.destroyed = true;
            if e.refs == 0 {
                rt.events.remove(&eid);
            }
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtRecordEvent(event: *mut c_void, stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtRecordEvent);
    ffi(|| {
        non_null(&[event as usize])?;
        let mut g = enter("aclrtRecordEvent", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let eid = rt.event_id(event as usize)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        let unreset = rt
            .events
            .get(&eid)
            .map_or(0, |e| if e.plain { 0 } else { e.unreset_waits });
        if unreset > 0 {
            rt.report(
                "E4",
                format!(
                    "event {:#x} re-recorded on stream {:#x} after {unreset} aclrtStreamWaitEvent(s) without aclrtResetEvent: reset it on the waiting stream after each wait",
                    eh(eid),
                    sh(sid)
                ),
            );
            if let Some(e) = rt.events.get_mut(&eid) {
                e.unreset_waits = 0;
            }
        }
        exec::enqueue(rt, sid, TaskKind::Record { ev: eid }, Vec::new());
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtResetEvent(event: *mut c_void, stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtResetEvent);
    ffi(|| {
        non_null(&[event as usize])?;
        let mut g = enter("aclrtResetEvent", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let eid = rt.event_id(event as usize)?;
        let sid = stream_for(rt, stream as usize, true)?; // D6
        let e = rt.events.get(&eid).ok_or(code::RT_PARAM_INVALID)?;
        if e.plain {
            // E4 (current CANN): only ACL_EVENT_SYNC events are reset; resetting a plain
            // event is undefined. The call succeeds and does nothing.
            rt.report(
                "E4",
                format!(
                    "aclrtResetEvent({:#x}) on an event created by aclrtCreateEvent: a plain event must not be reset (undefined in current CANN); create the event with aclrtCreateEventWithFlag(ACL_EVENT_SYNC) to reset it after a wait, or drop the reset; the simulator ignores it",
                    eh(eid)
                ),
            );
            return Ok(());
        }
        if e.flags & ACL_EVENT_SYNC == 0 {
            return Err(code::RT_FEATURE_NOT_SUPPORT); // E7
        }
        exec::enqueue(rt, sid, TaskKind::Reset { ev: eid }, Vec::new());
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtQueryEventStatus(event: *mut c_void, status: *mut i32) -> i32 {
    calls::count(CallId::aclrtQueryEventStatus);
    ffi(|| {
        non_null(&[event as usize, status as usize])?;
        let mut g = enter("aclrtQueryEventStatus", Call::Query)?;
        let rt = rt_of(&mut g)?;
        check_out(status)?;
        let eid = rt.event_id(event as usize)?;
        let e = rt.events.get(&eid).ok_or(code::RT_PARAM_INVALID)?;
        // COMPLETE (1) when every issued record has executed; a never-recorded event is
        // NOT_READY (0): current CANN counts "not recorded to a stream" as not ready.
        let complete = e.records_issued > 0 && e.records_finished >= e.records_issued;
        out(status, i32::from(complete))
    })
}

fn sync_event(event: *mut c_void, timeout: Option<i32>, name: &str) -> R {
    non_null(&[event as usize])?;
    let mut g = enter(name, Call::Action)?;
    let timeout = timeout.map_or(Ok(None), timeout_ms)?;
    let rt = rt_of(&mut g)?;
    let eid = rt.event_id(event as usize)?;
    let target = rt.events.get(&eid).map_or(0, |e| e.records_issued);
    // E2: the streams holding the records issued so far.
    let targets: Vec<u64> = rt
        .streams
        .iter()
        .filter(|(_, s)| {
            s.tasks
                .iter()
                .any(|t| matches!(t.kind, TaskKind::Record { ev } if ev == eid))
        })
        .map(|(k, _)| *k)
        .collect();
    let deadline = timeout.map(|d| Instant::now() + d);
    let what = format!("{name}({:#x})", eh(eid));
    host_wait(&mut g, deadline, &targets, &what, move |rt| {
        rt.events
            .get(&eid)
            .is_none_or(|e| e.records_finished >= target)
    })
    .map_err(|e| match e {
        WaitEnd::Timeout => code::RT_EVENT_SYNC_TIMEOUT, // E6
        WaitEnd::Deadlock => code::RT_INTERNAL_ERROR,
        WaitEnd::Gone => code::UNINITIALIZE,
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeEvent(event: *mut c_void) -> i32 {
    calls::count(CallId::aclrtSynchronizeEvent);
    ffi(|| sync_event(event, None, "aclrtSynchronizeEvent"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeEventWithTimeout(event: *mut c_void, timeout: i32) -> i32 {
    calls::count(CallId::aclrtSynchronizeEventWithTimeout);
    ffi(|| sync_event(event, Some(timeout), "aclrtSynchronizeEventWithTimeout"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtEventElapsedTime(
    ms: *mut f32,
    startEvent: *mut c_void,
    endEvent: *mut c_void,
) -> i32 {
    calls::count(CallId::aclrtEventElapsedTime);
    ffi(|| {
        non_null(&[ms as usize, startEvent as usize, endEvent as usize])?;
        let mut g = enter("aclrtEventElapsedTime", Call::Query)?;
        let rt = rt_of(&mut g)?;
        check_out(ms)?;
        let a = rt.event_id(startEvent as usize)?;
        let b = rt.event_id(endEvent as usize)?;
        let ts = |id: u64| {
            rt.events.get(&id).and_then(|e| {
                if e.records_issued > 0 && e.records_finished >= e.records_issued {
                    e.ts
                } else {
                    None
                }
            })
        };
        // E8: both recorded and complete.
        let (Some(t0), Some(t1)) = (ts(a), ts(b)) else {
            return Err(code::RT_INTERNAL_ERROR);
        };
        let v = if t1 >= t0 {
            t1.duration_since(t0).as_secs_f64() * 1e3
        } else {
            -(t0.duration_since(t1).as_secs_f64() * 1e3)
        };
        out(ms, v as f32)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetOpWaitTimeout(timeout: u32) -> i32 {
    calls::count(CallId::aclrtSetOpWaitTimeout);
    ffi(|| {
        let mut g = enter("aclrtSetOpWaitTimeout", Call::Action)?;
        let rt = rt_of(&mut g)?;
        rt.op_wait_timeout = timeout; // P3: applies to waits issued from now on
        Ok(())
    })
}

// ======================================================================================
// Callback (C1-C9)
// ======================================================================================

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSubscribeReport(threadId: u64, stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtSubscribeReport);
    ffi(|| {
        let mut g = enter("aclrtSubscribeReport", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, false)?;
        let (dev, subscribed) = match rt.streams.get(&sid) {
            Some(s) => (s.device, s.subscriber.is_some()),
            None => return Err(code::RT_PARAM_INVALID),
        };
        if subscribed {
            return Err(code::RT_STREAM_SUBSCRIBE); // C2
        }
        match rt.subs.get(&threadId) {
            Some(ts) if ts.device != dev => return Err(code::RT_THREAD_SUBSCRIBE), // C3
            Some(_) => {}
            None if rt.subs.len() >= MAX_SUBSCRIBED_THREADS => {
                return Err(code::RT_THREAD_SUBSCRIBE); // C4 (code chosen, README)
            }
            None => {}
        }
        let ts = rt.subs.entry(threadId).or_insert_with(|| ThreadSub {
            device: dev,
            streams: Default::default(),
            queue: Default::default(),
        });
        ts.streams.insert(sid);
        if let Some(s) = rt.streams.get_mut(&sid) {
            s.subscriber = Some(threadId);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtUnSubscribeReport(threadId: u64, stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtUnSubscribeReport);
    ffi(|| {
        let mut g = enter("aclrtUnSubscribeReport", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, false)?;
        match rt.streams.get(&sid).and_then(|s| s.subscriber) {
            None => return Err(code::RT_STREAM_SUBSCRIBE), // C9
            Some(t) if t != threadId => return Err(code::RT_THREAD_SUBSCRIBE), // C9
            Some(_) => {}
        }
        let mut dropped = 0usize;
        let mut remove = false;
        let mut blocked_tasks = Vec::new();
        if let Some(ts) = rt.subs.get_mut(&threadId) {
            ts.streams.remove(&sid);
            ts.queue.retain(|i| {
                if i.stream == sid {
                    dropped += 1;
                    if i.block {
                        blocked_tasks.push(i.task);
                    }
                    false
                } else {
                    true
                }
            });
            remove = ts.streams.is_empty();
        }
        if remove {
            rt.subs.remove(&threadId);
        }
        if let Some(s) = rt.streams.get_mut(&sid) {
            s.subscriber = None;
            s.cb_outstanding = s.cb_outstanding.saturating_sub(dropped as u32);
            for t in s.tasks.iter_mut() {
                if blocked_tasks.contains(&t.id) {
                    t.state = TaskState::CbDone;
                }
            }
            if let Some(cv) = s.cv.as_ref() {
                cv.signal();
            }
        }
        if dropped > 0 {
            rt.report(
                "C1",
                format!(
                    "aclrtUnSubscribeReport({threadId:#x}, {:#x}) dropped {dropped} delivered callback(s) that had not run: unsubscribe only when all tasks are done (C1 step 5)",
                    sh(sid)
                ),
            );
        }
        rt.progress += 1;
        HOST_CV.broadcast();
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtLaunchCallback(
    fn_: Option<CbFn>,
    userData: *mut c_void,
    blockType: i32,
    stream: *mut c_void,
) -> i32 {
    calls::count(CallId::aclrtLaunchCallback);
    ffi(|| {
        let mut g = enter("aclrtLaunchCallback", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let f = fn_.ok_or(code::INVALID_PARAM)?;
        let block = match blockType {
            0 => false,
            1 => true,
            _ => return Err(code::INVALID_PARAM), // C5
        };
        let sid = stream_for(rt, stream as usize, true)?; // D6
        let thread = rt
            .streams
            .get(&sid)
            .and_then(|s| s.subscriber)
            .ok_or(code::RT_STREAM_NO_CB_REG)?; // C5
        exec::enqueue(
            rt,
            sid,
            TaskKind::Callback {
                f,
                ud: userData as usize,
                block,
                thread,
            },
            Vec::new(),
        );
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtProcessReport(timeout: i32) -> i32 {
    calls::count(CallId::aclrtProcessReport);
    ffi(|| {
        let mut g = enter("aclrtProcessReport", Call::Action)?;
        if timeout == 0 || timeout < -1 {
            return Err(code::INVALID_PARAM); // C6
        }
        let rt = rt_of(&mut g)?;
        rt.cur_ctx()?; // C6
        let me = self_id();
        if !rt.subs.contains_key(&me) {
            return Err(code::RT_THREAD_SUBSCRIBE); // C6
        }
        let deadline =
            (timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
        let item = loop {
            let rt = rt_of(&mut g)?;
            let Some(ts) = rt.subs.get_mut(&me) else {
                return Err(code::RT_THREAD_SUBSCRIBE);
            };
            if let Some(i) = ts.queue.pop_front() {
                break i;
            }
            let step = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(code::RT_REPORT_TIMEOUT); // C6
                    }
                    d - now
                }
                None => Duration::from_millis(200),
            };
            HOST_CV.wait_timeout(&mut g, step);
        };
        let panicked = g.unlocked(|| {
            IN_CALLBACK.with(|c| c.set(true));
            let r = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: the callback and its user data as registered by
                // aclrtLaunchCallback; run once, on the subscribed thread (C1).
                unsafe { (item.f)(item.ud as *mut c_void) }
            }));
            IN_CALLBACK.with(|c| c.set(false));
            r.is_err()
        });
        let rt = rt_of(&mut g)?;
        if panicked {
            rt.report(
                "C8",
                format!(
                    "callback of stream {:#x} panicked; a callback must not panic (the panic was caught at the C boundary)",
                    sh(item.stream)
                ),
            );
        }
        if let Some(s) = rt.streams.get_mut(&item.stream) {
            s.cb_outstanding = s.cb_outstanding.saturating_sub(1);
            if item.block {
                if let Some(t) = s.tasks.front_mut()
                    && t.id == item.task
                {
                    t.state = TaskState::CbDone;
                }
                if let Some(cv) = s.cv.as_ref() {
                    cv.signal();
                }
            }
        }
        rt.progress += 1;
        HOST_CV.broadcast();
        Ok(())
    })
}

// ======================================================================================
// Memory (M1, M2)
// ======================================================================================

enum Loc {
    Device(usize),
    Host(usize),
    Untracked,
    Bad(String),
}

/// Where `[p, p + n)` lives (M1).
fn locate(rt: &Rt, p: usize, n: usize) -> Loc {
    let end = p.saturating_add(n.max(1));
    if let Some((start, a)) = rt.allocs.range(..=p).next_back()
        && p < start + a.size
    {
        if a.freed {
            return Loc::Bad(format!(
                "{p:#x} lies in allocation {start:#x}, already freed (M2)"
            ));
        }
        if end > start + a.size {
            return Loc::Bad(format!(
                "[{p:#x}, +{n}) overruns allocation {start:#x} of {} B",
                a.size
            ));
        }
        return if a.host {
            Loc::Host(*start)
        } else {
            Loc::Device(*start)
        };
    }
    if let Some((start, _)) = rt.allocs.range(p.saturating_add(1)..end).next() {
        return Loc::Bad(format!(
            "[{p:#x}, +{n}) starts outside any allocation and runs into allocation {start:#x}"
        ));
    }
    Loc::Untracked
}

fn m1(rt: &mut Rt, call: &str, msg: String) -> i32 {
    rt.report("M1", format!("{call}: {msg}; the call returns 100000"));
    code::INVALID_PARAM
}

/// M1: an asynchronous task may only use device memory of its stream's device (a copy,
/// memset or kernel of another device's stream would run on memory that a reset of its own
/// device frees under the task).
fn check_stream_device(rt: &mut Rt, call: &str, sid: u64, allocs: &[usize]) -> R {
    let Some(dev) = rt.streams.get(&sid).map(|s| s.device) else {
        return Ok(());
    };
    let foreign = allocs.iter().find_map(|p| {
        rt.allocs
            .get(p)
            .filter(|a| !a.host && a.device != dev)
            .map(|a| (*p, a.device))
    });
    match foreign {
        Some((p, d)) => Err(m1(
            rt,
            call,
            format!(
                "device memory {p:#x} belongs to device {d}, but stream {:#x} is on device {dev}: an asynchronous task may only use device memory of its stream's device",
                sh(sid)
            ),
        )),
        None => Ok(()),
    }
}

/// Validates a copy (M1); returns the tracked allocations it uses.
fn check_copy(
    rt: &mut Rt,
    call: &str,
    dst: usize,
    dest_max: usize,
    src: usize,
    count: usize,
    kind: i32,
) -> Result<Vec<usize>, i32> {
    if dst == 0 || src == 0 {
        return Err(m1(rt, call, "NULL buffer".into()));
    }
    if count > dest_max {
        return Err(m1(
            rt,
            call,
            format!("count {count} exceeds destMax {dest_max}"),
        ));
    }
    let (dst_dev, src_dev) = match kind {
        0 => (false, false),
        1 => (true, false),
        2 => (false, true),
        3 => (true, true),
        _ => return Err(m1(rt, call, format!("invalid aclrtMemcpyKind {kind}"))),
    };
    let mut allocs = Vec::new();
    for (p, want_dev, role) in [(dst, dst_dev, "destination"), (src, src_dev, "source")] {
        match locate(rt, p, count) {
            Loc::Bad(m) => {
                let rule = if m.contains("(M2)") { "M2" } else { "M1" };
                rt.report(rule, format!("{call}: {role} {m}; the call returns 100000"));
                return Err(code::INVALID_PARAM);
            }
            Loc::Device(s) if want_dev => allocs.push(s),
            Loc::Host(s) if !want_dev => allocs.push(s),
            Loc::Untracked if !want_dev => {}
            other => {
                let is = match other {
                    Loc::Device(_) => "device memory",
                    _ => "host memory",
                };
                return Err(m1(
                    rt,
                    call,
                    format!(
                        "{role} {p:#x} is {is} but kind {kind} expects {} memory",
                        if want_dev { "device" } else { "host" }
                    ),
                ));
            }
        }
    }
    Ok(allocs)
}

fn check_set(
    rt: &mut Rt,
    call: &str,
    p: usize,
    max: usize,
    count: usize,
) -> Result<Vec<usize>, i32> {
    if p == 0 {
        return Err(m1(rt, call, "NULL buffer".into()));
    }
    if count > max {
        return Err(m1(
            rt,
            call,
            format!("count {count} exceeds maxCount {max}"),
        ));
    }
    match locate(rt, p, count) {
        Loc::Bad(m) => {
            let rule = if m.contains("(M2)") { "M2" } else { "M1" };
            rt.report(rule, format!("{call}: {m}; the call returns 100000"));
            Err(code::INVALID_PARAM)
        }
        Loc::Device(s) | Loc::Host(s) => Ok(vec![s]),
        Loc::Untracked => Ok(Vec::new()),
    }
}

/// `policy`: `aclrtMalloc`'s (`None` for host memory), checked after the fault check.
/// The alignment of every device and host allocation (the typed crate accepts element types
/// aligned up to 64 bytes).
const ALLOC_ALIGN: usize = 64;

fn malloc(ptr: *mut *mut c_void, size: usize, policy: Option<i32>, name: &str) -> R {
    non_null(&[ptr as usize])?;
    let mut g = enter(name, Call::Action)?;
    if policy.is_some_and(|p| !(0..=2).contains(&p)) {
        return Err(code::INVALID_PARAM);
    }
    let host = policy.is_none();
    let rt = rt_of(&mut g)?;
    check_out(ptr)?;
    if size == 0 {
        return Err(code::INVALID_PARAM);
    }
    let device = if host {
        -1
    } else {
        let ctx = rt.cur_ctx()?;
        rt.contexts.get(&ctx).map_or(-1, |c| c.device)
    };
    // calloc: large blocks come from mmap, zero pages materialise lazily. The user's
    // pointer is aligned to ALLOC_ALIGN bytes, as the runtime's allocations are aligned.
    let Some(padded) = size.checked_add(ALLOC_ALIGN) else {
        return Err(code::RT_MEMORY_ALLOCATION);
    };
    // SAFETY: plain C allocation of `padded` bytes; checked for NULL below.
    let base = unsafe { libc::calloc(1, padded) };
    if base.is_null() {
        return Err(code::RT_MEMORY_ALLOCATION);
    }
    let offset = (ALLOC_ALIGN - (base as usize) % ALLOC_ALIGN) % ALLOC_ALIGN;
    // SAFETY: `offset < ALLOC_ALIGN`, so `size` bytes from there stay inside the block.
    let p = unsafe { base.cast::<u8>().add(offset) }.cast::<c_void>();
    rt.allocs.insert(
        p as usize,
        Alloc {
            base: base as usize,
            size,
            host,
            device,
            uses: 0,
            freed: false,
        },
    );
    out(ptr, p)
}

fn free(p: *mut c_void, host: bool, name: &str) -> R {
    non_null(&[p as usize])?;
    let mut g = enter(name, Call::Action)?;
    let rt = rt_of(&mut g)?;
    let key = p as usize;
    let (is_host, uses) = match rt.allocs.get(&key) {
        Some(a) if !a.freed => (a.host, a.uses),
        _ => return Err(code::RT_PARAM_INVALID),
    };
    if is_host != host {
        rt.report(
            "M2",
            format!(
                "{name}({key:#x}) on memory from {}: aclrtMalloc/aclrtFree and aclrtMallocHost/aclrtFreeHost pair; the call returns 107000",
                if is_host { "aclrtMallocHost" } else { "aclrtMalloc" }
            ),
        );
        return Err(code::RT_PARAM_INVALID);
    }
    if uses > 0 {
        rt.report(
            "M2",
            format!(
                "{name}({key:#x}) while {uses} issued, unfinished task(s) use it: synchronize the stream first; the simulator defers the release until they are done"
            ),
        );
        if let Some(a) = rt.allocs.get_mut(&key) {
            a.freed = true;
        }
        return Ok(());
    }
    if let Some(a) = rt.allocs.remove(&key) {
        // SAFETY: allocated by libc::calloc in malloc() above, released exactly once.
        unsafe { libc::free(a.base as *mut c_void) };
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtMalloc(devPtr: *mut *mut c_void, size: usize, policy: i32) -> i32 {
    calls::count(CallId::aclrtMalloc);
    ffi(|| malloc(devPtr, size, Some(policy), "aclrtMalloc"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtFree(devPtr: *mut c_void) -> i32 {
    calls::count(CallId::aclrtFree);
    ffi(|| free(devPtr, false, "aclrtFree"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtMallocHost(hostPtr: *mut *mut c_void, size: usize) -> i32 {
    calls::count(CallId::aclrtMallocHost);
    ffi(|| malloc(hostPtr, size, None, "aclrtMallocHost"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtFreeHost(hostPtr: *mut c_void) -> i32 {
    calls::count(CallId::aclrtFreeHost);
    ffi(|| free(hostPtr, true, "aclrtFreeHost"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtMemcpy(
    dst: *mut c_void,
    destMax: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
) -> i32 {
    calls::count(CallId::aclrtMemcpy);
    ffi(|| {
        let mut g = enter("aclrtMemcpy", Call::Action)?;
        let rt = rt_of(&mut g)?;
        check_copy(
            rt,
            "aclrtMemcpy",
            dst as usize,
            destMax,
            src as usize,
            count,
            kind,
        )?;
        // Copied under the lock, so a concurrent aclrtFree cannot release the memory.
        // SAFETY: ranges validated above (M1); untracked host memory is the caller's.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, count) };
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtMemcpyAsync(
    dst: *mut c_void,
    destMax: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
    stream: *mut c_void,
) -> i32 {
    calls::count(CallId::aclrtMemcpyAsync);
    ffi(|| {
        let mut g = enter("aclrtMemcpyAsync", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?;
        let allocs = check_copy(
            rt,
            "aclrtMemcpyAsync",
            dst as usize,
            destMax,
            src as usize,
            count,
            kind,
        )?;
        check_stream_device(rt, "aclrtMemcpyAsync", sid, &allocs)?;
        exec::enqueue(
            rt,
            sid,
            TaskKind::Copy {
                dst: dst as usize,
                src: src as usize,
                count,
                kind,
            },
            allocs,
        );
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtMemset(
    devPtr: *mut c_void,
    maxCount: usize,
    value: i32,
    count: usize,
) -> i32 {
    calls::count(CallId::aclrtMemset);
    ffi(|| {
        let mut g = enter("aclrtMemset", Call::Action)?;
        let rt = rt_of(&mut g)?;
        check_set(rt, "aclrtMemset", devPtr as usize, maxCount, count)?;
        // SAFETY: range validated above (M1); done under the lock.
        unsafe { std::ptr::write_bytes(devPtr as *mut u8, value as u8, count) };
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtMemsetAsync(
    devPtr: *mut c_void,
    maxCount: usize,
    value: i32,
    count: usize,
    stream: *mut c_void,
) -> i32 {
    calls::count(CallId::aclrtMemsetAsync);
    ffi(|| {
        let mut g = enter("aclrtMemsetAsync", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?;
        let allocs = check_set(rt, "aclrtMemsetAsync", devPtr as usize, maxCount, count)?;
        check_stream_device(rt, "aclrtMemsetAsync", sid, &allocs)?;
        exec::enqueue(
            rt,
            sid,
            TaskKind::Set {
                ptr: devPtr as usize,
                value: value as u8,
                count,
            },
            allocs,
        );
        Ok(())
    })
}

// ======================================================================================
// aclsim.h extension API
// ======================================================================================

#[unsafe(no_mangle)]
pub extern "C" fn aclsimApiVersion() -> u32 {
    1
}

/// Reads entry `i` of the caller's buffer list.
fn buffer_at(buffers: *const *mut c_void, i: usize) -> usize {
    // SAFETY: aclsimLaunchKernel's contract: `buffers` holds `bufferCount` readable
    // pointers (checked non-NULL by the caller of this helper), and i < bufferCount.
    unsafe { *buffers.add(i) as usize }
}

#[unsafe(no_mangle)]
pub extern "C" fn aclsimLaunchKernel(
    stream: *mut c_void,
    durationUs: u64,
    fn_: Option<KernelFn>,
    userData: *mut c_void,
    buffers: *const *mut c_void,
    bufferCount: usize,
) -> i32 {
    calls::count(CallId::aclsimLaunchKernel);
    ffi(|| {
        let mut g = enter("aclsimLaunchKernel", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?;
        if bufferCount > 0 && buffers.is_null() {
            return Err(code::INVALID_PARAM);
        }
        let mut bufs = Vec::with_capacity(bufferCount);
        let mut allocs = Vec::new();
        for i in 0..bufferCount {
            let b = buffer_at(buffers, i);
            match locate(rt, b, 1) {
                Loc::Device(s) => {
                    allocs.push(s);
                    bufs.push(b);
                }
                _ => {
                    return Err(m1(
                        rt,
                        "aclsimLaunchKernel",
                        format!("buffer {i} ({b:#x}) is not inside a live device allocation"),
                    ));
                }
            }
        }
        check_stream_device(rt, "aclsimLaunchKernel", sid, &allocs)?;
        exec::enqueue(
            rt,
            sid,
            TaskKind::Kernel {
                dur_us: durationUs,
                f: fn_,
                ud: userData as usize,
                bufs,
            },
            allocs,
        );
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclsimSetDeviceCount(count: u32) -> i32 {
    ffi(|| {
        let mut g = G.lock();
        if g.rt.is_some() {
            return Err(code::REPEAT_INITIALIZE);
        }
        if count == 0 || count > 64 {
            return Err(code::INVALID_PARAM);
        }
        g.device_count_override = Some(count);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclsimFindingCount() -> usize {
    catch_unwind(|| {
        let g = G.lock();
        g.saved_findings.len() + g.rt.as_ref().map_or(0, |r| r.findings.len())
    })
    .unwrap_or(0)
}

fn copy_cstr(s: &str, buf: *mut c_char, cap: usize) {
    if buf.is_null() || cap == 0 {
        return;
    }
    let bytes = s.as_bytes();
    let n = bytes.len().min(cap - 1);
    // SAFETY: the caller gives a writable buffer of `cap` bytes; we write n + 1 <= cap.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, n);
        *buf.add(n) = 0;
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn aclsimGetFinding(
    index: usize,
    rule: *mut c_char,
    ruleCap: usize,
    message: *mut c_char,
    messageCap: usize,
) -> i32 {
    ffi(|| {
        if (rule.is_null() && ruleCap != 0) || (message.is_null() && messageCap != 0) {
            return Err(code::INVALID_PARAM);
        }
        let g = G.lock();
        let saved = g.saved_findings.len();
        let f = if index < saved {
            g.saved_findings.get(index)
        } else {
            g.rt.as_ref().and_then(|r| r.findings.get(index - saved))
        };
        let f = f.ok_or(code::INVALID_PARAM)?;
        copy_cstr(&f.rule, rule, ruleCap.min(8));
        copy_cstr(&f.message, message, messageCap);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclsimClearFindings() {
    let _ = catch_unwind(|| {
        let mut g = G.lock();
        g.saved_findings.clear();
        if let Some(rt) = g.rt.as_deref_mut() {
            rt.findings.clear();
        }
    });
}

/// A caller's non-NULL, NUL-terminated string, if it is UTF-8.
fn read_cstr(p: *const c_char) -> Option<String> {
    // SAFETY: the callers pass a non-NULL pointer to a NUL-terminated string (aclsim.h).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().ok().map(str::to_owned)
}

/// Arms an injected failure: the next `times` calls of the runtime function named `call`
/// return `code` without doing anything. See aclsim.h.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimInjectFault(call: *const c_char, code: i32, times: u32) -> i32 {
    ffi(|| inject_fault(call, code, 0, times))
}

/// Arms an injected failure after `skip` calls: the calls of `call` after the next `skip`
/// ones return `code`, `times` times. See aclsim.h.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimInjectFaultAt(
    call: *const c_char,
    code: i32,
    skip: u32,
    times: u32,
) -> i32 {
    ffi(|| inject_fault(call, code, skip, times))
}

fn inject_fault(call: *const c_char, code: i32, skip: u32, times: u32) -> R {
    if call.is_null() || code == 0 || times == 0 {
        return Err(code::INVALID_PARAM);
    }
    let call = read_cstr(call).ok_or(code::INVALID_PARAM)?;
    // Only a name that can fire: an exported runtime function that checks armed failures
    // (aclInit never does: failures are armed only while initialized).
    if call == "aclInit" || !calls::CALL_NAMES.contains(&call.as_str()) {
        return Err(code::INVALID_PARAM);
    }
    let mut g = G.lock();
    let rt = rt_of(&mut g)?;
    rt.faults.push(Fault {
        call,
        code,
        skip,
        remaining: times,
    });
    Ok(())
}

/// Disarms every injected failure.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimClearFaults() {
    let _ = catch_unwind(|| {
        let mut g = G.lock();
        if let Some(rt) = g.rt.as_deref_mut() {
            rt.faults.clear();
        }
    });
}

#[unsafe(no_mangle)]
pub extern "C" fn aclsimLiveObjectCount() -> usize {
    catch_unwind(|| {
        let g = G.lock();
        g.rt.as_ref().map_or(0, |r| r.live_object_count())
    })
    .unwrap_or(0)
}

/// Calls of the runtime function named `call` since the last aclsimResetCallCounts (or
/// process start), failing calls included; 0 for NULL, a non-UTF-8 or an unknown name.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimCallCount(call: *const c_char) -> u64 {
    if call.is_null() {
        return 0;
    }
    catch_unwind(|| read_cstr(call).map_or(0, |name| calls::get(&name))).unwrap_or(0)
}

/// Sets every call count to 0.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimResetCallCounts() {
    calls::reset();
}
