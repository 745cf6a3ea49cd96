//! Callgrind workload, raw calls through `acl.api()` (the baseline of `callgrind_typed`, run
//! by `scripts/callgrind.sh`): `callgrind_raw events|copies|callbacks|pipeline|jpeg_pipeline N
//! [join|minimal]` runs N cycles inside `raw_events` / `raw_copies` / `raw_callbacks` /
//! `raw_pipeline` / `raw_jpeg_pipeline`, the functions callgrind counts. `join` (the
//! default) issues exactly the runtime calls of the typed API, including its join event per re-record; `minimal` is
//! what a C programmer writes (no join: the host synchronisation already orders the cycles).

use std::ffi::c_void;

use ascend_typestate::sys::bindings::{ACL_CALLBACK_BLOCK, ACL_EVENT_SYNC};
use ascend_typestate::sys::bindings::{aclrtContext, aclrtEvent, aclrtStream};
use ascend_typestate::sys::loader::Api;
use ascend_typestate::{Acl, Error};

#[path = "common/mod.rs"]
mod common;
use common::*;

/// Counted by callgrind: N event cycles, nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn raw_events(
    api: &Api,
    event: aclrtEvent,
    producer: aclrtStream,
    consumer: aclrtStream,
    join: bool,
    n: u64,
) -> Result<(), Error> {
    event_cycles(api, event, producer, consumer, join, n)
}

/// The loop, also run once (uncounted) as the warm-up, as in `callgrind_typed`.
#[inline(never)]
fn event_cycles(
    api: &Api,
    event: aclrtEvent,
    producer: aclrtStream,
    consumer: aclrtStream,
    join: bool,
    n: u64,
) -> Result<(), Error> {
    for _ in 0..n {
        if join {
            raw_event_cycle_with_join(api, event, producer, consumer)?;
        } else {
            raw_event_cycle(api, event, producer, consumer)?;
        }
    }
    Ok(())
}

/// Counted by callgrind: N cycles of K events as C writes them: one join per cycle (the
/// consumer's resets ordered before the producer's records, `join` reused once the producer
/// is synchronised), K records, K waits and resets, the producer synchronised.
#[unsafe(no_mangle)]
#[inline(never)]
fn raw_many_events(
    api: &Api,
    join: aclrtEvent,
    events: &[aclrtEvent],
    producer: aclrtStream,
    consumer: aclrtStream,
    n: u64,
) -> Result<(), Error> {
    events_k_cycles(api, join, events, producer, consumer, n)
}

/// The loop, also run once (uncounted) as the warm-up.
#[inline(never)]
fn events_k_cycles(
    api: &Api,
    join: aclrtEvent,
    events: &[aclrtEvent],
    producer: aclrtStream,
    consumer: aclrtStream,
    n: u64,
) -> Result<(), Error> {
    for _ in 0..n {
        // SAFETY: live handles of the current context; each event recorded, waited on and
        // reset in E1 order; `join` recorded after the consumer's resets, waited on and reset
        // by the producer, recorded again only after the producer was synchronised (E4, E5).
        unsafe {
            api.record_event(join, consumer)?;
            api.stream_wait_event(producer, join)?;
            api.reset_event(join, producer)?;
            for &event in events {
                api.record_event(event, producer)?;
            }
            for &event in events {
                api.stream_wait_event(consumer, event)?;
                api.reset_event(event, consumer)?;
            }
            api.synchronize_stream(producer)?;
        }
    }
    Ok(())
}

/// The join event and K events of `events_k`, raw, in the current context.
fn k_events(api: &Api, k: usize) -> Result<(aclrtEvent, Vec<aclrtEvent>), Error> {
    // SAFETY: raw events of the current context, destroyed by `destroy_k_events`.
    let join = unsafe { api.create_event_with_flag(ACL_EVENT_SYNC)? };
    let events = (0..k)
        // SAFETY: as above.
        .map(|_| unsafe { api.create_event_with_flag(ACL_EVENT_SYNC) })
        .collect::<Result<_, _>>()?;
    Ok((join, events))
}

/// # Safety
/// Every stream that used the events has been synchronised; each is destroyed once.
unsafe fn destroy_k_events(
    api: &Api,
    join: aclrtEvent,
    events: Vec<aclrtEvent>,
) -> Result<(), Error> {
    // SAFETY: the caller's contract.
    unsafe {
        api.destroy_event(join)?;
        for event in events {
            api.destroy_event(event)?;
        }
    }
    Ok(())
}

/// One of the other threads of `events_k K T`: the same loop (not counted), on its own two
/// streams of the shared context, made current on this thread.
fn other_thread_k_cycles(api: &Api, ctx: usize, k: usize, n: u64) -> Result<(), Error> {
    // SAFETY: the context outlives the scope this thread runs in; its streams and events are
    // created here and destroyed below after the synchronisations.
    unsafe {
        api.set_current_context(ctx as aclrtContext)?;
        let (producer, consumer) = (api.create_stream()?, api.create_stream()?);
        let (join, events) = k_events(api, k)?;
        events_k_cycles(api, join, &events, producer, consumer, n + 2)?;
        api.synchronize_stream(consumer)?;
        api.synchronize_stream(producer)?;
        destroy_k_events(api, join, events)?;
        api.destroy_stream(producer)?;
        api.destroy_stream(consumer)?;
    }
    Ok(())
}

/// Counted by callgrind: N copies, nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn raw_copies(
    api: &Api,
    stream: aclrtStream,
    dst: *mut c_void,
    src: *const c_void,
    n: u64,
) -> Result<(), Error> {
    copy_cycles(api, stream, dst, src, n)
}

/// The loop, also run once (uncounted) as the warm-up.
#[inline(never)]
fn copy_cycles(
    api: &Api,
    stream: aclrtStream,
    dst: *mut c_void,
    src: *const c_void,
    n: u64,
) -> Result<(), Error> {
    for _ in 0..n {
        raw_copy(api, stream, dst, src)?;
    }
    Ok(())
}

/// Counted by callgrind: N callback launches (each synchronised), nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn raw_callbacks(api: &Api, stream: aclrtStream, n: u64) -> Result<(), Error> {
    callback_cycles(api, stream, n)
}

/// The loop, also run once (uncounted) as the warm-up.
#[inline(never)]
fn callback_cycles(api: &Api, stream: aclrtStream, n: u64) -> Result<(), Error> {
    for _ in 0..n {
        raw_callback(api, stream)?;
    }
    Ok(())
}

/// Counted by callgrind: N cycles of D callback launches, then one synchronisation, nothing
/// else.
#[unsafe(no_mangle)]
#[inline(never)]
fn raw_deep_callbacks(api: &Api, stream: aclrtStream, depth: u32, n: u64) -> Result<(), Error> {
    deep_callback_cycles(api, stream, depth, n)
}

unsafe extern "C" fn noop(_user_data: *mut c_void) {}

/// The loop, also run once (uncounted) as the warm-up.
#[inline(never)]
fn deep_callback_cycles(api: &Api, stream: aclrtStream, depth: u32, n: u64) -> Result<(), Error> {
    for _ in 0..n {
        // SAFETY: the stream is live and subscribed to a thread that processes reports; the
        // callback uses no data.
        unsafe {
            for _ in 0..depth {
                api.launch_callback(Some(noop), std::ptr::null_mut(), ACL_CALLBACK_BLOCK, stream)?;
            }
            api.synchronize_stream(stream)?;
        }
    }
    Ok(())
}

/// Counted by callgrind: N frames of the double-buffered pipeline, nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn raw_pipeline(frames: &mut pipeline::RawLoop, first: u64, n: u64) -> Result<(), Error> {
    pipeline_cycles(frames, first, n)
}

/// The loop, also run (uncounted) as the warm-up that fills every slot.
#[inline(never)]
fn pipeline_cycles(frames: &mut pipeline::RawLoop, first: u64, n: u64) -> Result<(), Error> {
    for frame in first..first + n {
        frames.frame(frame)?;
    }
    Ok(())
}

/// Counted by callgrind: N frames of the raw JPEG pipeline, nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn raw_jpeg_pipeline(frames: &mut jpeg_pipeline::RawJpegLoop, n: u64) -> Result<(), Error> {
    jpeg_pipeline_cycles(frames, n)
}

/// The loop, also run (uncounted) as the warm-up that fills every slot.
#[inline(never)]
fn jpeg_pipeline_cycles(frames: &mut jpeg_pipeline::RawJpegLoop, n: u64) -> Result<(), Error> {
    for _ in 0..n {
        frames.frame()?;
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    // `cargo bench` passes `--bench`: ignore flags (then the defaults run, as a smoke test).
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let which = args.next().unwrap_or_else(|| "events".into());
    let n: u64 = args.next().map_or(1000, |s| s.parse().expect("N"));
    let join = match args.next().as_deref() {
        None | Some("join") => true,
        Some("minimal") => false,
        Some(other) => panic!("unknown variant {other:?} (join|minimal)"),
    };
    let acl = Acl::init()?;
    let api = acl.api();
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    // SAFETY: raw streams of the current context, destroyed below, before the context.
    let (s1, s2) = unsafe { (api.create_stream()?, api.create_stream()?) };
    match which.as_str() {
        "events" => {
            // SAFETY: a raw event of the current context, destroyed below.
            let event = unsafe { api.create_event_with_flag(ACL_EVENT_SYNC)? };
            event_cycles(api, event, s1, s2, false, 1)?;
            raw_events(api, event, s1, s2, join, n)?;
            // SAFETY: both streams are synchronised; destroyed once.
            unsafe { api.destroy_event(event)? };
        }
        "events_k" => {
            let k: usize = args.next().map_or(8, |s| s.parse().expect("K"));
            let t: usize = args.next().map_or(1, |s| s.parse().expect("T"));
            let raw_ctx = ctx.as_raw() as usize;
            std::thread::scope(|scope| -> Result<(), Error> {
                let others: Vec<_> = (1..t)
                    .map(|_| scope.spawn(move || other_thread_k_cycles(api, raw_ctx, k, n)))
                    .collect();
                let (join, events) = k_events(api, k)?;
                events_k_cycles(api, join, &events, s1, s2, 2)?;
                raw_many_events(api, join, &events, s1, s2, n)?;
                // SAFETY: both streams synchronised first; each event destroyed once.
                unsafe {
                    api.synchronize_stream(s2)?;
                    api.synchronize_stream(s1)?;
                    destroy_k_events(api, join, events)?;
                }
                for other in others {
                    other.join().expect("a bench thread panicked")?;
                }
                Ok(())
            })?;
        }
        "copies" => {
            let buffers = raw_buffers(api)?;
            copy_cycles(api, s1, buffers.0, buffers.1, 1)?;
            raw_copies(api, s1, buffers.0, buffers.1, n)?;
            free_raw_buffers(api, buffers)?;
        }
        "callbacks_deep" => {
            let depth: u32 = args.next().map_or(64, |s| s.parse().expect("D"));
            let global = ascend_typestate::sys::loader::global().expect("loaded by Acl::init");
            let thread = RawReportThread::spawn(global, ctx.as_raw());
            // SAFETY: the stream is live; the thread processes reports until `stop`.
            unsafe { api.subscribe_report(thread.thread_id, s1)? };
            deep_callback_cycles(api, s1, depth, 1)?;
            raw_deep_callbacks(api, s1, depth, n)?;
            // SAFETY: every callback ran (synchronised); subscribed to this thread.
            unsafe { api.unsubscribe_report(thread.thread_id, s1)? };
            thread.stop();
        }
        "callbacks" => {
            // The raw report thread needs the `'static` table: the one `acl.api()` borrows
            // (the library is loaded once per process).
            let global = ascend_typestate::sys::loader::global().expect("loaded by Acl::init");
            let thread = RawReportThread::spawn(global, ctx.as_raw());
            // SAFETY: the stream is live; the thread processes reports until `stop`.
            unsafe { api.subscribe_report(thread.thread_id, s1)? };
            callback_cycles(api, s1, 1)?;
            raw_callbacks(api, s1, n)?;
            // SAFETY: every callback ran (synchronised); subscribed to this thread.
            unsafe { api.unsubscribe_report(thread.thread_id, s1)? };
            thread.stop();
        }
        "pipeline" => {
            let library = acl.library();
            let global = ascend_typestate::sys::loader::global().expect("loaded by Acl::init");
            let mut frames =
                pipeline::RawLoop::new(global, library.path(), std::time::Duration::ZERO)?;
            let warm = pipeline::SLOTS as u64;
            pipeline_cycles(&mut frames, 0, warm)?;
            raw_pipeline(&mut frames, warm, n)?;
            frames.finish()?;
        }
        "jpeg_pipeline" => {
            let global = ascend_typestate::sys::loader::global().expect("loaded by Acl::init");
            let mut frames = jpeg_pipeline::RawJpegLoop::new(global)?;
            jpeg_pipeline_cycles(&mut frames, jpeg_pipeline::SLOTS as u64)?;
            let sim = acl.simulator();
            if let Some(sim) = &sim {
                sim.reset_call_counts();
            }
            raw_jpeg_pipeline(&mut frames, n)?;
            if let Some(sim) = &sim {
                jpeg_pipeline::check_calls(sim, n, "raw");
            }
            let checksum = frames.finish()?;
            jpeg_pipeline::check_checksum(checksum, n + jpeg_pipeline::SLOTS as u64, "raw");
        }
        other => panic!(
            "unknown workload {other:?} (events|events_k|copies|callbacks|pipeline|jpeg_pipeline)"
        ),
    }
    // SAFETY: synchronised, destroyed once, in the current context.
    unsafe {
        api.destroy_stream(s1)?;
        api.destroy_stream(s2)?;
    }
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    let variant = if join { "join" } else { "minimal" };
    println!("raw {which} ({variant}) n={n}: done");
    Ok(())
}
