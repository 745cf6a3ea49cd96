//! The thin result layer: one method on [`Api`] per C function, returning [`Result`].
//! It imports only [`sys`](crate::sys), the layer below: its errors ([`CallError`], with the
//! runtime's codes from `sys`) are its own, and the typed API converts them.
//!
//! Each method does exactly one runtime call and turns its `aclError` into
//! [`CallError::Failed`] naming the call. Every method that creates, changes or releases
//! runtime state is `unsafe`: besides handles and pointers the runtime cannot check, such a
//! call can break what the typed API relies on (P1, P2, D3, D6, E1-E9, C8, M1, M2), and the
//! raw layer is reachable without a live [`Acl`](crate::Acl) through
//! [`load_global`](crate::sys::loader::load_global). Only queries are safe: calls the
//! runtime allows from any thread (a host callback's, a host function's, one without a
//! current context) and that change nothing the typed API relies on. `docs/protocol.md`
//! ("C8 and the raw layer") lists each safe function with its source, and
//! `tests/callbacks/raw_query_table.rs` fails when one is added without a row there. One of them,
//! [`model_query_size`](Api::model_query_size), reads a whole model file into memory,
//! which C8 keeps out of callbacks: it returns [`CallError::InsideCallback`] on a thread that
//! runs a callback, host function or simulated kernel of the typed API, before reaching the
//! runtime. Each `# Safety` section states the contract; [the common
//! part](#safety-of-the-raw-layer) is below. The typestate API lowers onto these methods,
//! and its types are what make those contracts hold.
//!
//! # Safety of the raw layer
//!
//! Every `unsafe` method requires, beyond its own section: the call does not invalidate or
//! contradict a handle of the typed API (it does not initialise or finalize the runtime
//! behind a live [`Acl`](crate::Acl), reset a device, or destroy, re-record, wait on or
//! reset a typed handle's object), and it is not made from a host callback or a simulated
//! kernel (C8). Objects it creates are the caller's to release (D3).
//!
//! ```no_run
//! use ascend_typestate::sys::loader::{load_global, LoadOptions};
//! let api = load_global(&LoadOptions::default())?;
//! // SAFETY: no `Acl` lives in this program: the raw calls own the runtime; `stream` is
//! // created in this thread's current context and destroyed once.
//! unsafe {
//!     api.init(None)?;
//!     api.set_device(0)?;
//!     let stream = api.create_stream()?;
//!     api.synchronize_stream(stream)?;
//!     api.destroy_stream(stream)?;
//! }
//! // SAFETY: nothing created on the device or in the runtime is used afterwards.
//! unsafe {
//!     api.reset_device(0)?;
//!     api.finalize()?;
//! }
//! # Ok::<(), ascend_typestate::Error>(())
//! ```

use std::ffi::{CStr, c_void};
use std::ptr;

use crate::sys::bindings::{
    ACL_ERROR_FAILURE, ACL_PKG_VERSION_MAX_SIZE, ACL_STREAM_STATUS_COMPLETE, aclDeviceInfo,
    aclrtCallbackBlockType, aclrtEventRecordedStatus, aclrtMemAttr, aclrtMemMallocPolicy,
    aclrtMemcpyKind, aclrtRunMode, aclrtStreamStatus,
};
use crate::sys::bindings::{
    aclError, aclrtCallback, aclrtContext, aclrtEvent, aclrtHostFunc, aclrtStream,
};
use crate::sys::codes::AclError;
use crate::sys::loader::Api;

/// What a call of the raw layer can fail with: the runtime's code, or a function the loaded
/// runtime lacks. The typed API's [`Error`](crate::Error) has a variant for each
/// ([`Error::Runtime`](crate::Error::Runtime), [`Error::Unsupported`](crate::Error::Unsupported)),
/// and `?` converts.
#[derive(Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The function returned a non-zero code. The runtime's explanation, read right after
    /// the failure, is [`CallError::message`] (kept beside the error, on the failing thread,
    /// so that this stays small and `Copy`: the usual path's cost).
    #[error("{call} failed: {code}")]
    Failed {
        /// The C function that failed.
        call: &'static str,
        /// What it returned.
        code: AclError,
        /// Which failure of its thread this is: what ties [`CallError::message`] to this
        /// error and no other.
        failure: Failure,
    },
    /// The loaded runtime lacks this optional (newer) function.
    #[error("the loaded runtime does not provide `{symbol}` (a newer AscendCL function)")]
    Unsupported {
        /// The missing symbol.
        symbol: &'static str,
    },
    /// A safe call that is not a query, refused on a thread that runs a host callback, host
    /// function or simulated kernel of the typed API (C8) before it reached the runtime.
    /// Converts to [`Error::InsideCallback`](crate::Error::InsideCallback).
    #[error("`{call}` is not a query: refused inside a host callback (C8)")]
    InsideCallback {
        /// The C function that was not called.
        call: &'static str,
    },
}

impl std::fmt::Debug for CallError {
    /// The fields, and for the variants whose Display form says what happened, that text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Failed {
                call,
                code,
                failure,
            } => f
                .debug_struct("Failed")
                .field("call", call)
                .field("code", code)
                .field("failure", failure)
                .finish(),
            CallError::Unsupported { symbol } => f
                .debug_struct("Unsupported")
                .field("symbol", symbol)
                .field("hint", &self.to_string())
                .finish(),
            CallError::InsideCallback { call } => f
                .debug_struct("InsideCallback")
                .field("call", call)
                .field("hint", &self.to_string())
                .finish(),
        }
    }
}

/// Which failure of its thread a [`CallError::Failed`] is (a per-thread count; 0 for an
/// error the crate built itself, which has no message).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Failure(u32);

thread_local! {
    /// This thread's failures so far, and the runtime's explanation of the last one.
    static RECENT: std::cell::RefCell<(u32, Option<RuntimeMessage>)> =
        const { std::cell::RefCell::new((0, None)) };
}

impl CallError {
    /// The runtime's explanation of this failure (`aclGetRecentErrMsg`, which the raw layer
    /// reads at once on the failing thread): on that thread, until its next failed call;
    /// `None` elsewhere, after (never another failure's), or when the runtime kept none. Converting the error into
    /// [`Error`](crate::Error) (`?`) moves it into [`Error::Runtime`](crate::Error::Runtime).
    pub fn message(&self) -> Option<RuntimeMessage> {
        let CallError::Failed { failure, .. } = *self else {
            return None;
        };
        // `try_with`: a thread-local destroyed at thread exit (a handle's `Drop` running from
        // another thread-local's destructor) is "no message", never a panic.
        RECENT
            .try_with(|recent| match &*recent.borrow() {
                (last, message) if failure.0 != 0 && *last == failure.0 => message.clone(),
                _ => None,
            })
            .ok()
            .flatten()
    }

    /// [`message`](Self::message), taken.
    pub(crate) fn take_message(&self) -> Option<RuntimeMessage> {
        let CallError::Failed { failure, .. } = *self else {
            return None;
        };
        RECENT
            .try_with(|recent| {
                let mut recent = recent.borrow_mut();
                match &mut *recent {
                    (last, message) if failure.0 != 0 && *last == failure.0 => message.take(),
                    _ => None,
                }
            })
            .ok()
            .flatten()
    }

    /// The error of a failed call: the runtime's explanation, read now, is kept beside it.
    pub(crate) fn failed(api: &Api, call: &'static str, code: AclError) -> CallError {
        let message = RuntimeMessage::recent(api, code);
        let failure = RECENT
            .try_with(|recent| {
                let mut recent = recent.borrow_mut();
                // Never 0 (the crate's own errors): wraps past it.
                recent.0 = recent.0.wrapping_add(1).max(1);
                recent.1 = message;
                recent.0
            })
            .unwrap_or(0);
        CallError::Failed {
            call,
            code,
            failure: Failure(failure),
        }
    }

    /// The runtime code, if the function ran and failed.
    pub fn code(&self) -> Option<AclError> {
        match self {
            CallError::Failed { code, .. } => Some(*code),
            CallError::Unsupported { .. } | CallError::InsideCallback { .. } => None,
        }
    }
}

/// The result of a raw call.
pub type Result<T, E = CallError> = std::result::Result<T, E>;

/// The runtime's own explanation of a failed call (`aclGetRecentErrMsg`), which the raw layer
/// reads on the failing thread right after the failure (the runtime keeps it only until that
/// thread's next call) and attaches to the error, with the thread's last runtime error
/// (`aclrtGetLastError`, P6) when it differs from the code the call returned (an ACL-layer
/// code such as 100000 over the runtime's own). One pointer wide.
#[derive(Clone, PartialEq, Eq)]
pub struct RuntimeMessage(Box<MessageParts>);

#[derive(Clone, PartialEq, Eq)]
struct MessageParts {
    text: Box<str>,
    last_error: Option<AclError>,
}

impl RuntimeMessage {
    /// The calling thread's message (`aclGetRecentErrMsg`) and last runtime error
    /// (`aclrtGetLastError`, which resets it), both taken, after a call returned `code`;
    /// `None` if the runtime has neither (or, for the last error, lacks the function).
    pub(crate) fn recent(api: &Api, code: AclError) -> Option<RuntimeMessage> {
        let text = api
            .recent_error_message()
            .filter(|text| !text.trim().is_empty());
        // SAFETY: an integer argument; a query of the calling thread's state (P6), allowed
        // anywhere, inside callbacks too.
        let last_error = unsafe { api.get_last_error(crate::sys::bindings::ACL_RT_THREAD_LEVEL) }
            .ok()
            // A runtime code (107xxx, 207xxx, 507xxx): anything else is the function's own
            // failure (e.g. 100001 before `aclInit`), not a last error.
            .filter(|&last| matches!(last / 1000, 107 | 207 | 507) && last != code.code())
            .map(AclError::from_code);
        if text.is_none() && last_error.is_none() {
            return None;
        }
        Some(RuntimeMessage(Box::new(MessageParts {
            text: text.unwrap_or_default().into_boxed_str(),
            last_error,
        })))
    }

    /// The text (empty if the runtime kept only a last error).
    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    /// The thread's last runtime error (`aclrtGetLastError`, P6) when the failed call
    /// returned another code: the runtime's own reason behind an ACL-layer code.
    pub fn last_runtime_error(&self) -> Option<AclError> {
        self.0.last_error
    }

    /// `"; the runtime says: <text>"` and `"; its last runtime error: <code>"`, or nothing:
    /// how errors display an optional message.
    pub(crate) fn suffix(message: &Option<RuntimeMessage>) -> String {
        let Some(message) = message else {
            return String::new();
        };
        let mut suffix = String::new();
        if !message.as_str().is_empty() {
            suffix.push_str("; the runtime says: ");
            suffix.push_str(message.as_str());
        }
        if let Some(last) = message.last_runtime_error() {
            suffix.push_str(&format!("; its last runtime error: {last}"));
        }
        suffix
    }
}

impl std::fmt::Display for RuntimeMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())?;
        match self.last_runtime_error() {
            Some(last) => write!(f, " (last runtime error: {last})"),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for RuntimeMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.last_runtime_error() {
            None => std::fmt::Debug::fmt(self.as_str(), f),
            Some(last) => f
                .debug_struct("RuntimeMessage")
                .field("text", &self.as_str())
                .field("last_runtime_error", &last)
                .finish(),
        }
    }
}

/// Maps a raw return value of `call` to a `Result`.
#[inline(always)]
fn check(api: &Api, call: &'static str, code: aclError) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(runtime_error(api, call, code))
    }
}

/// The error of a failed call, built out of line: a call site is then the C call, a test
/// and a branch. Reads the runtime's explanation at once (the thread's next call replaces it).
#[cold]
#[inline(never)]
fn runtime_error(api: &Api, call: &'static str, code: aclError) -> CallError {
    // A synchronisation may report a task's failure (P3b): counted for the scopes (DV6).
    if call.starts_with("aclrtSynchronize") {
        failures::note_failed_synchronisation(call);
    }
    CallError::failed(api, call, AclError::from_code(code))
}

/// [`CallError::InsideCallback`] for `call` when the calling thread runs a host callback, host
/// function or simulated kernel of the typed API (C8), for the safe calls that are not
/// queries.
#[inline(always)]
fn refuse_inside_callback(call: &'static str) -> Result<()> {
    if current::get() == current::INSIDE_CALLBACK {
        Err(CallError::InsideCallback { call })
    } else {
        Ok(())
    }
}

/// Calls a required function of the table: `call!(self, aclrtFoo(a, b))`.
macro_rules! call {
    ($api:expr, $name:ident($($arg:expr),* $(,)?)) => {
        check($api, stringify!($name), ($api.table.$name)($($arg),*))
    };
}

/// An optional function of the table, or [`CallError::Unsupported`] when the runtime lacks it.
macro_rules! optional {
    ($api:expr, $name:ident) => {
        match $api.table.$name {
            Some(function) => function,
            None => {
                return Err(CallError::Unsupported {
                    symbol: stringify!($name),
                })
            }
        }
    };
}

/// Copies a NUL-terminated string the runtime returned; `None` for NULL.
///
/// # Safety
/// `text` is NULL or points to a NUL-terminated string that stays valid during the call.
unsafe fn copy_c_string(text: *const std::ffi::c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: the caller's contract: non-NULL and NUL-terminated.
    let text = unsafe { CStr::from_ptr(text) };
    Some(text.to_string_lossy().into_owned())
}

/// Calls an optional function, or returns [`CallError::Unsupported`] when the runtime lacks it.
macro_rules! call_optional {
    ($api:expr, $name:ident($($arg:expr),* $(,)?)) => {
        match $api.table.$name {
            Some(function) => check($api, stringify!($name), function($($arg),*)),
            None => Err(CallError::Unsupported { symbol: stringify!($name) }),
        }
    };
}

mod callback;
pub(crate) mod current;
mod device;
mod diagnostics;
pub mod dvpp;
mod event;
pub(crate) mod failures;
mod memory;
mod model;
mod process;
mod stream;
mod stream_config;
