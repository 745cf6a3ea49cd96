//! Devices and contexts (D1-D6).
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`, `calls`, `pt`, `trace`),
//! never the reverse.

use std::ffi::c_void;
use std::time::Instant;

use crate::calls::CallId;
use crate::exec::{WaitEnd, Watch, host_wait, teardown_streams};
use crate::pt::PGuard;
use crate::state::{CTX_BASE, CUR_CTX, Context, Global, code, decode, handle};
use crate::{
    Call, R, calls, check_out, eh, enter, exec, ffi, non_null, out, rt_of, sh, timeout_ms,
};

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
    ffi(|| reset_device("aclrtResetDevice", deviceId, false))
}

/// D7: releases every aclrtSetDevice reference of the device at once.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtResetDeviceForce(deviceId: i32) -> i32 {
    calls::count(CallId::aclrtResetDeviceForce);
    ffi(|| reset_device("aclrtResetDeviceForce", deviceId, true))
}

/// D1/D5 (`force`: D7). Releasing the last reference first waits for the tasks of the
/// device's default context (its default stream), then releases the device (D3).
fn reset_device(name: &str, deviceId: i32, force: bool) -> R {
    {
        let mut g = enter(name, Call::Action)?;
        let rt = rt_of(&mut g)?;
        if deviceId < 0 || deviceId as u32 >= rt.device_count {
            return Err(code::RT_INVALID_DEVICEID);
        }
        let d = deviceId as usize;
        if rt.devices[d].refs == 0 {
            return Err(code::RT_CONTEXT_RELEASE_ERROR); // D5, D7
        }
        if !force && rt.devices[d].refs > 1 {
            rt.devices[d].refs -= 1;
            return Ok(());
        }
        // Wait for the default context's tasks (lock released while waiting; with the
        // deadlock watchdog: a wait that can never end is diagnosed, then the tasks are
        // dropped with the device).
        let dctx = rt.devices[d].default_ctx;
        let targets: Vec<u64> = rt
            .streams
            .iter()
            .filter(|(_, s)| Some(s.ctx) == dctx && !s.dead)
            .map(|(k, _)| *k)
            .collect();
        if !targets.is_empty() {
            let what = || format!("{name}({deviceId}) waiting for the default context's tasks");
            let r = exec::wait_streams_idle(&mut g, None, &targets, what);
            if let Err(WaitEnd::Gone) = r {
                return Err(code::UNINITIALIZE);
            }
            // Another thread may have set or reset the device meanwhile.
            let rt = rt_of(&mut g)?;
            if rt.devices[d].refs == 0 {
                return Err(code::RT_CONTEXT_RELEASE_ERROR);
            }
            if !force && rt.devices[d].refs > 1 {
                rt.devices[d].refs -= 1;
                return Ok(());
            }
        }
        release_device(g, name, deviceId)
    }
}

/// Releases the last reference of a device: D3 says everything on it must be gone by now.
fn release_device(mut g: PGuard<'static, Global>, name: &str, deviceId: i32) -> R {
    {
        let rt = rt_of(&mut g)?;
        let d = deviceId as usize;
        rt.devices[d].refs = 0;
        let live = rt.describe_live(Some(deviceId));
        if !live.is_empty() {
            rt.report(
                "D3",
                format!(
                    "{name}({deviceId}) releases the device while {} resource(s) on it live: {}. Destroy events and streams, then contexts, free device memory, then reset the device; the simulator releases them now",
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
        // A host thread copying the device's memory without the lock (a large synchronous
        // copy or memset, a model load or execution) finishes first.
        exec::wait_unpinned(&mut g, |rt, p| {
            rt.allocs
                .get(&p)
                .is_some_and(|a| !a.host && a.device == deviceId)
        });
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
        rt.wake_sync_waiters(); // an event synchronize on a removed event returns
        let mem: Vec<usize> = rt
            .allocs
            .iter()
            .filter(|(_, a)| !a.host && a.device == deviceId)
            .map(|(k, _)| *k)
            .collect();
        // Loaded models no longer hold it (MD2, MD3): its address may be reused.
        crate::rules::model::forget_allocs(rt, &mem);
        for p in mem {
            // SAFETY: its streams are joined, so no task uses it.
            unsafe { rt.release_alloc(p) };
        }
        // The work and weight memory the runtime allocated for models of the device (D8).
        crate::rules::model::release_device_memory(rt, deviceId);
        // Its media channels go with it (DV3, reported as D3 above).
        for c in rt.dvpp.channels.values_mut() {
            if c.created.is_some_and(|(_, dev)| dev == deviceId) {
                c.created = None;
            }
        }
        rt.devices[d].default_ctx = None;
        Ok(())
    }
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
    let what = || format!("{name}() on device {dev}");
    host_wait(
        &mut g,
        deadline,
        Watch::Streams(&targets),
        |_| targets.clone(),
        what,
        |rt| {
            targets.iter().all(|sid| {
                rt.streams
                    .get(sid)
                    .is_none_or(|s| s.tasks.is_empty() && s.cb_outstanding == 0)
            })
        },
    )
    .map_err(|e| match e {
        WaitEnd::Timeout => code::RT_STREAM_SYNC_TIMEOUT,
        WaitEnd::Deadlock => code::RT_INTERNAL_ERROR,
        WaitEnd::Gone => code::UNINITIALIZE,
    })?;
    // S2/D4: report asynchronous errors of the device's streams (and clear them).
    let rt = rt_of(&mut g)?;
    let mut err = None;
    for sid in &targets {
        if let Some(s) = rt.streams.get_mut(sid) {
            s.inherited_error = None;
            if let Some(e) = s.async_error.take() {
                err.get_or_insert(e);
            }
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
        rt.wake_sync_waiters(); // an event synchronize on a removed event returns
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
