//! Context and thread queries and error reporting of CANN 8.x/9.x (D9, D10, P6): the current
//! default stream, the thread's core limits, the thread's last runtime error, fault details.
//! Every symbol is optional.

use std::mem::MaybeUninit;

use super::{Api, CallError, Result, aclError, aclrtStream, check, ptr};
use crate::sys::bindings::{aclrtDevResLimitType, aclrtErrorInfo, aclrtLastErrLevel};

impl Api {
    /// `aclrtCtxGetCurrentDefaultStream(&s)` (D9): a real handle of the current context's
    /// default stream. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: the handle is not
    /// destroyed (it is the context's) nor used after its context is.
    #[inline]
    pub unsafe fn ctx_get_current_default_stream(&self) -> Result<aclrtStream> {
        let mut stream = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call_optional!(self, aclrtCtxGetCurrentDefaultStream(&mut stream))? };
        Ok(stream)
    }

    /// `aclrtGetResInCurrentThread(type, &value)` (D10): the cube or vector cores the
    /// calling thread's work may use. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn get_res_in_current_thread(&self, kind: aclrtDevResLimitType) -> Result<u32> {
        let mut value = 0;
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call_optional!(self, aclrtGetResInCurrentThread(kind, &mut value))? };
        Ok(value)
    }

    /// `aclrtGetLastError(level)` (P6): the thread's last runtime error code, reset to 0 by
    /// the call; the code is the value, not a failure of the call. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn get_last_error(&self, level: aclrtLastErrLevel) -> Result<aclError> {
        let function = optional!(self, aclrtGetLastError);
        // SAFETY: an integer argument.
        Ok(unsafe { function(level) })
    }

    /// `aclrtPeekAtLastError(level)` (P6): as [`get_last_error`](Self::get_last_error),
    /// without resetting it. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn peek_at_last_error(&self, level: aclrtLastErrLevel) -> Result<aclError> {
        let function = optional!(self, aclrtPeekAtLastError);
        // SAFETY: an integer argument.
        Ok(unsafe { function(level) })
    }

    /// `aclrtGetErrorVerbose(device, &info)` (P6): what the device's last fault was.
    /// Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn get_error_verbose(&self, device: i32) -> Result<aclrtErrorInfo> {
        let mut info = MaybeUninit::<aclrtErrorInfo>::zeroed();
        // SAFETY: the out-pointer is a valid, writable local of the right type.
        unsafe { call_optional!(self, aclrtGetErrorVerbose(device, info.as_mut_ptr()))? };
        // SAFETY: all-zero bytes are a valid `aclrtErrorInfo` (integers, pointers, a union of
        // them), and the runtime wrote a valid one over it.
        Ok(unsafe { info.assume_init() })
    }
}
