//! Memory: allocation, copies, memsets (M1, M2).
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`, `calls`, `pt`, `trace`),
//! never the reverse.

use std::ffi::c_void;

use crate::calls::CallId;
use crate::pt::PGuard;
use crate::state::{Alloc, Global, Rt, TaskKind, code, next_alloc_generation};
use crate::{Call, R, calls, check_out, enter, exec, ffi, non_null, out, rt_of, sh, stream_for};

pub(super) enum Loc {
    Device(usize),
    Host(usize),
    Untracked,
    Bad(String),
}

/// Where `[p, p + n)` lives (M1).
pub(super) fn locate(rt: &Rt, p: usize, n: usize) -> Loc {
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

pub(super) fn m1(rt: &mut Rt, call: &str, msg: String) -> i32 {
    rt.report("M1", format!("{call}: {msg}; the call returns 100000"));
    code::INVALID_PARAM
}

/// M1: an asynchronous task may only use device memory of its stream's device (a copy,
/// memset or kernel of another device's stream would run on memory that a reset of its own
/// device frees under the task).
pub(super) fn check_stream_device(rt: &mut Rt, call: &str, sid: u64, allocs: &[usize]) -> R {
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

/// From this many bytes on, a synchronous copy or memset runs with the lock released
/// ([`access`]); smaller ones are done under it (cheaper than releasing it).
pub(super) const UNLOCKED_ACCESS_MIN: usize = 1 << 20;

/// Does `f`, a synchronous host access of `bytes` bytes to the validated ranges of the
/// tracked allocations `allocs` (and of untracked memory, the caller's), right after the
/// checks (same hold of the lock). A large one runs with the lock released, so that other
/// threads' calls go on: the allocations are held (a free meanwhile is deferred, M2) and
/// pinned (a device reset or aclFinalize waits for `f`). The runtime may have been finalized
/// meanwhile; the access is done all the same (its memory was kept for it).
pub(super) fn access(
    g: &mut PGuard<'static, Global>,
    allocs: &[usize],
    bytes: usize,
    f: impl FnOnce(),
) -> R {
    if bytes < UNLOCKED_ACCESS_MIN {
        f();
        return Ok(());
    }
    let held = rt_of(g)?.take_uses(allocs);
    exec::pinned(g, allocs, f);
    if let Some(rt) = g.rt.as_deref_mut() {
        rt.drop_uses(&held);
    }
    Ok(())
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
    // D8: beyond the free memory of the device (or the host's memory): 207001, before
    // anything is allocated.
    let Some(padded) = size.checked_add(ALLOC_ALIGN) else {
        return Err(code::RT_MEMORY_ALLOCATION);
    };
    rt.extra.charge(host, device, size as u64)?;
    // calloc: large blocks come from mmap, zero pages materialise lazily. The user's
    // pointer is aligned to ALLOC_ALIGN bytes, as the runtime's allocations are aligned.
    // SAFETY: plain C allocation of `padded` bytes; checked for NULL below.
    let base = unsafe { libc::calloc(1, padded) };
    if base.is_null() {
        rt.extra.uncharge(host, device, size as u64);
        return Err(code::RT_MEMORY_ALLOCATION);
    }
    let offset = (ALLOC_ALIGN - (base as usize) % ALLOC_ALIGN) % ALLOC_ALIGN;
    // SAFETY: `offset < ALLOC_ALIGN`, so `size` bytes from there stay inside the block.
    let p = unsafe { base.cast::<u8>().add(offset) }.cast::<c_void>();
    rt.allocs.insert(
        p as usize,
        Alloc {
            base: base as usize,
            generation: next_alloc_generation(),
            size,
            host,
            device,
            uses: 0,
            freed: false,
            dvpp: false,
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
    // DV5: media memory goes back with acldvppFree.
    if rt.allocs.get(&key).is_some_and(|a| a.dvpp) {
        rt.report(
            "DV5",
            format!(
                "{name}({key:#x}) on memory of acldvppMalloc: acldvppMalloc/acldvppFree pair; the call returns 107000"
            ),
        );
        return Err(code::RT_PARAM_INVALID);
    }
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
    // MD2 / MD3: memory a loaded model holds (work, weight, model bytes).
    if let Some((rule, what)) = crate::rules::model::holder(rt, key) {
        rt.report(
            rule,
            format!(
                "{name}({key:#x}) while {what}: keep it allocated until aclmdlUnload; the simulator defers the release until then"
            ),
        );
        if let Some(a) = rt.allocs.get_mut(&key) {
            a.freed = true;
        }
        return Ok(());
    }
    if uses > 0 {
        rt.report(
            "M2",
            format!(
                "{name}({key:#x}) while {uses} issued, unfinished task(s) (or a call copying it on another thread) use it: synchronize the stream first; the simulator defers the release until they are done"
            ),
        );
        if let Some(a) = rt.allocs.get_mut(&key) {
            a.freed = true;
        }
        return Ok(());
    }
    // SAFETY: no task uses it (`uses == 0`) and no model holds it (checked above).
    unsafe { rt.release_alloc(key) };
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
        let allocs = check_copy(
            rt,
            "aclrtMemcpy",
            dst as usize,
            destMax,
            src as usize,
            count,
            kind,
        )?;
        // MD6 (memory of a pending model execution), MD2 / MD3 (memory a model holds).
        crate::rules::model::host_access(
            rt,
            "aclrtMemcpy",
            (dst as usize, count),
            Some((src as usize, count)),
        );
        // DV6: memory of a pending media task.
        crate::rules::dvpp::host_access(
            rt,
            "aclrtMemcpy",
            (dst as usize, count),
            Some((src as usize, count)),
        );
        let (dst, src) = (dst as usize, src as usize);
        access(&mut g, &allocs, count, || {
            // SAFETY: ranges validated above (M1) and held by `access`; untracked host
            // memory is the caller's to keep valid during the call.
            unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, count) }
        })
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
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
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
        // MD2 / MD3 at issue; MD6 when the copy runs (exec::step).
        crate::rules::model::touch_model_memory(
            rt,
            "aclrtMemcpyAsync",
            dst as usize,
            count,
            "writes",
        );
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
        let allocs = check_set(rt, "aclrtMemset", devPtr as usize, maxCount, count)?;
        crate::rules::model::host_access(rt, "aclrtMemset", (devPtr as usize, count), None);
        crate::rules::dvpp::host_access(rt, "aclrtMemset", (devPtr as usize, count), None);
        let p = devPtr as usize;
        access(&mut g, &allocs, count, || {
            // SAFETY: range validated above (M1) and held by `access`; untracked memory is
            // the caller's to keep valid during the call.
            unsafe { std::ptr::write_bytes(p as *mut u8, value as u8, count) }
        })
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
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        let allocs = check_set(rt, "aclrtMemsetAsync", devPtr as usize, maxCount, count)?;
        check_stream_device(rt, "aclrtMemsetAsync", sid, &allocs)?;
        crate::rules::model::touch_model_memory(
            rt,
            "aclrtMemsetAsync",
            devPtr as usize,
            count,
            "writes",
        );
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
