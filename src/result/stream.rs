//! Streams (S1-S8).

use super::{
    ACL_STREAM_STATUS_COMPLETE, Api, CallError, Result, aclrtEvent, aclrtStream, aclrtStreamStatus,
    check, ptr,
};

impl Api {
    /// `aclrtCreateStream(&s)`: a stream in the calling thread's current context (D2).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live, its context is current, and it is not used afterwards.
    #[inline]
    pub unsafe fn destroy_stream(&self, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtDestroyStream(stream)) }
    }

    /// `aclrtSynchronizeStream(s)` (S2).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is a live stream handle (or null: the default stream).
    #[inline]
    pub unsafe fn synchronize_stream(&self, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtSynchronizeStream(stream)) }
    }

    /// `aclrtSynchronizeStreamWithTimeout(s, t)` (S3: `-1` forever, `> 0` ms).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and as [`synchronize_stream`](Self::synchronize_stream).
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: both handles are live; `stream` is in the current context.
    #[inline]
    pub unsafe fn stream_wait_event(&self, stream: aclrtStream, event: aclrtEvent) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtStreamWaitEvent(stream, event)) }
    }

    /// `aclrtCreateStreamWithConfig(&s, priority, flags)` (S7). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live, in the
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live; stop mode
    /// makes the first failed task drop every later task of the context.
    #[inline]
    pub unsafe fn set_stream_failure_mode(&self, stream: aclrtStream, mode: u64) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtSetStreamFailureMode(stream, mode)) }
    }
}
