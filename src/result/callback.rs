//! Callbacks and host functions (C1-C10).

use super::{
    Api, CallError, Result, aclrtCallback, aclrtCallbackBlockType, aclrtHostFunc, aclrtStream,
    c_void, check,
};

impl Api {
    /// `aclrtSubscribeReport(threadId, stream)` (C1-C3, C7).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live; `thread_id` is the `pthread_self()` of a thread that calls
    /// [`process_report`](Self::process_report) until it unsubscribes.
    #[inline]
    pub unsafe fn subscribe_report(&self, thread_id: u64, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtSubscribeReport(thread_id, stream)) }
    }

    /// `aclrtLaunchCallback(fn, data, blockType, stream)` (C4, C5).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live; `callback` may be called once with `user_data` on the subscribed
    /// thread, at any later time, and `user_data` stays valid until then. `callback` keeps
    /// C8: it calls no `unsafe` method of this layer, and not
    /// [`model_query_size`](Self::model_query_size) either (the thread that runs it is not
    /// marked as the typed API's are, so that call would not be refused).
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
    /// The [common contract](crate::result#safety-of-the-raw-layer); the callbacks it runs were
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
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live.
    #[inline]
    pub unsafe fn unsubscribe_report(&self, thread_id: u64, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call!(self, aclrtUnSubscribeReport(thread_id, stream)) }
    }

    /// `aclrtLaunchHostFunc(s, fn, args)` (C10): the runtime calls `function(args)` on a
    /// thread of its own once the earlier tasks of `stream` are done. Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live and not
    /// subscribed (C10); `function` may be called once with `args`, at any later time or
    /// never (if the task is dropped: S6, S8), and `args` stays valid until then. `function`
    /// keeps C8 as a callback of [`launch_callback`](Self::launch_callback) must.
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
}

impl Api {
    /// `aclrtSubscribeHostFunc(thread, s)` (C12): binds a user thread, which calls
    /// [`process_host_func`](Self::process_host_func), to `stream`'s host work. Optional
    /// symbol (the compact library only).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live;
    /// `thread_id` is the `pthread_self()` of a thread that processes until unsubscribed.
    #[inline]
    pub unsafe fn subscribe_host_func(&self, thread_id: u64, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtSubscribeHostFunc(thread_id, stream)) }
    }

    /// `aclrtProcessHostFunc(t)` (C12: `-1` forever, `> 0` ms). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: the host work run on
    /// this thread keeps C8.
    #[inline]
    pub unsafe fn process_host_func(&self, timeout_ms: i32) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtProcessHostFunc(timeout_ms)) }
    }

    /// `aclrtUnSubscribeHostFunc(thread, s)` (C12). Optional symbol.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `stream` is live.
    #[inline]
    pub unsafe fn unsubscribe_host_func(&self, thread_id: u64, stream: aclrtStream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { call_optional!(self, aclrtUnSubscribeHostFunc(thread_id, stream)) }
    }
}
