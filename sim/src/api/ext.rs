//! The `aclsim.h` extension API: kernels, findings, fault injection, counters.
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers, `api::memory`
//! (M1 checks) and every layer below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`,
//! `calls`, `pt`, `trace`), never the reverse.

use std::ffi::{CStr, c_char, c_void};
use std::panic::catch_unwind;

use super::memory::{Loc, check_stream_device, locate, m1};
use crate::calls::CallId;
use crate::state::{Fault, G, KernelFn, TaskKind, code};
use crate::{Call, R, calls, enter, errmsg, exec, ffi, ffi_ext, rt_of, stream_for};

#[unsafe(no_mangle)]
pub extern "C" fn aclsimApiVersion() -> u32 {
    1
}

/// Reads entry `i` of the caller's buffer list.
fn buffer_at(buffers: *const *mut c_void, i: usize) -> usize {
    // SAFETY: aclsimLaunchKernel's contract: `buffers` holds `bufferCount` readable
    // pointers (checked non-NULL by the caller of this helper), and i < bufferCount.
    let entry = unsafe { buffers.add(i) };
    // SAFETY: as above: entry i is readable.
    unsafe { entry.read() as usize }
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
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        if bufferCount > 0 && buffers.is_null() {
            return Err(code::INVALID_PARAM);
        }
        // P5: no operator execution timeout exceeds 2176 s, so a longer kernel could never
        // complete (nor fail by a timeout when none is set): refused, as such a model is.
        if durationUs > crate::extra::MAX_OP_EXEC_TIMEOUT_US {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!(
                    "kernel duration {durationUs} us exceeds the longest operator execution timeout ({} s, P5): the kernel could never complete",
                    crate::extra::MAX_OP_EXEC_TIMEOUT_US / 1_000_000
                ),
            ));
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
        // MD2 / MD3: a kernel buffer in memory a loaded model holds (a buffer has no size:
        // its first byte).
        for b in &bufs {
            crate::rules::model::touch_model_memory(
                rt,
                "aclsimLaunchKernel",
                *b,
                1,
                "uses a buffer at",
            );
        }
        // P5: a kernel longer than the operator execution timeout in effect now is stopped
        // at the limit (its body never runs) and fails with 107020.
        let limit = rt.extra.op_exec_timeout_us;
        let timed_out = limit > 0 && durationUs > limit;
        let id = exec::enqueue(
            rt,
            sid,
            TaskKind::Kernel {
                dur_us: if timed_out { limit } else { durationUs },
                f: if timed_out { None } else { fn_ },
                ud: userData as usize,
                bufs,
            },
            allocs,
        );
        if timed_out {
            rt.extra.task_fail.insert(id, code::RT_TASK_TIMEOUT);
        }
        Ok(())
    })
}

/// The next copy, memset, kernel or host-function task reached on `stream` (NULL: the
/// default stream of the current context) fails asynchronously with `code` without running
/// its body. See aclsim.h.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimInjectTaskFailure(stream: *mut c_void, code: i32) -> i32 {
    ffi_ext(|| {
        if code == 0 {
            return Err(code::INVALID_PARAM);
        }
        let mut g = G.lock();
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, false)?;
        rt.extra
            .streams
            .entry(sid)
            .or_default()
            .inject
            .push_back(code);
        rt.extra.injected += 1;
        if let Some(cv) = rt.streams.get(&sid).and_then(|s| s.cv.as_ref()) {
            cv.signal();
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclsimSetDeviceCount(count: u32) -> i32 {
    ffi_ext(|| {
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
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, n) };
    // SAFETY: as above: byte n < cap.
    let end = unsafe { buf.add(n) };
    // SAFETY: as above.
    unsafe { end.write(0) };
}

#[unsafe(no_mangle)]
pub extern "C" fn aclsimGetFinding(
    index: usize,
    rule: *mut c_char,
    ruleCap: usize,
    message: *mut c_char,
    messageCap: usize,
) -> i32 {
    ffi_ext(|| {
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
    ffi_ext(|| inject_fault(call, code, 0, times))
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
    ffi_ext(|| inject_fault(call, code, skip, times))
}

fn inject_fault(call: *const c_char, code: i32, skip: u32, times: u32) -> R {
    if call.is_null() || code == 0 || times == 0 {
        return Err(code::INVALID_PARAM);
    }
    let call = read_cstr(call).ok_or(code::INVALID_PARAM)?;
    // Only a name that can fire: an exported runtime function that checks armed failures
    // (aclInit never does: failures are armed only while initialized).
    // aclGetRecentErrMsg cannot fail (it has no error return and works before aclInit), nor
    // can aclrtGetLastError / aclrtPeekAtLastError (their answer is a code, P6).
    if call == "aclInit"
        || call == "aclGetRecentErrMsg"
        || call == "aclrtGetLastError"
        || call == "aclrtPeekAtLastError"
        || !calls::CALL_NAMES.contains(&call.as_str())
    {
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

/// Whether findings are printed to stderr: 1 silences them, 0 prints them, -1 follows
/// `ACLSIM_QUIET` again. Returns the previous setting; any other value changes nothing.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimSetQuiet(quiet: i32) -> i32 {
    crate::state::set_quiet_override(quiet)
}
