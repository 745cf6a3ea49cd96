//! Per-function call counters (`aclsimCallCount`, `aclsimResetCallCounts`).
//!
//! Every exported runtime function has an index known at compile time ([`CallId`]) and one
//! relaxed atomic counter in a static array: counting a call is one atomic add, no lookup
//! and no lock, so that instruction-count measurements (callgrind) barely move. The counters
//! live outside the runtime state, so they count before `aclInit` and survive `aclFinalize`.
//!
//! Layer: base (with `pt` and `trace`); imports nothing of the crate. The thread's current
//! runtime function is kept here too (`current`), so that [`crate::errmsg`], which names
//! the function of a failed call, sits above this module and not beside it in a circle.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! call_ids {
    ($($name:ident),* $(,)?) => {
        /// One exported runtime function (`acl*`), plus `aclsimLaunchKernel`, which issues
        /// a task like a runtime call.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum CallId {
            $($name,)*
        }

        /// The function names, indexed by [`CallId`].
        pub const CALL_NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

call_ids!(
    aclInit,
    aclFinalize,
    aclrtSetDevice,
    aclrtResetDevice,
    aclrtGetDevice,
    aclrtGetDeviceCount,
    aclrtGetRunMode,
    aclrtSynchronizeDevice,
    aclrtSynchronizeDeviceWithTimeout,
    aclrtCreateContext,
    aclrtDestroyContext,
    aclrtSetCurrentContext,
    aclrtGetCurrentContext,
    aclrtCreateStream,
    aclrtDestroyStream,
    aclrtSynchronizeStream,
    aclrtSynchronizeStreamWithTimeout,
    aclrtStreamWaitEvent,
    aclrtCreateEvent,
    aclrtCreateEventWithFlag,
    aclrtDestroyEvent,
    aclrtRecordEvent,
    aclrtResetEvent,
    aclrtQueryEventStatus,
    aclrtSynchronizeEvent,
    aclrtSynchronizeEventWithTimeout,
    aclrtEventElapsedTime,
    aclrtSetOpWaitTimeout,
    aclrtSubscribeReport,
    aclrtUnSubscribeReport,
    aclrtLaunchCallback,
    aclrtProcessReport,
    aclrtMalloc,
    aclrtFree,
    aclrtMallocHost,
    aclrtFreeHost,
    aclrtMemcpy,
    aclrtMemcpyAsync,
    aclrtMemset,
    aclrtMemsetAsync,
    aclsimLaunchKernel,
    // Beyond the seeds (P4, P5, D7, D8, S5-S8, C10).
    aclrtGetVersion,
    aclsysGetVersionStr,
    aclsysGetVersionNum,
    aclGetRecentErrMsg,
    aclrtResetDeviceForce,
    aclrtGetSocName,
    aclrtGetMemInfo,
    aclGetDeviceCapability,
    aclrtCreateStreamWithConfig,
    aclrtDestroyStreamForce,
    aclrtStreamQuery,
    aclrtSetStreamFailureMode,
    aclrtSetOpExecuteTimeOut,
    aclrtSetOpExecuteTimeOutV2,
    aclrtGetOpTimeOutInterval,
    aclrtGetOpExecuteTimeout,
    aclrtLaunchHostFunc,
    // CANN 8.x/9.x (P6, D9, D10, S9-S12, C11, C12).
    aclrtSubscribeHostFunc,
    aclrtProcessHostFunc,
    aclrtUnSubscribeHostFunc,
    aclrtCreateStreamConfigHandle,
    aclrtDestroyStreamConfigHandle,
    aclrtSetStreamConfigOpt,
    aclrtCreateStreamV2,
    aclrtStreamGetFlags,
    aclrtStreamGetPriority,
    aclrtStreamGetId,
    aclrtStreamStop,
    aclrtStreamAbort,
    aclrtRegStreamStateCallback,
    aclrtCtxGetCurrentDefaultStream,
    aclrtGetResInCurrentThread,
    aclrtGetLastError,
    aclrtPeekAtLastError,
    aclrtGetErrorVerbose,
    // Models and data buffers (MD1-MD13).
    aclmdlCreateDesc,
    aclmdlDestroyDesc,
    aclmdlGetDesc,
    aclmdlGetNumInputs,
    aclmdlGetNumOutputs,
    aclmdlGetInputSizeByIndex,
    aclmdlGetOutputSizeByIndex,
    aclmdlGetInputIndexByName,
    aclmdlGetInputDims,
    aclmdlGetOutputDims,
    aclmdlGetCurOutputDims,
    aclmdlGetDynamicBatch,
    aclmdlGetInputDataType,
    aclmdlGetOutputDataType,
    aclmdlGetInputFormat,
    aclmdlGetOutputFormat,
    aclmdlCreateDataset,
    aclmdlDestroyDataset,
    aclmdlAddDatasetBuffer,
    aclmdlGetDatasetNumBuffers,
    aclmdlGetDatasetBuffer,
    aclmdlQuerySize,
    aclmdlLoadFromFile,
    aclmdlLoadFromMem,
    aclmdlLoadFromFileWithMem,
    aclmdlLoadFromMemWithMem,
    aclmdlExecute,
    aclmdlExecuteAsync,
    aclmdlUnload,
    aclmdlSetDynamicBatchSize,
    aclmdlSetDynamicHWSize,
    aclCreateDataBuffer,
    aclDestroyDataBuffer,
    aclGetDataBufferAddr,
    aclGetDataBufferSizeV2,
    // Media, DVPP V1 (DV2-DV11).
    acldvppMalloc,
    acldvppFree,
    acldvppCreateChannelDesc,
    acldvppDestroyChannelDesc,
    acldvppSetChannelDescMode,
    acldvppSetChannelDescParam,
    acldvppCreateChannel,
    acldvppDestroyChannel,
    acldvppCreatePicDesc,
    acldvppDestroyPicDesc,
    acldvppSetPicDescData,
    acldvppSetPicDescSize,
    acldvppSetPicDescFormat,
    acldvppSetPicDescWidth,
    acldvppSetPicDescHeight,
    acldvppSetPicDescWidthStride,
    acldvppSetPicDescHeightStride,
    acldvppGetPicDescData,
    acldvppGetPicDescSize,
    acldvppGetPicDescFormat,
    acldvppGetPicDescWidth,
    acldvppGetPicDescHeight,
    acldvppGetPicDescWidthStride,
    acldvppGetPicDescHeightStride,
    acldvppGetPicDescRetCode,
    acldvppCreateResizeConfig,
    acldvppDestroyResizeConfig,
    acldvppSetResizeConfigInterpolation,
    acldvppGetResizeConfigInterpolation,
    acldvppJpegGetImageInfo,
    acldvppJpegGetImageInfoV2,
    acldvppJpegPredictDecSize,
    acldvppJpegDecodeAsync,
    acldvppVpcResizeAsync,
);

const COUNT: usize = CALL_NAMES.len();

static COUNTS: [AtomicU64; COUNT] = [const { AtomicU64::new(0) }; COUNT];

/// No runtime function entered yet (see [`current`]).
pub(crate) const NO_CALL: usize = usize::MAX;

thread_local! {
    /// Index (`CallId`) of the runtime function this thread entered last.
    static CUR: Cell<usize> = const { Cell::new(NO_CALL) };
}

/// Counts one call of `id` (failing calls included) and notes it as the calling thread's
/// current runtime function (for `aclGetRecentErrMsg`, P4: one thread-local store).
#[inline(always)]
pub fn count(id: CallId) {
    COUNTS[id as usize].fetch_add(1, Ordering::Relaxed);
    enter(id as usize);
}

/// The calling thread entered runtime function `index` (a `CallId`).
#[inline(always)]
pub(crate) fn enter(index: usize) {
    // `try_with`: a call made from another thread-local's destructor at thread exit finds
    // this gone; it then keeps no message, and never panics.
    let _ = CUR.try_with(|c| c.set(index));
}

/// The runtime function this thread entered last (a `CallId` index; `NO_CALL` if none).
#[inline(always)]
pub(crate) fn current() -> usize {
    CUR.try_with(|c| c.get()).unwrap_or(NO_CALL)
}

/// Calls of the function named `name` since the last [`reset`]; 0 for an unknown name.
pub fn get(name: &str) -> u64 {
    CALL_NAMES
        .iter()
        .position(|n| *n == name)
        .map_or(0, |i| COUNTS[i].load(Ordering::Relaxed))
}

/// Sets every counter to 0.
pub fn reset() {
    for c in &COUNTS {
        c.store(0, Ordering::Relaxed);
    }
}
