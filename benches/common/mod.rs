//! The workloads shared by the timing bench (`typed_vs_raw`) and the callgrind pair
//! (`callgrind_typed`, `callgrind_raw`): each sequence once through the typed API and once
//! through raw calls, issuing the same runtime work. Included with `#[path]`, so each bench
//! uses only some of it.
#![allow(dead_code)]

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use ascend_typestate::result::CallError;
use ascend_typestate::sys::bindings::{
    ACL_CALLBACK_BLOCK, ACL_EVENT_SYNC, ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_HOST_TO_DEVICE,
};
use ascend_typestate::sys::bindings::{aclrtContext, aclrtEvent, aclrtStream};
use ascend_typestate::sys::loader::Api;
use ascend_typestate::{AsyncScope, DeviceBuffer, HostBuffer};
use ascend_typestate::{CallbackMode, Error, Event, Reset, Stream, Subscribed};

pub mod jpeg_pipeline;
pub mod pipeline;

/// Bytes of the small copy of sequence (b).
pub const COPY_BYTES: usize = 4096;

// ---- (a) record -> wait -> reset between two streams, then synchronize both --------------

/// Typed: `producer` records, `consumer` waits and resets, both streams synchronised.
///
/// From the second cycle on, `record` first joins `producer` after the previous reset on
/// `consumer` (one extra event: create, record on `consumer`, wait and reset on `producer`;
/// destroyed by `producer.synchronize()`), see `src/typed/event/mod.rs`.
#[inline(always)]
pub fn typed_event_cycle<'t>(
    event: Event<'t, Reset>,
    producer: &'t Stream<'t>,
    consumer: &'t Stream<'t>,
) -> Result<Event<'t, Reset>, Error> {
    let event = event.record(producer)?.wait(consumer, |w| w.reset())?;
    consumer.synchronize()?;
    producer.synchronize()?;
    Ok(event)
}

/// Typed, the same runtime calls as [`typed_event_cycle`] with `Event::wait_and_reset`: the
/// wait and its reset without a scope (nothing to run between them).
#[inline(always)]
pub fn typed_event_cycle_direct<'t>(
    event: Event<'t, Reset>,
    producer: &'t Stream<'t>,
    consumer: &'t Stream<'t>,
) -> Result<Event<'t, Reset>, Error> {
    let event = event.record(producer)?.wait_and_reset(consumer)?;
    consumer.synchronize()?;
    producer.synchronize()?;
    Ok(event)
}

/// Raw, what a C programmer writes: the host synchronisation of the previous cycle already
/// orders the next record after the previous reset, so no join.
#[inline(always)]
pub fn raw_event_cycle(
    api: &Api,
    event: aclrtEvent,
    producer: aclrtStream,
    consumer: aclrtStream,
) -> Result<(), Error> {
    // SAFETY: live handles of the current context; record, wait, reset in E1 order.
    unsafe {
        api.record_event(event, producer)?;
        api.stream_wait_event(consumer, event)?;
        api.reset_event(event, consumer)?;
        api.synchronize_stream(consumer)?;
        api.synchronize_stream(producer)?;
    }
    Ok(())
}

/// Raw, issuing exactly the runtime calls of [`typed_event_cycle`] in steady state: the
/// join event included (the typed API's `Context::join_streams`).
#[inline(always)]
pub fn raw_event_cycle_with_join(
    api: &Api,
    event: aclrtEvent,
    producer: aclrtStream,
    consumer: aclrtStream,
) -> Result<(), Error> {
    // SAFETY: live handles of the current context; `join` is fresh, recorded before it is
    // waited on, reset by its only waiter, destroyed after both streams are synchronised.
    unsafe {
        let join = api.create_event_with_flag(ACL_EVENT_SYNC)?;
        api.record_event(join, consumer)?;
        api.stream_wait_event(producer, join)?;
        api.reset_event(join, producer)?;
        api.record_event(event, producer)?;
        api.stream_wait_event(consumer, event)?;
        api.reset_event(event, consumer)?;
        api.synchronize_stream(consumer)?;
        api.synchronize_stream(producer)?;
        api.destroy_event(join)?;
    }
    Ok(())
}

/// The rawest baseline: the bare function pointers of the table, return codes compared
/// with 0 (same calls as [`raw_event_cycle`]).
#[inline(always)]
pub fn fn_table_event_cycle(
    api: &Api,
    event: aclrtEvent,
    producer: aclrtStream,
    consumer: aclrtStream,
) {
    let f = api.functions();
    // SAFETY: as `raw_event_cycle`.
    let codes = unsafe {
        [
            (f.aclrtRecordEvent)(event, producer),
            (f.aclrtStreamWaitEvent)(consumer, event),
            (f.aclrtResetEvent)(event, consumer),
            (f.aclrtSynchronizeStream)(consumer),
            (f.aclrtSynchronizeStream)(producer),
        ]
    };
    assert!(codes == [0; 5], "a runtime call failed: {codes:?}");
}

// ---- (b) memcpy_async H2D of 4 KiB, then synchronize ----------------------------------------

/// Typed: one async scope holding one copy; the scope synchronises the stream.
#[inline(always)]
pub fn typed_copy(
    ctx: &ascend_typestate::Context<'_>,
    stream: &Stream<'_>,
    dst: &mut DeviceBuffer<'_, u8>,
    src: &HostBuffer<'_, u8>,
) -> Result<(), Error> {
    ctx.async_scope(|scope: &AsyncScope<'_, '_>| {
        scope.copy(stream, dst, src)?;
        Ok(())
    })
}

/// Raw: `aclrtMemcpyAsync` + `aclrtSynchronizeStream` through the result layer.
#[inline(always)]
pub fn raw_copy(
    api: &Api,
    stream: aclrtStream,
    dst: *mut c_void,
    src: *const c_void,
) -> Result<(), Error> {
    // SAFETY: `dst` is device memory and `src` pinned host memory of COPY_BYTES each, alive
    // and untouched until the stream is synchronised.
    unsafe {
        api.memcpy_async(
            dst,
            COPY_BYTES,
            src,
            COPY_BYTES,
            ACL_MEMCPY_HOST_TO_DEVICE,
            stream,
        )?;
        api.synchronize_stream(stream)?;
    }
    Ok(())
}

/// The bare function pointers (same calls as [`raw_copy`]).
#[inline(always)]
pub fn fn_table_copy(api: &Api, stream: aclrtStream, dst: *mut c_void, src: *const c_void) {
    let f = api.functions();
    // SAFETY: as `raw_copy`.
    let codes = unsafe {
        [
            (f.aclrtMemcpyAsync)(
                dst,
                COPY_BYTES,
                src,
                COPY_BYTES,
                ACL_MEMCPY_HOST_TO_DEVICE,
                stream,
            ),
            (f.aclrtSynchronizeStream)(stream),
        ]
    };
    assert!(codes == [0; 2], "a runtime call failed: {codes:?}");
}

/// Raw buffers for [`raw_copy`]: device and pinned host memory of COPY_BYTES.
pub fn raw_buffers(api: &Api) -> Result<(*mut c_void, *mut c_void), Error> {
    // SAFETY: raw buffers owned by the caller, freed by `free_raw_buffers`.
    unsafe {
        let dev = api.malloc(COPY_BYTES, ACL_MEM_MALLOC_HUGE_FIRST)?;
        let host = api.malloc_host(COPY_BYTES)?;
        Ok((dev, host))
    }
}

/// Frees [`raw_buffers`] (every copy using them was synchronised).
pub fn free_raw_buffers(api: &Api, (dev, host): (*mut c_void, *mut c_void)) -> Result<(), Error> {
    // SAFETY: allocated by `raw_buffers`, no task pending, freed once.
    unsafe {
        api.free(dev)?;
        api.free_host(host)?;
    }
    Ok(())
}

// ---- (c) callback launch + synchronize -----------------------------------------------------

/// Typed: `Subscribed::launch` of an empty blocking callback, then synchronize.
#[inline(always)]
pub fn typed_callback(stream: &Subscribed<'_, '_>) -> Result<(), Error> {
    stream.launch(CallbackMode::Blocking, || {})?;
    stream.synchronize()
}

unsafe extern "C" fn noop_callback(_user_data: *mut c_void) {}

/// Raw: `aclrtLaunchCallback` of an `extern "C"` function, then synchronize.
#[inline(always)]
pub fn raw_callback(api: &Api, stream: aclrtStream) -> Result<(), Error> {
    // SAFETY: the stream is live and subscribed to a thread that processes reports;
    // the callback uses no data.
    unsafe {
        api.launch_callback(
            Some(noop_callback),
            std::ptr::null_mut(),
            ACL_CALLBACK_BLOCK,
            stream,
        )?;
        api.synchronize_stream(stream)?;
    }
    Ok(())
}

/// A hand-written report thread (C1 step 1): `aclrtProcessReport(10)` in a loop with the
/// context current (C6), like the typed `ReportThread` (same 10 ms poll).
pub struct RawReportThread {
    pub thread_id: u64,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

struct SendPtr(aclrtContext);
// SAFETY: an opaque handle; the runtime lets any thread make a context current.
unsafe impl Send for SendPtr {}

impl RawReportThread {
    pub fn spawn(api: &'static Api, ctx: aclrtContext) -> RawReportThread {
        use std::os::unix::thread::JoinHandleExt;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let ctx = SendPtr(ctx);
        let handle = std::thread::spawn(move || {
            let ctx = ctx;
            // SAFETY: the context outlives the thread (joined by `stop`).
            unsafe { api.set_current_context(ctx.0) }.expect("set_current_context");
            while !flag.load(Ordering::Acquire) {
                // Ok, a timeout (507012) or "not subscribed yet" (107012): poll again.
                // SAFETY: this thread is the one subscribed (its pthread id is passed on).
                if let Err(CallError::Failed { code, .. }) = unsafe { api.process_report(10) }
                    && code.code() == 107012
                {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
        });
        #[allow(clippy::useless_conversion)]
        let thread_id = u64::from(handle.as_pthread_t());
        RawReportThread {
            thread_id,
            stop,
            handle,
        }
    }

    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.handle.join().expect("report thread panicked");
    }
}
