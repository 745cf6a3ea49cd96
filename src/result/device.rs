//! Devices and contexts (D1-D8).

use super::{
    ACL_ERROR_FAILURE, Api, CallError, Result, aclDeviceInfo, aclError, aclrtContext, aclrtMemAttr,
    aclrtRunMode, check, copy_c_string, current, ptr, runtime_error,
};

impl Api {
    /// `aclrtSetDevice(id)` (D1). It makes the device's default context current.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); each set is paired with a
    /// [`reset_device`](Self::reset_device) (D1).
    #[inline]
    pub unsafe fn set_device(&self, device: i32) -> Result<()> {
        // It makes the device's default context current: the typed API must rebind (D6).
        current::forget();
        // SAFETY: a plain integer argument, validated by the runtime (107001).
        unsafe { call!(self, aclrtSetDevice(device)) }
    }

    /// `aclrtResetDevice(id)` (D1, D3, D5).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: when this releases the device's last reference, no handle created on the device (by
    /// this layer or by the typed API) is used afterwards.
    #[inline]
    pub unsafe fn reset_device(&self, device: i32) -> Result<()> {
        current::forget();
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
    /// The [common contract](crate::result#safety-of-the-raw-layer): nothing of the device is used
    /// afterwards, by this code or any other (every reference is gone).
    #[inline]
    pub unsafe fn reset_device_force(&self, device: i32) -> Result<()> {
        current::forget();
        // SAFETY: an integer argument validated by the runtime; the caller's contract covers
        // the handles it invalidates.
        unsafe { call_optional!(self, aclrtResetDeviceForce(device)) }
    }

    /// `aclrtGetSocName()` (D8): e.g. "Ascend310B4". Optional symbol; a NULL answer is
    /// [`CallError::Failed`] with `ACL_ERROR_FAILURE`.
    pub fn get_soc_name(&self) -> Result<String> {
        let function = optional!(self, aclrtGetSocName);
        // SAFETY: no argument.
        let name = unsafe { function() };
        // SAFETY: the runtime returns NULL or a NUL-terminated string it keeps.
        unsafe { copy_c_string(name) }
            .ok_or_else(|| runtime_error(self, "aclrtGetSocName", ACL_ERROR_FAILURE as aclError))
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
    /// The [common contract](crate::result#safety-of-the-raw-layer) (from a callback it deadlocks).
    #[inline]
    pub unsafe fn synchronize_device(&self) -> Result<()> {
        // SAFETY: takes no argument.
        unsafe { call!(self, aclrtSynchronizeDevice()) }
    }

    /// `aclrtSynchronizeDeviceWithTimeout(ms)` (D4; `-1` forever, `> 0` ms). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn synchronize_device_with_timeout(&self, timeout_ms: i32) -> Result<()> {
        // SAFETY: a plain integer argument, validated by the runtime.
        unsafe { call_optional!(self, aclrtSynchronizeDeviceWithTimeout(timeout_ms)) }
    }

    /// `aclrtCreateContext(&ctx, id)` (D2): creates a context and makes it current.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
    #[inline]
    pub unsafe fn create_context(&self, device: i32) -> Result<aclrtContext> {
        // The new context becomes current: the typed API must rebind (D6).
        current::forget();
        let mut context = ptr::null_mut();
        // SAFETY: the out-pointer is a valid, writable local.
        unsafe { call!(self, aclrtCreateContext(&mut context, device))? };
        Ok(context)
    }

    /// `aclrtDestroyContext(ctx)` (D3, D5).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `context` came from [`create_context`](Self::create_context), is not destroyed yet,
    /// and nothing created in it is used afterwards.
    #[inline]
    pub unsafe fn destroy_context(&self, context: aclrtContext) -> Result<()> {
        current::forget();
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtDestroyContext(context)) }
    }

    /// `aclrtSetCurrentContext(ctx)` (D6).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `context` is a live context handle.
    #[inline]
    pub unsafe fn set_current_context(&self, context: aclrtContext) -> Result<()> {
        current::forget();
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
}
