//! `libascendcl.so`: a CPU simulator of the AscendCL runtime with a strict protocol checker.
//!
//! Every function of `include/ascendcl.h` and `sim/include/aclsim.h` is exported with the C
//! ABI. Semantics and error codes follow `docs/protocol.md` (rule IDs P/D/S/E/C/M/MD);
//! deviations from the real runtime are listed in `sim/README.md`.
//!
//! Layers, lowest first; a module imports only modules of its own layer or below, with no
//! import cycle between files (checked by `sim/tests/layers.rs`):
//! 1. base: [`pt`] pthread primitives (helgrind-friendly), [`calls`] call counters and the
//!    thread's current call, [`trace`] the Chrome trace;
//! 2. plain data: [`state`] the global state (with the model objects and the state of the
//!    functions beyond the seeds), [`model`] the simulator's model format, [`errmsg`] the
//!    recent error message;
//! 3. rules: `rules` (task release, the model rules) and [`extra`] (S6, P5), which change
//!    the state;
//! 4. executor: [`exec`] stream workers, the task state machine, host waits and the
//!    deadlock watchdog, teardown;
//! 5. C entry points: `api` (one file per area) and, here, their shared helpers.
//!
//! Each entry point runs inside `catch_unwind` so a panic never crosses the C ABI (it
//! returns 500000 instead).
#![allow(non_snake_case)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(
    clippy::undocumented_unsafe_blocks,
    clippy::multiple_unsafe_ops_per_block
)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use crate::pt::{PGuard, self_id};
use crate::state::{EVENT_BASE, G, Global, IN_CALLBACK, Rt, STREAM_BASE, code, decode, handle};

pub mod calls;
pub mod errmsg;
pub mod exec;
pub mod extra;
pub mod media;
pub mod model;
pub mod pt;
mod rules;
pub mod state;
pub mod trace;

type R = Result<(), i32>;

/// Runs the body of a runtime entry point (after `calls::count`): a failure is recorded as
/// the thread's recent error message (P4, `aclGetRecentErrMsg`), at no cost on success.
fn ffi(f: impl FnOnce() -> R) -> i32 {
    // The entry point's own index: a callback run inside (aclrtProcessReport) enters others.
    let call = errmsg::current();
    let e = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return code::SUCCESS,
        Ok(Err(e)) => e,
        Err(_) => code::INTERNAL_ERROR,
    };
    errmsg::failed(call, e);
    e
}

/// As [`ffi`] for the `aclsim*` functions that are not runtime calls (no error message).
fn ffi_ext(f: impl FnOnce() -> R) -> i32 {
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
        return Err(errmsg::why(
            code::UNINITIALIZE,
            "aclInit has not been called (or aclFinalize was): P1",
        ));
    };
    if kind == Call::Action && IN_CALLBACK.with(|c| c.get()) {
        rt.report(
            "C8",
            format!(
                "{name} called from inside a callback, kernel body or host function on thread {:#x}: a callback must not synchronize, allocate or free runtime resources or launch tasks (it can deadlock the stream); the simulator rejects the call with 107000",
                self_id()
            ),
        );
        return Err(errmsg::why(
            code::RT_PARAM_INVALID,
            "called from inside a callback, kernel body or host function (C8)",
        ));
    }
    // Injected failures (aclsimInjectFault, aclsimInjectFaultAt): the call fails before
    // doing anything, even checking its arguments.
    if !rt.faults.is_empty()
        && let Some(code) = rt.take_fault(name)
    {
        return Err(errmsg::why(code, "injected failure (aclsimInjectFault)"));
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

mod api;
pub use api::{
    AI_CORE_NUM, Batch, DataBuf, Dataset, Desc, Exec, ExecUse, INTERFACE_VERSION, IODims, L2_SIZE,
    Loaded, Models, PACKAGE_VERSION, PACKAGE_VERSION_NUM, PACKAGES, Region, Run, VECTOR_CORE_NUM,
    aclCreateDataBuffer, aclDestroyDataBuffer, aclFinalize, aclGetDataBufferAddr,
    aclGetDataBufferSizeV2, aclGetDeviceCapability, aclGetRecentErrMsg, aclInit,
    aclmdlAddDatasetBuffer, aclmdlCreateDataset, aclmdlCreateDesc, aclmdlDestroyDataset,
    aclmdlDestroyDesc, aclmdlExecute, aclmdlExecuteAsync, aclmdlGetCurOutputDims,
    aclmdlGetDatasetBuffer, aclmdlGetDatasetNumBuffers, aclmdlGetDesc, aclmdlGetDynamicBatch,
    aclmdlGetInputDataType, aclmdlGetInputDims, aclmdlGetInputFormat, aclmdlGetInputIndexByName,
    aclmdlGetInputSizeByIndex, aclmdlGetNumInputs, aclmdlGetNumOutputs, aclmdlGetOutputDataType,
    aclmdlGetOutputDims, aclmdlGetOutputFormat, aclmdlGetOutputSizeByIndex, aclmdlLoadFromFile,
    aclmdlLoadFromFileWithMem, aclmdlLoadFromMem, aclmdlLoadFromMemWithMem, aclmdlQuerySize,
    aclmdlSetDynamicBatchSize, aclmdlSetDynamicHWSize, aclmdlUnload, aclrtCreateContext,
    aclrtCreateEvent, aclrtCreateEventWithFlag, aclrtCreateStream, aclrtCreateStreamWithConfig,
    aclrtDestroyContext, aclrtDestroyEvent, aclrtDestroyStream, aclrtDestroyStreamForce,
    aclrtEventElapsedTime, aclrtFree, aclrtFreeHost, aclrtGetCurrentContext, aclrtGetDevice,
    aclrtGetDeviceCount, aclrtGetMemInfo, aclrtGetOpExecuteTimeout, aclrtGetOpTimeOutInterval,
    aclrtGetRunMode, aclrtGetSocName, aclrtGetVersion, aclrtLaunchCallback, aclrtLaunchHostFunc,
    aclrtMalloc, aclrtMallocHost, aclrtMemcpy, aclrtMemcpyAsync, aclrtMemset, aclrtMemsetAsync,
    aclrtProcessReport, aclrtQueryEventStatus, aclrtRecordEvent, aclrtResetDevice,
    aclrtResetDeviceForce, aclrtResetEvent, aclrtSetCurrentContext, aclrtSetDevice,
    aclrtSetOpExecuteTimeOut, aclrtSetOpExecuteTimeOutV2, aclrtSetOpWaitTimeout,
    aclrtSetStreamFailureMode, aclrtStreamQuery, aclrtStreamWaitEvent, aclrtSubscribeReport,
    aclrtSynchronizeDevice, aclrtSynchronizeDeviceWithTimeout, aclrtSynchronizeEvent,
    aclrtSynchronizeEventWithTimeout, aclrtSynchronizeStream, aclrtSynchronizeStreamWithTimeout,
    aclrtUnSubscribeReport, aclsimApiVersion, aclsimCallCount, aclsimClearFaults,
    aclsimClearFindings, aclsimFindingCount, aclsimGetFinding, aclsimInjectFault,
    aclsimInjectFaultAt, aclsimInjectTaskFailure, aclsimLaunchKernel, aclsimLiveObjectCount,
    aclsimResetCallCounts, aclsimSetDeviceCount, aclsimSetQuiet, aclsysGetVersionNum,
    aclsysGetVersionStr,
};
pub use api::{
    ErrorInfo, aclrtCreateStreamConfigHandle, aclrtCreateStreamV2, aclrtCtxGetCurrentDefaultStream,
    aclrtDestroyStreamConfigHandle, aclrtGetErrorVerbose, aclrtGetLastError,
    aclrtGetResInCurrentThread, aclrtPeekAtLastError, aclrtProcessHostFunc,
    aclrtRegStreamStateCallback, aclrtSetStreamConfigOpt, aclrtStreamAbort, aclrtStreamGetFlags,
    aclrtStreamGetId, aclrtStreamGetPriority, aclrtStreamStop, aclrtSubscribeHostFunc,
    aclrtUnSubscribeHostFunc,
};
pub use api::{
    acldvppCreateChannel, acldvppCreateChannelDesc, acldvppCreatePicDesc,
    acldvppCreateResizeConfig, acldvppDestroyChannel, acldvppDestroyChannelDesc,
    acldvppDestroyPicDesc, acldvppDestroyResizeConfig, acldvppFree, acldvppGetPicDescData,
    acldvppGetPicDescFormat, acldvppGetPicDescHeight, acldvppGetPicDescHeightStride,
    acldvppGetPicDescRetCode, acldvppGetPicDescSize, acldvppGetPicDescWidth,
    acldvppGetPicDescWidthStride, acldvppGetResizeConfigInterpolation, acldvppJpegDecodeAsync,
    acldvppJpegGetImageInfo, acldvppJpegGetImageInfoV2, acldvppJpegPredictDecSize, acldvppMalloc,
    acldvppSetChannelDescMode, acldvppSetChannelDescParam, acldvppSetPicDescData,
    acldvppSetPicDescFormat, acldvppSetPicDescHeight, acldvppSetPicDescHeightStride,
    acldvppSetPicDescSize, acldvppSetPicDescWidth, acldvppSetPicDescWidthStride,
    acldvppSetResizeConfigInterpolation, acldvppVpcResizeAsync,
};
