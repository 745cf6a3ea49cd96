//! The thin result layer: one method on [`Api`] per C function, returning [`Result`].
//!
//! Each method does exactly one runtime call and turns its `aclError` into
//! [`Error::Runtime`] naming the call. Every method that creates, changes or releases
//! runtime state is `unsafe`: besides handles and pointers the runtime cannot check, such a
//! call can break what the typed API relies on (P1, P2, D3, D6, E1-E9, C8, M1, M2), and the
//! raw layer is reachable without a live [`Acl`](crate::Acl) through
//! [`load_global`](crate::sys::loader::load_global). Only pure queries are safe. Each
//! `# Safety` section states the contract; [the common part](#safety-of-the-raw-layer) is
//! below. The typestate API lowers onto these methods, and its types are what make those
//! contracts hold.
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

use crate::error::{AclError, Error, Result};
use crate::sys::bindings::{
    ACL_ERROR_FAILURE, ACL_PKG_VERSION_MAX_SIZE, ACL_STREAM_STATUS_COMPLETE, aclDeviceInfo,
    aclrtCallbackBlockType, aclrtEventRecordedStatus, aclrtMemAttr, aclrtMemMallocPolicy,
    aclrtMemcpyKind, aclrtRunMode, aclrtStreamStatus,
};
use crate::sys::loader::Api;
use crate::sys::{aclError, aclrtCallback, aclrtContext, aclrtEvent, aclrtHostFunc, aclrtStream};

/// Maps a raw return value of `call` to a `Result`.
#[inline(always)]
fn check(call: &'static str, code: aclError) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(runtime_error(call, code))
    }
}

/// The error of a failed call, built out of line: a call site is then the C call, a test
/// and a branch.
#[cold]
#[inline(never)]
fn runtime_error(call: &'static str, code: aclError) -> Error {
    Error::Runtime {
        call,
        code: AclError::from_code(code),
    }
}

/// Calls a required function of the table: `call!(self, aclrtFoo(a, b))`.
macro_rules! call {
    ($api:expr, $name:ident($($arg:expr),* $(,)?)) => {
        check(stringify!($name), ($api.table.$name)($($arg),*))
    };
}

/// An optional function of the table, or [`Error::Unsupported`] when the runtime lacks it.
macro_rules! optional {
    ($api:expr, $name:ident) => {
        match $api.table.$name {
            Some(function) => function,
            None => {
                return Err(Error::Unsupported {
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

/// Calls an optional function, or returns [`Error::Unsupported`] when the runtime lacks it.
macro_rules! call_optional {
    ($api:expr, $name:ident($($arg:expr),* $(,)?)) => {
        match $api.table.$name {
            Some(function) => check(stringify!($name), function($($arg),*)),
            None => Err(Error::Unsupported { symbol: stringify!($name) }),
        }
    };
}

impl Api {
    // ---- Process (P1-P3) ------------------------------------------------------------------

    /// `aclInit(configPath)` (P1, P2). `None` passes a null path (no configuration file).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer): no [`Acl`](crate::Acl) is alive or
    /// will be initialised while the runtime this call initialises is in use.
    #[inline]
    pub unsafe fn init(&self, config: Option<&CStr>) -> Result<()> {
        let path = config.map_or(ptr::null(), CStr::as_ptr);
        // SAFETY: `path` is null or a NUL-terminated string that outlives the call.
        unsafe { call!(self, aclInit(path)) }
    }

    /// `aclFinalize()` (P2). Every handle obtained before becomes invalid.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: no handle created before (by this layer or by the typed API: an [`Acl`](crate::Acl)
    /// and everything borrowed from it) is used afterwards.
    #[inline]
    pub unsafe fn finalize(&self) -> Result<()> {
        // SAFETY: takes no argument; the caller's contract covers the handles it invalidates.
        unsafe { call!(self, aclFinalize()) }
    }

    /// `aclrtSetOpWaitTimeout(seconds)` (P3): `0` means never time out.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer). A stream wait issued afterwards
    /// may end without its event (a timeout), so no ordering obtained from such a wait may be
    /// relied on, including the typed API's: its events, scopes and joins would then let
    /// tasks overtake each other (stale event flags, reads of memory still being written).
    /// `seconds` must be `0` while any typed handle is used.
    #[inline]
    pub unsafe fn set_op_wait_timeout(&self, seconds: u32) -> Result<()> {
        // SAFETY: a plain integer argument, validated by the runtime.
        unsafe { call!(self, aclrtSetOpWaitTimeout(seconds)) }
    }

    /// `aclrtSetOpExecuteTimeOutV2(us, &actual)` (P5): tasks issued later fail with 107020
    /// once they run longer; returns the limit in effect (rounded up to the interval).
    /// `0` removes the limit. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn set_op_execute_timeout_us(&self, timeout_us: u64) -> Result<u64> {
        let mut actual = 0;
        let function = optional!(self, aclrtSetOpExecuteTimeOutV2);
        // SAFETY: an integer argument and a valid, writable local.
        check("aclrtSetOpExecuteTimeOutV2", unsafe {
            function(timeout_us, &mut actual)
        })?;
        Ok(actual)
    }

    /// `aclrtSetOpExecuteTimeOut(seconds)` (P5), the older interface. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn set_op_execute_timeout(&self, seconds: u32) -> Result<()> {
        // SAFETY: an integer argument.
        unsafe { call_optional!(self, aclrtSetOpExecuteTimeOut(seconds)) }
    }

    /// `aclrtGetOpExecuteTimeout(&ms)` (P5): the operator execution limit in effect, in ms.
    /// Optional symbol.
    #[inline]
    pub fn get_op_execute_timeout_ms(&self) -> Result<u32> {
        let mut ms = 0;
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call_optional!(self, aclrtGetOpExecuteTimeout(&mut ms))? };
        Ok(ms)
    }

    /// `aclrtGetOpTimeOutInterval(&us)` (P5): the granularity of operator timeouts, in µs.
    /// Optional symbol.
    #[inline]
    pub fn get_op_timeout_interval_us(&self) -> Result<u64> {
        let mut us = 0;
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call_optional!(self, aclrtGetOpTimeOutInterval(&mut us))? };
        Ok(us)
    }

    /// `aclsysGetVersionStr(pkg, buf)` (P4): the version of a CANN package, e.g. `c"runtime"`.
    /// Optional symbol.
    pub fn get_version_str(&self, package: &CStr) -> Result<String> {
        let function = optional!(self, aclsysGetVersionStr);
        // The runtime takes `char *`: it gets a private copy, never the caller's string.
        let mut name = package.to_bytes_with_nul().to_vec();
        let mut text = [0 as std::ffi::c_char; ACL_PKG_VERSION_MAX_SIZE as usize + 1];
        // SAFETY: `name` is NUL-terminated and writable; `text` holds the
        // ACL_PKG_VERSION_MAX_SIZE bytes the function may write, plus a NUL of our own.
        check("aclsysGetVersionStr", unsafe {
            function(name.as_mut_ptr().cast(), text.as_mut_ptr())
        })?;
        // SAFETY: the last byte is never written, so the text is NUL-terminated.
        Ok(unsafe { copy_c_string(text.as_ptr()) }.unwrap_or_default())
    }

    /// `aclsysGetVersionNum(pkg, &n)` (P4): the version of a CANN package as a number.
    /// Optional symbol.
    pub fn get_version_num(&self, package: &CStr) -> Result<i32> {
        let function = optional!(self, aclsysGetVersionNum);
        let mut name = package.to_bytes_with_nul().to_vec();
        let mut number = 0;
        // SAFETY: `name` is NUL-terminated and writable; the out-pointer is a valid local.
        check("aclsysGetVersionNum", unsafe {
            function(name.as_mut_ptr().cast(), &mut number)
        })?;
        Ok(number)
    }

    /// `aclrtGetVersion(&major, &minor, &patch)` (P4): the interface version. Deprecated by
    /// CANN in favour of [`get_version_str`](Self::get_version_str). Optional symbol.
    #[inline]
    pub fn get_version(&self) -> Result<(i32, i32, i32)> {
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        // SAFETY: the out-pointers are valid, writable locals.
        unsafe { call_optional!(self, aclrtGetVersion(&mut major, &mut minor, &mut patch))? };
        Ok((major, minor, patch))
    }

    /// `aclGetRecentErrMsg()` (P4): the reason of this thread's last failed call, if the
    /// runtime kept one. `None` too when the runtime lacks the function.
    pub fn recent_error_message(&self) -> Option<String> {
        let function = self.table.aclGetRecentErrMsg?;
        // SAFETY: no argument; the text stays valid until this thread's next runtime call,
        // and it is copied before any.
        unsafe { copy_c_string(function()) }
    }

    // ---- Device and context (D1-D6) -------------------------------------------------------

    /// `aclrtSetDevice(id)` (D1). It makes the device's default context current.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer); each set is paired with a
    /// [`reset_device`](Self::reset_device) (D1).
    #[inline]
    pub unsafe fn set_device(&self, device: i32) -> Result<()> {
        // It makes the device's default context current: the typed API must rebind (D6).
        crate::context::forget_current();
        // SAFETY: a plain integer argument, validated by the runtime (107001).
        unsafe { call!(self, aclrtSetDevice(device)) }
    }

    /// `aclrtResetDevice(id)` (D1, D3, D5).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: when this releases the device's last reference, no handle created on the device (by
    /// this layer or by the typed API) is used afterwards.
    #[inline]
    pub unsafe fn reset_device(&self, device: i32) -> Result<()> {
        crate::context::forget_current();
        // SAFETY: an integer argument validated by the runtime (507007); the caller's
        // contract covers the handles it invalidates.
        unsafe { call!(self, aclrtResetDevice(device)) }
    }

    /// `aclrtGetDevice(&id)`: the device of the calling thread's current context.
    #[inline]
    pub fn get_device(&self) -> Result<i32> {
        let mut device = 0;
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtGetDevice(&mut device))? };
        Ok(device)
    }

    /// `aclrtGetDeviceCount(&n)`.
    #[inline]
    pub fn get_device_count(&self) -> Result<u32> {
        let mut count = 0;
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtGetDeviceCount(&mut count))? };
        Ok(count)
    }

    /// `aclrtGetRunMode(&mode)`: `ACL_DEVICE` (0) on the board, `ACL_HOST` (1) with a host.
    #[inline]
    pub fn get_run_mode(&self) -> Result<aclrtRunMode> {
        let mut mode = 0;
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtGetRunMode(&mut mode))? };
        Ok(mode)
    }

    /// `aclrtResetDeviceForce(id)` (D7): releases every `aclrtSetDevice` reference of the
    /// device at once. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer): nothing of the device is used
    /// afterwards, by this code or any other (every reference is gone).
    #[inline]
    pub unsafe fn reset_device_force(&self, device: i32) -> Result<()> {
        crate::context::forget_current();
        // SAFETY: an integer argument validated by the runtime; the caller's contract covers
        // the handles it invalidates.
        unsafe { call_optional!(self, aclrtResetDeviceForce(device)) }
    }

    /// `aclrtGetSocName()` (D8): e.g. "Ascend310B4". Optional symbol; a NULL answer is
    /// [`Error::Runtime`] with `ACL_ERROR_FAILURE`.
    pub fn get_soc_name(&self) -> Result<String> {
        let function = optional!(self, aclrtGetSocName);
        // SAFETY: no argument; the runtime returns NULL or a NUL-terminated string it keeps.
        unsafe { copy_c_string(function()) }
            .ok_or_else(|| runtime_error("aclrtGetSocName", ACL_ERROR_FAILURE as aclError))
    }

    /// `aclrtGetMemInfo(attr, &free, &total)` (D8): bytes free and in total on the current
    /// context's device. Optional symbol.
    #[inline]
    pub fn get_mem_info(&self, attr: aclrtMemAttr) -> Result<(usize, usize)> {
        let (mut free, mut total) = (0, 0);
        // SAFETY: an enum value validated by the runtime; the out-pointers are valid locals.
        unsafe { call_optional!(self, aclrtGetMemInfo(attr, &mut free, &mut total))? };
        Ok((free, total))
    }

    /// `aclGetDeviceCapability(id, info, &value)` (D8). Optional symbol.
    #[inline]
    pub fn get_device_capability(&self, device: u32, info: aclDeviceInfo) -> Result<i64> {
        let mut value = 0;
        // SAFETY: values validated by the runtime; the out-pointer is a valid local.
        unsafe { call_optional!(self, aclGetDeviceCapability(device, info, &mut value))? };
        Ok(value)
    }

    /// `aclrtSynchronizeDevice()` (D4): waits for all work on the current device.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer) (from a callback it deadlocks).
    #[inline]
    pub unsafe fn synchronize_device(&self) -> Result<()> {
        // SAFETY: takes no argument.
        unsafe { call!(self, aclrtSynchronizeDevice()) }
    }

    /// `aclrtSynchronizeDeviceWithTimeout(ms)` (D4; `-1` forever, `> 0` ms). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn synchronize_device_with_timeout(&self, timeout_ms: i32) -> Result<()> {
        // SAFETY: a plain integer argument, validated by the runtime.
        unsafe { call_optional!(self, aclrtSynchronizeDeviceWithTimeout(timeout_ms)) }
    }

    /// `aclrtCreateContext(&ctx, id)` (D2): creates a context and makes it current.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn create_context(&self, device: i32) -> Result<aclrtContext> {
        // The new context becomes current: the typed API must rebind (D6).
        crate::context::forget_current();
        let mut context = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtCreateContext(&mut context, device))? };
        Ok(context)
    }

    /// `aclrtDestroyContext(ctx)` (D3, D5).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `context` came from [`create_context`](Self::create_context), is not destroyed yet,
    /// and nothing created in it is used afterwards.
    #[inline]
    pub unsafe fn destroy_context(&self, context: aclrtContext) -> Result<()> {
        crate::context::forget_current();
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtDestroyContext(context)) }
    }

    /// `aclrtSetCurrentContext(ctx)` (D6).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `context` is a live context handle.
    #[inline]
    pub unsafe fn set_current_context(&self, context: aclrtContext) -> Result<()> {
        crate::context::forget_current();
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtSetCurrentContext(context)) }
    }

    /// `aclrtGetCurrentContext(&ctx)` (D6).
    #[inline]
    pub fn get_current_context(&self) -> Result<aclrtContext> {
        let mut context = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtGetCurrentContext(&mut context))? };
        Ok(context)
    }

    // ---- Stream (S1-S4) -------------------------------------------------------------------

    /// `aclrtCreateStream(&s)`: a stream in the calling thread's current context (D2).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn create_stream(&self) -> Result<aclrtStream> {
        let mut stream = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtCreateStream(&mut stream))? };
        Ok(stream)
    }

    /// `aclrtDestroyStream(s)` (S4).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `stream` is live, its context is current, and it is not used afterwards.
    #[inline]
    pub unsafe fn destroy_stream(&self, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtDestroyStream(stream)) }
    }

    /// `aclrtSynchronizeStream(s)` (S2).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `stream` is a live stream handle (or null: the default stream).
    #[inline]
    pub unsafe fn synchronize_stream(&self, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtSynchronizeStream(stream)) }
    }

    /// `aclrtSynchronizeStreamWithTimeout(s, t)` (S3: `-1` forever, `> 0` ms).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and as [`synchronize_stream`](Self::synchronize_stream).
    #[inline]
    pub unsafe fn synchronize_stream_with_timeout(
        &self,
        stream: aclrtStream,
        timeout_ms: i32,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtSynchronizeStreamWithTimeout(stream, timeout_ms)) }
    }

    /// `aclrtStreamWaitEvent(stream, event)` (E1, E3; stream first).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: both handles are live; `stream` is in the current context.
    #[inline]
    pub unsafe fn stream_wait_event(&self, stream: aclrtStream, event: aclrtEvent) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtStreamWaitEvent(stream, event)) }
    }

    /// `aclrtCreateStreamWithConfig(&s, priority, flags)` (S7). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn create_stream_with_config(
        &self,
        priority: u32,
        flags: u32,
    ) -> Result<aclrtStream> {
        let mut stream = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local; the integers are validated by
        // the runtime.
        unsafe {
            call_optional!(
                self,
                aclrtCreateStreamWithConfig(&mut stream, priority, flags)
            )?
        };
        Ok(stream)
    }

    /// `aclrtDestroyStreamForce(s)` (S8): destroys without waiting; pending tasks are dropped.
    /// Optional symbol.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `stream` is live, in the
    /// current context, and nothing waits for a task of it (a dropped record never completes
    /// its event).
    #[inline]
    pub unsafe fn destroy_stream_force(&self, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtDestroyStreamForce(stream)) }
    }

    /// `aclrtStreamQuery(s, &status)` (S5): whether every task issued on `stream` is done.
    /// Optional symbol.
    ///
    /// # Safety
    /// `stream` is live (the runtime may not check a stale handle).
    #[inline]
    pub unsafe fn stream_query(&self, stream: aclrtStream) -> Result<bool> {
        let mut status: aclrtStreamStatus = 0;
        // SAFETY: the caller's contract; the out-pointer is a valid local.
        unsafe { call_optional!(self, aclrtStreamQuery(stream, &mut status))? };
        Ok(status == ACL_STREAM_STATUS_COMPLETE)
    }

    /// `aclrtSetStreamFailureMode(s, mode)` (S6). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `stream` is live; stop mode
    /// makes the first failed task drop every later task of the context.
    #[inline]
    pub unsafe fn set_stream_failure_mode(&self, stream: aclrtStream, mode: u64) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtSetStreamFailureMode(stream, mode)) }
    }

    // ---- Event (E1-E9) --------------------------------------------------------------------

    /// `aclrtCreateEvent(&e)`.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn create_event(&self) -> Result<aclrtEvent> {
        let mut event = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtCreateEvent(&mut event))? };
        Ok(event)
    }

    /// `aclrtCreateEventWithFlag(&e, flags)` (E7).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn create_event_with_flag(&self, flags: u32) -> Result<aclrtEvent> {
        let mut event = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtCreateEventWithFlag(&mut event, flags))? };
        Ok(event)
    }

    /// `aclrtDestroyEvent(e)` (E9).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `event` is live, no issued task still refers to it, and it is not used afterwards.
    #[inline]
    pub unsafe fn destroy_event(&self, event: aclrtEvent) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtDestroyEvent(event)) }
    }

    /// `aclrtRecordEvent(event, stream)` (E2; event first).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: both handles are live; `stream` is in the current context.
    #[inline]
    pub unsafe fn record_event(&self, event: aclrtEvent, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtRecordEvent(event, stream)) }
    }

    /// `aclrtResetEvent(event, stream)` (E4, E5; event first, `stream` the waiting stream).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: both handles are live; `stream` is in the current context.
    #[inline]
    pub unsafe fn reset_event(&self, event: aclrtEvent, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtResetEvent(event, stream)) }
    }

    /// `aclrtQueryEventStatus(e, &status)`: `true` when the event is complete.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `event` is live.
    #[inline]
    pub unsafe fn query_event_status(&self, event: aclrtEvent) -> Result<bool> {
        let mut status: aclrtEventRecordedStatus = 0;
        // SAFETY: the caller's contract; the out-pointer is a valid local.
        unsafe { call!(self, aclrtQueryEventStatus(event, &mut status))? };
        Ok(status == crate::sys::bindings::ACL_EVENT_RECORDED_STATUS_COMPLETE)
    }

    /// `aclrtSynchronizeEvent(e)` (E2).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `event` is live.
    #[inline]
    pub unsafe fn synchronize_event(&self, event: aclrtEvent) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtSynchronizeEvent(event)) }
    }

    /// `aclrtSynchronizeEventWithTimeout(e, t)` (E6). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `event` is live.
    #[inline]
    pub unsafe fn synchronize_event_with_timeout(
        &self,
        event: aclrtEvent,
        timeout_ms: i32,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtSynchronizeEventWithTimeout(event, timeout_ms)) }
    }

    /// `aclrtEventElapsedTime(&ms, start, end)` (E8; output first): milliseconds.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: both events are live.
    #[inline]
    pub unsafe fn event_elapsed_time(&self, start: aclrtEvent, end: aclrtEvent) -> Result<f32> {
        let mut ms = 0.0f32;
        // SAFETY: the caller's contract; the out-pointer is a valid local.
        unsafe { call!(self, aclrtEventElapsedTime(&mut ms, start, end))? };
        Ok(ms)
    }

    // ---- Callback (C1-C9) -----------------------------------------------------------------

    /// `aclrtSubscribeReport(threadId, stream)` (C1-C3, C7).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `stream` is live; `thread_id` is the `pthread_self()` of a thread that calls
    /// [`process_report`](Self::process_report) until it unsubscribes.
    #[inline]
    pub unsafe fn subscribe_report(&self, thread_id: u64, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtSubscribeReport(thread_id, stream)) }
    }

    /// `aclrtLaunchCallback(fn, data, blockType, stream)` (C4, C5).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `stream` is live; `callback` may be called once with `user_data` on the subscribed
    /// thread, at any later time, and `user_data` stays valid until then.
    #[inline]
    pub unsafe fn launch_callback(
        &self,
        callback: aclrtCallback,
        user_data: *mut c_void,
        block_type: aclrtCallbackBlockType,
        stream: aclrtStream,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe {
            call!(
                self,
                aclrtLaunchCallback(callback, user_data, block_type, stream)
            )
        }
    }

    /// `aclrtProcessReport(t)` (C6: `-1` forever, `> 0` ms): runs one pending callback.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer); the callbacks it runs were
    /// launched under [`launch_callback`](Self::launch_callback)'s contract.
    #[inline]
    pub unsafe fn process_report(&self, timeout_ms: i32) -> Result<()> {
        // SAFETY: an integer argument; the callbacks it runs were launched under
        // `launch_callback`'s contract.
        unsafe { call!(self, aclrtProcessReport(timeout_ms)) }
    }

    /// `aclrtUnSubscribeReport(threadId, stream)` (C1, C9).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `stream` is live.
    #[inline]
    pub unsafe fn unsubscribe_report(&self, thread_id: u64, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtUnSubscribeReport(thread_id, stream)) }
    }

    /// `aclrtLaunchHostFunc(s, fn, args)` (C10): the runtime calls `function(args)` on a
    /// thread of its own once the earlier tasks of `stream` are done. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `stream` is live and not
    /// subscribed (C10); `function` may be called once with `args`, at any later time or
    /// never (if the task is dropped: S6, S8), and `args` stays valid until then.
    #[inline]
    pub unsafe fn launch_host_func(
        &self,
        stream: aclrtStream,
        function: aclrtHostFunc,
        args: *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtLaunchHostFunc(stream, function, args)) }
    }

    // ---- Memory (M1, M2) ------------------------------------------------------------------

    /// `aclrtMalloc(&p, size, policy)`: device memory.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer); the memory is released with
    /// [`free`](Self::free) (M2).
    #[inline]
    pub unsafe fn malloc(&self, size: usize, policy: aclrtMemMallocPolicy) -> Result<*mut c_void> {
        let mut pointer = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtMalloc(&mut pointer, size, policy))? };
        Ok(pointer)
    }

    /// `aclrtFree(p)` (M2).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `pointer` came from [`malloc`](Self::malloc), no pending task uses it, and it is not
    /// used afterwards.
    #[inline]
    pub unsafe fn free(&self, pointer: *mut c_void) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtFree(pointer)) }
    }

    /// `aclrtMallocHost(&p, size)`: page-locked host memory.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer); the memory is released with
    /// [`free_host`](Self::free_host) (M2).
    #[inline]
    pub unsafe fn malloc_host(&self, size: usize) -> Result<*mut c_void> {
        let mut pointer = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtMallocHost(&mut pointer, size))? };
        Ok(pointer)
    }

    /// `aclrtFreeHost(p)` (M2).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and as [`free`](Self::free), for memory from [`malloc_host`](Self::malloc_host).
    #[inline]
    pub unsafe fn free_host(&self, pointer: *mut c_void) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtFreeHost(pointer)) }
    }

    /// `aclrtMemcpy(dst, destMax, src, count, kind)` (M1).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `dst` is valid for `dest_max` bytes and `src` for `count` bytes, where `kind` says they
    /// live; `count <= dest_max`.
    #[inline]
    pub unsafe fn memcpy(
        &self,
        dst: *mut c_void,
        dest_max: usize,
        src: *const c_void,
        count: usize,
        kind: aclrtMemcpyKind,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtMemcpy(dst, dest_max, src, count, kind)) }
    }

    /// `aclrtMemcpyAsync(dst, destMax, src, count, kind, stream)` (M1).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and as [`memcpy`](Self::memcpy), and both buffers stay valid (the source unmodified, the
    /// destination unread) until `stream` has passed the copy.
    #[inline]
    pub unsafe fn memcpy_async(
        &self,
        dst: *mut c_void,
        dest_max: usize,
        src: *const c_void,
        count: usize,
        kind: aclrtMemcpyKind,
        stream: aclrtStream,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe {
            call!(
                self,
                aclrtMemcpyAsync(dst, dest_max, src, count, kind, stream)
            )
        }
    }

    /// `aclrtMemset(p, maxCount, value, count)`.
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and: `pointer` is valid for `max_count` bytes; `count <= max_count`.
    #[inline]
    pub unsafe fn memset(
        &self,
        pointer: *mut c_void,
        max_count: usize,
        value: i32,
        count: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtMemset(pointer, max_count, value, count)) }
    }

    /// `aclrtMemsetAsync(p, maxCount, value, count, stream)` (M1).
    ///
    /// # Safety
    /// The [common contract](self#safety-of-the-raw-layer), and as [`memset`](Self::memset), and the memory stays valid and unread until `stream` has
    /// passed the task.
    #[inline]
    pub unsafe fn memset_async(
        &self,
        pointer: *mut c_void,
        max_count: usize,
        value: i32,
        count: usize,
        stream: aclrtStream,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe {
            call!(
                self,
                aclrtMemsetAsync(pointer, max_count, value, count, stream)
            )
        }
    }
}
