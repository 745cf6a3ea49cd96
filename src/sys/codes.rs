//! The runtime's error codes (`aclError`), named: [`AclError`], with its C name, value and
//! description. A description of the C interface, like the rest of `sys`: it imports nothing.

use std::fmt;

macro_rules! acl_error_codes {
    ($( $(#[$meta:meta])* $variant:ident = $code:literal, $c_name:literal, $desc:literal; )*) => {
        /// A non-zero `aclError` returned by the runtime.
        ///
        /// Each named variant is one code of `protocol.md` ("Error codes"); a code the crate
        /// does not know is kept, unchanged, in [`AclError::Unknown`], so that nothing the
        /// runtime says is lost.
        ///
        /// ```
        /// use ascend_typestate::AclError;
        /// let e = AclError::from_code(107003);
        /// assert_eq!(e, AclError::RtStreamContext);
        /// assert_eq!(e.c_name(), "ACL_ERROR_RT_STREAM_CONTEXT");
        /// assert_eq!(AclError::from_code(123).code(), 123);
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum AclError {
            $(
                #[doc = concat!("`", $c_name, "` (", stringify!($code), "): ", $desc, ".")]
                $(#[$meta])*
                $variant,
            )*
            /// A code that is not in `protocol.md`'s list, carried intact.
            Unknown(i32),
        }

        impl AclError {
            /// Every named variant, in the order of `protocol.md`.
            pub const ALL: &'static [AclError] = &[$(AclError::$variant),*];

            /// The error for a raw non-zero code. `0` (`ACL_SUCCESS`) is not an error and
            /// maps to `Unknown(0)`; use [`AclError::check`] to turn a raw return value into a `Result`.
            pub const fn from_code(code: i32) -> Self {
                match code {
                    $($code => AclError::$variant,)*
                    other => AclError::Unknown(other),
                }
            }

            /// The numeric `aclError` value.
            pub const fn code(self) -> i32 {
                match self {
                    $(AclError::$variant => $code,)*
                    AclError::Unknown(code) => code,
                }
            }

            /// The C macro name, e.g. `"ACL_ERROR_RT_STREAM_CONTEXT"`; `"unknown"` for
            /// [`AclError::Unknown`].
            pub const fn c_name(self) -> &'static str {
                match self {
                    $(AclError::$variant => $c_name,)*
                    AclError::Unknown(_) => "unknown",
                }
            }

            /// One line of English saying what the code means.
            pub const fn description(self) -> &'static str {
                match self {
                    $(AclError::$variant => $desc,)*
                    AclError::Unknown(_) => "an error code this crate does not know",
                }
            }
        }
    };
}

acl_error_codes! {
    InvalidParam = 100000, "ACL_ERROR_INVALID_PARAM", "an argument is invalid";
    Uninitialize = 100001, "ACL_ERROR_UNINITIALIZE", "aclInit has not been called (P1)";
    RepeatInitialize = 100002, "ACL_ERROR_REPEAT_INITIALIZE", "aclInit was called twice (P2)";
    RepeatSubscribe = 100033, "ACL_ERROR_REPEAT_SUBSCRIBE", "the subscription already exists";
    RepeatFinalize = 100037, "ACL_ERROR_REPEAT_FINALIZE", "aclFinalize was called twice (P2)";
    InvalidModelId = 100011, "ACL_ERROR_INVALID_MODEL_ID", "the model id is invalid (not loaded, or unloaded)";
    DeserializeModel = 100012, "ACL_ERROR_DESERIALIZE_MODEL", "the model could not be deserialized";
    ParseModel = 100013, "ACL_ERROR_PARSE_MODEL", "the model could not be parsed (not a model for this runtime or SoC)";
    ReadModelFailure = 100014, "ACL_ERROR_READ_MODEL_FAILURE", "the model file could not be read";
    ModelSizeInvalid = 100015, "ACL_ERROR_MODEL_SIZE_INVALID", "the model size is invalid";
    ModelMissingAttr = 100016, "ACL_ERROR_MODEL_MISSING_ATTR", "the model lacks an attribute";
    ModelInputNotMatch = 100017, "ACL_ERROR_MODEL_INPUT_NOT_MATCH", "the input dataset does not match the model (MD10)";
    ModelOutputNotMatch = 100018, "ACL_ERROR_MODEL_OUTPUT_NOT_MATCH", "the output dataset does not match the model (MD10)";
    ModelNotDynamic = 100019, "ACL_ERROR_MODEL_NOT_DYNAMIC", "the model has no dynamic batch or size (MD11)";
    ResourceNotMatch = 200004, "ACL_ERROR_RESOURCE_NOT_MATCH", "a resource does not match";
    RtModelContext = 107004, "ACL_ERROR_RT_MODEL_CONTEXT", "the model is used outside the context it was loaded in (MD1)";
    RtStreamModel = 107005, "ACL_ERROR_RT_STREAM_MODEL", "the stream does not suit the model";
    RtModelRunning = 107037, "ACL_ERROR_RT_MODEL_RUNNING", "the model has an execution pending (MD7)";
    RtNoModelResource = 207010, "ACL_ERROR_RT_NO_MODEL_RESOURCE", "out of model resources";
    RtModelExecute = 507011, "ACL_ERROR_RT_MODEL_EXECUTE", "the model execution failed";
    FormatNotMatch = 100027, "ACL_ERROR_FORMAT_NOT_MATCH", "a picture format does not match what the call needs (DV8, DV9)";
    RelativeResourceNotCleared = 148051, "ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED", "a channel description was destroyed while its channel exists (DV3)";
    UnsupportedJpeg = 148052, "ACL_ERROR_UNSUPPORTED_JPEG", "the JPEG's coding is not supported by JPEGD: progressive, arithmetic, lossless, hierarchical, or another sampling (DV7)";
    BadAlloc = 200000, "ACL_ERROR_BAD_ALLOC", "memory allocation failed";
    ApiNotSupport = 200001, "ACL_ERROR_API_NOT_SUPPORT", "the API is not supported";
    InvalidResourceHandle = 200005, "ACL_ERROR_INVALID_RESOURCE_HANDLE", "a resource handle is invalid";
    FeatureUnsupported = 200006, "ACL_ERROR_FEATURE_UNSUPPORTED", "the feature is not supported";
    InternalError = 500000, "ACL_ERROR_INTERNAL_ERROR", "internal error";
    Failure = 500001, "ACL_ERROR_FAILURE", "the operation failed";
    RtParamInvalid = 107000, "ACL_ERROR_RT_PARAM_INVALID", "a runtime parameter is invalid";
    RtInvalidDeviceId = 107001, "ACL_ERROR_RT_INVALID_DEVICEID", "the device id is invalid (D1)";
    RtContextNull = 107002, "ACL_ERROR_RT_CONTEXT_NULL", "no current context on this thread, or the default context was destroyed (D2, D5)";
    RtStreamContext = 107003, "ACL_ERROR_RT_STREAM_CONTEXT", "the stream is not in the calling thread's current context (D6)";
    RtStreamSubscribe = 107011, "ACL_ERROR_RT_STREAM_SUBSCRIBE", "the stream is already subscribed, or not subscribed (C2, C9)";
    RtThreadSubscribe = 107012, "ACL_ERROR_RT_THREAD_SUBSCRIBE", "the thread is not subscribed, or subscribed on another device (C3, C6, C9)";
    RtStreamNoCbReg = 107015, "ACL_ERROR_RT_STREAM_NO_CB_REG", "no thread is subscribed to the stream (C5)";
    RtWaitTimeout = 107019, "ACL_ERROR_RT_WAIT_TIMEOUT", "a wait timed out (P3)";
    RtTaskTimeout = 107020, "ACL_ERROR_RT_TASK_TIMEOUT", "a task ran longer than the operator execution timeout (P5)";
    RtStreamAbort = 107023, "ACL_ERROR_RT_STREAM_ABORT", "the stream's context stopped after a failed task (S6: stop on failure)";
    RtFeatureNotSupport = 207000, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT", "the feature is not supported, e.g. waiting on an event without ACL_EVENT_SYNC (E7)";
    RtMemoryAllocation = 207001, "ACL_ERROR_RT_MEMORY_ALLOCATION", "device memory allocation failed";
    RtNoDevice = 207004, "ACL_ERROR_RT_NO_DEVICE", "no device is available";
    RtNoEventResource = 207007, "ACL_ERROR_RT_NO_EVENT_RESOURCE", "out of event resources (E4)";
    RtNoStreamResource = 207008, "ACL_ERROR_RT_NO_STREAM_RESOURCE", "out of stream resources";
    RtInternalError = 507000, "ACL_ERROR_RT_INTERNAL_ERROR", "runtime internal error, e.g. elapsed time of an incomplete event (E8)";
    RtStreamNotComplete = 507004, "ACL_ERROR_RT_STREAM_NOT_COMPLETE", "the stream's tasks are not complete";
    RtEventNotComplete = 507006, "ACL_ERROR_RT_EVENT_NOT_COMPLETE", "the event is not complete";
    RtContextReleaseError = 507007, "ACL_ERROR_RT_CONTEXT_RELEASE_ERROR", "releasing the context or device failed, e.g. resetting a device that is not set (D5)";
    RtReportTimeout = 507012, "ACL_ERROR_RT_REPORT_TIMEOUT", "aclrtProcessReport timed out with no callback to run (C6)";
    RtStreamSyncTimeout = 507046, "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT", "stream synchronization timed out (S3)";
    RtEventSyncTimeout = 507047, "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT", "event synchronization timed out (E6)";
}

impl fmt::Display for AclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.c_name(),
            self.code(),
            self.description()
        )
    }
}

impl std::error::Error for AclError {}

impl AclError {
    /// Turns a raw `aclError` into a `Result`: `0` is success, anything else an [`AclError`].
    ///
    /// ```
    /// use ascend_typestate::AclError;
    /// assert_eq!(AclError::check(0), Ok(()));
    /// assert_eq!(AclError::check(100001), Err(AclError::Uninitialize));
    /// ```
    #[inline(always)]
    pub const fn check(code: i32) -> std::result::Result<(), AclError> {
        check(code)
    }
}

/// [`AclError::check`], for this crate's own callers.
#[inline(always)]
pub(crate) const fn check(code: i32) -> Result<(), AclError> {
    if code == 0 {
        Ok(())
    } else {
        Err(AclError::from_code(code))
    }
}
