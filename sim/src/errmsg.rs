//! `aclGetRecentErrMsg` (P4): the reason of the calling thread's last failed runtime call;
//! and its last runtime error code (P6, `aclrtGetLastError`).
//!
//! Cost on success paths: [`crate::calls::count`] stores the function's index in a
//! thread-local cell (one store) and `ffi` reads it back only when the call fails; the text
//! is built on failure only. A call site that knows more than its error code says gives the
//! reason with [`why`]; otherwise the text describes the code ([`describe`]).
//!
//! Layer: plain data (with `state` and `model`); imports `calls` (the function names, the
//! thread's current function) and `state::code`, nothing above.

use std::cell::{Cell, RefCell};
use std::ffi::{CString, c_char};

use crate::calls::CALL_NAMES;
use crate::state::code;

thread_local! {
    /// A specific reason given by the failing call site (code, text).
    static PENDING: RefCell<Option<(i32, String)>> = const { RefCell::new(None) };
    /// The messages not yet read, the latest first.
    static LAST: RefCell<Option<CString>> = const { RefCell::new(None) };
    /// What the thread's last `aclGetRecentErrMsg` returned, kept valid until its next one.
    static RETURNED: RefCell<Option<CString>> = const { RefCell::new(None) };
    /// P6: the latest runtime error code (107xxx, 207xxx, 507xxx) of a failed call on this
    /// thread, 0 after `aclrtGetLastError`.
    static LAST_RT_ERROR: Cell<i32> = const { Cell::new(0) };
}

/// P6: the thread's last runtime error code; `take` resets it to 0 (`aclrtGetLastError`).
pub fn last_runtime_error(take: bool) -> i32 {
    LAST_RT_ERROR
        .try_with(|c| if take { c.replace(0) } else { c.get() })
        .unwrap_or(0)
}

/// The calling thread entered runtime function `index` (a `CallId`).
#[inline(always)]
pub fn enter(index: usize) {
    crate::calls::enter(index);
}

/// The runtime function this thread entered last (a `CallId` index), for [`failed`].
#[inline(always)]
pub fn current() -> usize {
    crate::calls::current()
}

/// Gives the reason of a failure about to be returned: `return Err(why(code, "..."))`.
pub fn why(code: i32, reason: impl Into<String>) -> i32 {
    // `try_with` throughout: a call made from another thread-local's destructor at thread
    // exit finds these gone; it then keeps no message, and never panics.
    let reason = reason.into();
    let _ = PENDING.try_with(|p| *p.borrow_mut() = Some((code, reason)));
    code
}

/// Records the failure of runtime function `index` with `code` (called by `ffi`).
pub fn failed(index: usize, code: i32) {
    let pending = PENDING.try_with(|p| p.borrow_mut().take()).ok().flatten();
    // P6: runtime codes only; the ACL layer's own checks (100xxx, 200xxx, 500xxx) leave
    // the last runtime error alone.
    if matches!(code, 107_000..=107_999 | 207_000..=207_999 | 507_000..=507_999) {
        let _ = LAST_RT_ERROR.try_with(|c| c.set(code));
    }
    let Some(name) = CALL_NAMES.get(index) else {
        return;
    };
    let reason = match pending {
        Some((c, r)) if c == code => r,
        _ => describe(code).to_string(),
    };
    set(format!("{name}: {code}: {reason}"));
}

/// Sets the text directly (functions that return a pointer, e.g. `aclrtGetSocName`). As in
/// CANN, messages not yet read stack up, the latest on top.
pub fn set(text: String) {
    let text = text.replace('\0', " ");
    let _ = LAST.try_with(|l| {
        let mut last = l.borrow_mut();
        let stacked = match last.take() {
            Some(earlier) => format!("{text}\n{}", earlier.to_string_lossy()),
            None => text,
        };
        *last = Some(CString::new(stacked).unwrap_or_default());
    });
}

/// `aclGetRecentErrMsg`: takes the thread's messages ("obtains and clears", CANN), or NULL if
/// there are none. The text stays valid until the thread's next `aclGetRecentErrMsg`, as the
/// docs promise (only the pointer of the latest call is valid).
pub fn last() -> *const c_char {
    let taken = LAST.try_with(|l| l.borrow_mut().take()).ok().flatten();
    RETURNED
        .try_with(|r| {
            let mut returned = r.borrow_mut();
            *returned = taken;
            returned.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())
        })
        .unwrap_or(std::ptr::null())
}

/// What an error code means, for failures without a specific reason.
pub fn describe(code: i32) -> &'static str {
    match code {
        code::INVALID_PARAM => {
            "invalid parameter (a NULL pointer or handle, or a value out of range)"
        }
        code::UNINITIALIZE => "the runtime is not initialized (call aclInit first, P1)",
        code::REPEAT_INITIALIZE => "aclInit was already called (P2)",
        code::REPEAT_FINALIZE => "aclFinalize was already called (P2)",
        code::INTERNAL_ERROR => "internal error (a panic was caught at the C boundary)",
        code::FEATURE_UNSUPPORTED => "the feature is not supported (by the simulator)",
        code::RELATIVE_RESOURCE_NOT_CLEARED => {
            "a channel description was destroyed while its channel exists (DV3)"
        }
        code::UNSUPPORTED_JPEG => "the JPEG's coding is not supported by JPEGD (DV7)",
        code::INVALID_MODEL_ID => "no model is loaded with this id",
        code::PARSE_MODEL => "the model file could not be parsed",
        code::READ_MODEL_FAILURE => "the model file could not be read",
        code::MODEL_SIZE_INVALID => "invalid model size",
        code::MODEL_MISSING_ATTR => "the model lacks an input or an output",
        code::MODEL_INPUT_NOT_MATCH => "the input dataset does not match the model's inputs",
        code::MODEL_OUTPUT_NOT_MATCH => "the output dataset does not match the model's outputs",
        code::MODEL_NOT_DYNAMIC => "the model has no dynamic batch or size (MD11)",
        code::RT_MODEL_CONTEXT => "the model was loaded in another context (MD1)",
        code::RT_MODEL_RUNNING => "an execution of the model is pending (MD7)",
        code::RT_MODEL_EXECUTE => "the model execution failed",
        code::RT_PARAM_INVALID => {
            "invalid runtime parameter (an unknown, destroyed or garbage handle, or a call the protocol forbids here)"
        }
        code::RT_INVALID_DEVICEID => "invalid device id (D1)",
        code::RT_CONTEXT_NULL => {
            "no current context on this thread (aclrtSetDevice or aclrtCreateContext first, D2), or the default context"
        }
        code::RT_STREAM_CONTEXT => "the stream is not in the calling thread's current context (D6)",
        code::RT_STREAM_SUBSCRIBE => "the stream is already subscribed, or not subscribed (C2, C9)",
        code::RT_THREAD_SUBSCRIBE => {
            "the thread is not subscribed, or subscribed on another device (C3, C6, C9)"
        }
        code::RT_STREAM_NO_CB_REG => "no thread is subscribed to the stream (C5)",
        code::RT_WAIT_TIMEOUT => "a stream wait timed out (P3)",
        code::RT_TASK_TIMEOUT => "a task exceeded the operator execution timeout (P5)",
        code::RT_FEATURE_NOT_SUPPORT => "feature not supported (E7)",
        code::RT_MEMORY_ALLOCATION => "memory allocation failed",
        code::RT_NO_STREAM_RESOURCE => "no stream resource",
        code::RT_INTERNAL_ERROR => {
            "runtime internal error (a deadlock diagnosed, or a failed task)"
        }
        code::RT_CONTEXT_RELEASE_ERROR => "the device is not set (D5, D7)",
        code::RT_REPORT_TIMEOUT => "aclrtProcessReport timed out (C6)",
        code::RT_STREAM_SYNC_TIMEOUT => "stream synchronization timed out (S3)",
        code::RT_EVENT_SYNC_TIMEOUT => "event synchronization timed out (E6)",
        _ => "error",
    }
}
