//! Error codes (protocol.md, "Error codes").
//!
//! Layer: plain data (part of `state`), with no import at all: every module that returns
//! or describes a code (`errmsg`, `model`, `state::extra`, ...) sits on it without a circle
//! through the rest of `state`.

pub const SUCCESS: i32 = 0;
pub const INVALID_PARAM: i32 = 100000;
/// `ACL_ERROR_INVALID_FILE`: e.g. a package without a version file (P4).
pub const INVALID_FILE: i32 = 100003;
pub const UNINITIALIZE: i32 = 100001;
pub const REPEAT_INITIALIZE: i32 = 100002;
pub const REPEAT_FINALIZE: i32 = 100037;
pub const INVALID_MODEL_ID: i32 = 100011;
pub const PARSE_MODEL: i32 = 100013;
pub const READ_MODEL_FAILURE: i32 = 100014;
pub const MODEL_SIZE_INVALID: i32 = 100015;
pub const MODEL_MISSING_ATTR: i32 = 100016;
pub const MODEL_INPUT_NOT_MATCH: i32 = 100017;
pub const MODEL_OUTPUT_NOT_MATCH: i32 = 100018;
pub const MODEL_NOT_DYNAMIC: i32 = 100019;
pub const RT_MODEL_CONTEXT: i32 = 107004;
pub const RT_MODEL_RUNNING: i32 = 107037;
pub const RT_MODEL_EXECUTE: i32 = 507011;
pub const INTERNAL_ERROR: i32 = 500000;
pub const FEATURE_UNSUPPORTED: i32 = 200006;
/// DV3: a channel description destroyed while its channel exists.
pub const RELATIVE_RESOURCE_NOT_CLEARED: i32 = 148051;
/// DV7: a JPEG JPEGD does not decode.
pub const UNSUPPORTED_JPEG: i32 = 148052;
pub const RT_PARAM_INVALID: i32 = 107000;
pub const RT_INVALID_DEVICEID: i32 = 107001;
pub const RT_CONTEXT_NULL: i32 = 107002;
pub const RT_STREAM_CONTEXT: i32 = 107003;
pub const RT_STREAM_SUBSCRIBE: i32 = 107011;
pub const RT_THREAD_SUBSCRIBE: i32 = 107012;
pub const RT_STREAM_NO_CB_REG: i32 = 107015;
pub const RT_WAIT_TIMEOUT: i32 = 107019;
pub const RT_TASK_TIMEOUT: i32 = 107020;
pub const RT_STREAM_ABORT: i32 = 107023;
pub const RT_FEATURE_NOT_SUPPORT: i32 = 207000;
pub const RT_MEMORY_ALLOCATION: i32 = 207001;
pub const RT_NO_STREAM_RESOURCE: i32 = 207008;
pub const RT_INTERNAL_ERROR: i32 = 507000;
pub const RT_CONTEXT_RELEASE_ERROR: i32 = 507007;
pub const RT_REPORT_TIMEOUT: i32 = 507012;
pub const RT_STREAM_SYNC_TIMEOUT: i32 = 507046;
pub const RT_EVENT_SYNC_TIMEOUT: i32 = 507047;
