//! The exported C entry points, one file per area of `include/ascendcl.h`, plus the
//! simulator's own extensions (`ext`, `sim/include/aclsim.h`). Shared helpers (`ffi`,
//! `enter`, handle resolution) live in the crate root.
//!
//! Layer: C entry points, the top layer with the crate root: its files import the root's
//! helpers and every layer below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`,
//! `calls`, `pt`, `trace`); nothing below imports `api`. The entry points are re-exported
//! at the crate root by name.

mod callback;
mod device;
mod dvpp;
mod event;
mod ext;
mod hostfunc;
mod hostsub;
mod info;
mod memory;
mod model;
mod optimeout;
mod process;
mod stream;
mod stream_cfg;
mod stream_ctl;
mod stream_state;
mod thread_info;

pub use callback::{
    aclrtLaunchCallback, aclrtProcessReport, aclrtSubscribeReport, aclrtUnSubscribeReport,
};
pub use device::{
    aclrtCreateContext, aclrtDestroyContext, aclrtGetCurrentContext, aclrtGetDevice,
    aclrtGetDeviceCount, aclrtGetRunMode, aclrtResetDevice, aclrtResetDeviceForce,
    aclrtSetCurrentContext, aclrtSetDevice, aclrtSynchronizeDevice,
    aclrtSynchronizeDeviceWithTimeout,
};
pub use dvpp::{
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
pub use event::{
    aclrtCreateEvent, aclrtCreateEventWithFlag, aclrtDestroyEvent, aclrtEventElapsedTime,
    aclrtQueryEventStatus, aclrtRecordEvent, aclrtResetEvent, aclrtSetOpWaitTimeout,
    aclrtSynchronizeEvent, aclrtSynchronizeEventWithTimeout,
};
pub use ext::{
    aclsimApiVersion, aclsimCallCount, aclsimClearFaults, aclsimClearFindings, aclsimFindingCount,
    aclsimGetFinding, aclsimInjectFault, aclsimInjectFaultAt, aclsimInjectTaskFailure,
    aclsimLaunchKernel, aclsimLiveObjectCount, aclsimResetCallCounts, aclsimSetDeviceCount,
    aclsimSetQuiet,
};
pub use hostfunc::aclrtLaunchHostFunc;
pub use hostsub::{aclrtProcessHostFunc, aclrtSubscribeHostFunc, aclrtUnSubscribeHostFunc};
pub use info::{
    AI_CORE_NUM, INTERFACE_VERSION, L2_SIZE, PACKAGE_VERSION, PACKAGE_VERSION_NUM, PACKAGES,
    VECTOR_CORE_NUM, aclGetDeviceCapability, aclGetRecentErrMsg, aclrtGetMemInfo, aclrtGetSocName,
    aclrtGetVersion, aclsysGetVersionNum, aclsysGetVersionStr,
};
pub use memory::{
    aclrtFree, aclrtFreeHost, aclrtMalloc, aclrtMallocHost, aclrtMemcpy, aclrtMemcpyAsync,
    aclrtMemset, aclrtMemsetAsync,
};
pub use model::{
    Batch, DataBuf, Dataset, Desc, Exec, ExecUse, IODims, Loaded, Models, Region, Run,
    aclCreateDataBuffer, aclDestroyDataBuffer, aclGetDataBufferAddr, aclGetDataBufferSizeV2,
    aclmdlAddDatasetBuffer, aclmdlCreateDataset, aclmdlCreateDesc, aclmdlDestroyDataset,
    aclmdlDestroyDesc, aclmdlExecute, aclmdlExecuteAsync, aclmdlGetCurOutputDims,
    aclmdlGetDatasetBuffer, aclmdlGetDatasetNumBuffers, aclmdlGetDesc, aclmdlGetDynamicBatch,
    aclmdlGetInputDataType, aclmdlGetInputDims, aclmdlGetInputFormat, aclmdlGetInputIndexByName,
    aclmdlGetInputSizeByIndex, aclmdlGetNumInputs, aclmdlGetNumOutputs, aclmdlGetOutputDataType,
    aclmdlGetOutputDims, aclmdlGetOutputFormat, aclmdlGetOutputSizeByIndex, aclmdlLoadFromFile,
    aclmdlLoadFromFileWithMem, aclmdlLoadFromMem, aclmdlLoadFromMemWithMem, aclmdlQuerySize,
    aclmdlSetDynamicBatchSize, aclmdlSetDynamicHWSize, aclmdlUnload,
};
pub use optimeout::{
    aclrtGetOpExecuteTimeout, aclrtGetOpTimeOutInterval, aclrtSetOpExecuteTimeOut,
    aclrtSetOpExecuteTimeOutV2,
};
pub use process::{aclFinalize, aclInit};
pub use stream::{
    aclrtCreateStream, aclrtDestroyStream, aclrtStreamWaitEvent, aclrtSynchronizeStream,
    aclrtSynchronizeStreamWithTimeout,
};
pub use stream_cfg::{
    aclrtCreateStreamConfigHandle, aclrtCreateStreamV2, aclrtDestroyStreamConfigHandle,
    aclrtSetStreamConfigOpt, aclrtStreamGetFlags, aclrtStreamGetId, aclrtStreamGetPriority,
};
pub use stream_ctl::{
    aclrtCreateStreamWithConfig, aclrtDestroyStreamForce, aclrtSetStreamFailureMode,
    aclrtStreamQuery,
};
pub use stream_state::{aclrtRegStreamStateCallback, aclrtStreamAbort, aclrtStreamStop};
pub use thread_info::{
    ErrorInfo, aclrtCtxGetCurrentDefaultStream, aclrtGetErrorVerbose, aclrtGetLastError,
    aclrtGetResInCurrentThread, aclrtPeekAtLastError,
};
