//! Events (E1-E9).

use super::{
    Api, CallError, Result, aclrtEvent, aclrtEventRecordedStatus, aclrtStream, check, ptr,
};

impl Api {
    /// `aclrtCreateEvent(&e)`.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer).
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
    /// The [common contract](crate::result#safety-of-the-raw-layer).
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `event` is live, no issued task still refers to it, and it is not used afterwards.
    #[inline]
    pub unsafe fn destroy_event(&self, event: aclrtEvent) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtDestroyEvent(event)) }
    }

    /// `aclrtRecordEvent(event, stream)` (E2; event first).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: both handles are live; `stream` is in the current context.
    #[inline]
    pub unsafe fn record_event(&self, event: aclrtEvent, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtRecordEvent(event, stream)) }
    }

    /// `aclrtResetEvent(event, stream)` (E4, E5; event first, `stream` the waiting stream).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: both handles are live; `stream` is in the current context.
    #[inline]
    pub unsafe fn reset_event(&self, event: aclrtEvent, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtResetEvent(event, stream)) }
    }

    /// `aclrtQueryEventStatus(e, &status)`: `true` when the event is complete.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `event` is live.
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `event` is live.
    #[inline]
    pub unsafe fn synchronize_event(&self, event: aclrtEvent) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtSynchronizeEvent(event)) }
    }

    /// `aclrtSynchronizeEventWithTimeout(e, t)` (E6). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `event` is live.
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: both events are live.
    #[inline]
    pub unsafe fn event_elapsed_time(&self, start: aclrtEvent, end: aclrtEvent) -> Result<f32> {
        let mut ms = 0.0f32;
        // SAFETY: the caller's contract; the out-pointer is a valid local.
        unsafe { call!(self, aclrtEventElapsedTime(&mut ms, start, end))? };
        Ok(ms)
    }
}
