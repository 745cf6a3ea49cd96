//! Stream configuration, queries and control of CANN 8.x/9.x (S9-S13): configuration
//! handles and `aclrtCreateStreamV2`, flags, priority and id queries, stop and abort, stream
//! state callbacks. Every symbol is optional.

use std::ffi::{CStr, c_void};

use super::{Api, CallError, Result, aclrtStream, check, ptr};
use crate::sys::bindings::{
    aclrtStreamConfigAttr, aclrtStreamConfigHandle, aclrtStreamStateCallback,
};

impl Api {
    /// `aclrtCreateStreamConfigHandle()` (S9): a zeroed configuration; `None` when the
    /// runtime returns NULL. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: the handle is
    /// destroyed once with [`destroy_stream_config_handle`](Self::destroy_stream_config_handle).
    #[inline]
    pub unsafe fn create_stream_config_handle(
        &self,
    ) -> Result<Option<*mut aclrtStreamConfigHandle>> {
        let function = optional!(self, aclrtCreateStreamConfigHandle);
        // SAFETY: no argument.
        let handle = unsafe { function() };
        Ok((!handle.is_null()).then_some(handle))
    }

    /// `aclrtDestroyStreamConfigHandle(handle)` (S9). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `handle` came from
    /// [`create_stream_config_handle`](Self::create_stream_config_handle) and is not used
    /// afterwards.
    #[inline]
    pub unsafe fn destroy_stream_config_handle(
        &self,
        handle: *mut aclrtStreamConfigHandle,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtDestroyStreamConfigHandle(handle)) }
    }

    /// `aclrtSetStreamConfigOpt(handle, attr, value, size)` (S9). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `handle` is live;
    /// `value` points to `size` readable bytes of the type `attr` takes.
    #[inline]
    pub unsafe fn set_stream_config_opt(
        &self,
        handle: *mut aclrtStreamConfigHandle,
        attr: aclrtStreamConfigAttr,
        value: *const c_void,
        size: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtSetStreamConfigOpt(handle, attr, value, size)) }
    }

    /// `aclrtCreateStreamV2(&s, handle)` (S9): `handle` NULL gives the defaults. Optional.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `handle` is NULL or
    /// live.
    #[inline]
    pub unsafe fn create_stream_v2(
        &self,
        handle: *const aclrtStreamConfigHandle,
    ) -> Result<aclrtStream> {
        let mut stream = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local; the caller's contract.
        unsafe { call_optional!(self, aclrtCreateStreamV2(&mut stream, handle))? };
        Ok(stream)
    }

    /// `aclrtStreamGetFlags(s, &flags)` (S10). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live
    /// (or null: the default stream).
    #[inline]
    pub unsafe fn stream_get_flags(&self, stream: aclrtStream) -> Result<u32> {
        let mut flags = 0;
        // SAFETY: the out-pointer is a valid, writable local; the caller's contract.
        unsafe { call_optional!(self, aclrtStreamGetFlags(stream, &mut flags))? };
        Ok(flags)
    }

    /// `aclrtStreamGetPriority(s, &priority)` (S10: 0 is the highest). Optional symbol.
    ///
    /// # Safety
    /// As [`stream_get_flags`](Self::stream_get_flags).
    #[inline]
    pub unsafe fn stream_get_priority(&self, stream: aclrtStream) -> Result<u32> {
        let mut priority = 0;
        // SAFETY: the out-pointer is a valid, writable local; the caller's contract.
        unsafe { call_optional!(self, aclrtStreamGetPriority(stream, &mut priority))? };
        Ok(priority)
    }

    /// `aclrtStreamGetId(s, &id)` (S10). Optional symbol.
    ///
    /// # Safety
    /// As [`stream_get_flags`](Self::stream_get_flags).
    #[inline]
    pub unsafe fn stream_get_id(&self, stream: aclrtStream) -> Result<i32> {
        let mut id = 0;
        // SAFETY: the out-pointer is a valid, writable local; the caller's contract.
        unsafe { call_optional!(self, aclrtStreamGetId(stream, &mut id))? };
        Ok(id)
    }

    /// `aclrtStreamStop(s)` (S11): halts the running task, keeps the queued ones. Optional.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live and
    /// in the current context; what the halted task was writing is undefined afterwards.
    #[inline]
    pub unsafe fn stream_stop(&self, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtStreamStop(stream)) }
    }

    /// `aclrtStreamAbort(s)` (S11): stops the running task and discards the queued ones; the
    /// stream is usable afterwards. Optional symbol.
    ///
    /// # Safety
    /// As [`stream_stop`](Self::stream_stop), and: nothing waits for a discarded task (an
    /// event record among them never completes).
    #[inline]
    pub unsafe fn stream_abort(&self, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtStreamAbort(stream)) }
    }

    /// `aclrtRegStreamStateCallback(name, callback, args)` (S12): `callback` `None`
    /// unregisters `name`. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `callback` may be
    /// called with `args` from any thread that creates or destroys a stream until it is
    /// unregistered, and keeps C8; `args` stays valid until then.
    #[inline]
    pub unsafe fn reg_stream_state_callback(
        &self,
        name: &CStr,
        callback: aclrtStreamStateCallback,
        args: *mut c_void,
    ) -> Result<()> {
        // SAFETY: `name` is NUL-terminated and outlives the call; the caller's contract.
        unsafe {
            call_optional!(
                self,
                aclrtRegStreamStateCallback(name.as_ptr(), callback, args)
            )
        }
    }
}
