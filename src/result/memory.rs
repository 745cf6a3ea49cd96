//! Memory (M1, M2).

use super::{Api, Result, aclrtMemMallocPolicy, aclrtMemcpyKind, aclrtStream, c_void, check, ptr};

impl Api {
    /// `aclrtMalloc(&p, size, policy)`: device memory.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); the memory is released with
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `pointer` came from [`malloc`](Self::malloc), no pending task uses it, and it is not
    /// used afterwards.
    #[inline]
    pub unsafe fn free(&self, pointer: *mut c_void) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtFree(pointer)) }
    }

    /// `aclrtMallocHost(&p, size)`: page-locked host memory.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); the memory is released with
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and as [`free`](Self::free), for memory from [`malloc_host`](Self::malloc_host).
    #[inline]
    pub unsafe fn free_host(&self, pointer: *mut c_void) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtFreeHost(pointer)) }
    }

    /// `aclrtMemcpy(dst, destMax, src, count, kind)` (M1).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `dst` is valid for `dest_max` bytes and `src` for `count` bytes, where `kind` says they
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and as [`memcpy`](Self::memcpy), and both buffers stay valid (the source unmodified, the
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `pointer` is valid for `max_count` bytes; `count <= max_count`.
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and as [`memset`](Self::memset), and the memory stays valid and unread until `stream` has
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
