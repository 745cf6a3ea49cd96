//! The process: init, finalize, timeouts, versions (P1-P5).

use super::{ACL_PKG_VERSION_MAX_SIZE, Api, CStr, CallError, Result, check, copy_c_string, ptr};

impl Api {
    /// `aclInit(configPath)` (P1, P2). `None` passes a null path (no configuration file).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer): no [`Acl`](crate::Acl) is alive or
    /// will be initialised while the runtime this call initialises is in use.
    #[inline]
    pub unsafe fn init(&self, config: Option<&CStr>) -> Result<()> {
        let path = config.map_or(ptr::null(), CStr::as_ptr);
        // SAFETY: the caller's contract (no `Acl` relies on this runtime); `path` is null or
        // a NUL-terminated string that outlives the call.
        unsafe { call!(self, aclInit(path)) }
    }

    /// `aclFinalize()` (P2). Every handle obtained before becomes invalid.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: no handle created before (by this layer or by the typed API: an [`Acl`](crate::Acl)
    /// and everything borrowed from it) is used afterwards.
    #[inline]
    pub unsafe fn finalize(&self) -> Result<()> {
        // SAFETY: takes no argument; the caller's contract covers the handles it invalidates.
        unsafe { call!(self, aclFinalize()) }
    }

    /// `aclrtSetOpWaitTimeout(seconds)` (P3): `0` means never time out.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer). A stream wait issued afterwards
    /// may end without its event (a timeout), so no ordering obtained from such a wait may be
    /// relied on, including the typed API's: its events, scopes and joins would then let
    /// tasks overtake each other (stale event flags, reads of memory still being written).
    /// `seconds` must be `0` while any typed handle is used.
    #[inline]
    pub unsafe fn set_op_wait_timeout(&self, seconds: u32) -> Result<()> {
        // SAFETY: the caller's contract (`seconds` is 0 while typed handles are used, P3a);
        // the runtime validates the integer.
        unsafe { call!(self, aclrtSetOpWaitTimeout(seconds)) }
    }

    /// `aclrtSetOpExecuteTimeOutV2(us, &actual)` (P5): tasks issued later fail with 107020
    /// once they run longer; returns the limit in effect (rounded up to the interval).
    /// `0` removes the limit. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn set_op_execute_timeout_us(&self, timeout_us: u64) -> Result<u64> {
        let mut actual = 0;
        let function = optional!(self, aclrtSetOpExecuteTimeOutV2);
        // SAFETY: the common contract of the raw layer (the caller's); an integer argument
        // and a valid, writable local.
        check(self, "aclrtSetOpExecuteTimeOutV2", unsafe {
            function(timeout_us, &mut actual)
        })?;
        Ok(actual)
    }

    /// `aclrtSetOpExecuteTimeOut(seconds)` (P5), the older interface. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn set_op_execute_timeout(&self, seconds: u32) -> Result<()> {
        // SAFETY: the common contract of the raw layer (the caller's); an integer argument.
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
        check(self, "aclsysGetVersionStr", unsafe {
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
        check(self, "aclsysGetVersionNum", unsafe {
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
        // SAFETY: no argument.
        let text = unsafe { function() };
        // SAFETY: the text stays valid until this thread's next runtime call, and it is
        // copied before any.
        unsafe { copy_c_string(text) }
    }
}
