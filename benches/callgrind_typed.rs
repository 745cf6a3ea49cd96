//! Callgrind workload, typed API (run by `scripts/callgrind.sh`, with `callgrind_raw` as the
//! baseline): `callgrind_typed events|events_direct|copies|callbacks|pipeline|jpeg_pipeline N`
//! runs N cycles of the sequence inside `typed_events` / `typed_events_direct` /
//! `typed_copies` / `typed_callbacks` / `typed_pipeline` / `typed_jpeg_pipeline`, the
//! functions callgrind's `--toggle-collect` counts. Setup and teardown are outside it, and
//! so is one warm-up cycle (steady state: every counted cycle re-records).

use ascend_typestate::{
    Acl, CallbackMode, Context, Error, Event, Recorded, ReportThread, Reset, Stream, Subscribed,
};
use ascend_typestate::{DeviceBuffer, HostBuffer, MallocPolicy};

#[path = "common/mod.rs"]
mod common;
use common::*;

/// Counted by callgrind: N event cycles, nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn typed_events<'t>(
    event: Event<'t, Reset>,
    producer: &'t Stream<'t>,
    consumer: &'t Stream<'t>,
    n: u64,
) -> Result<Event<'t, Reset>, Error> {
    event_cycles(event, producer, consumer, n)
}

/// Counted by callgrind: N event cycles with `wait_and_reset`, nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn typed_events_direct<'t>(
    event: Event<'t, Reset>,
    producer: &'t Stream<'t>,
    consumer: &'t Stream<'t>,
    n: u64,
) -> Result<Event<'t, Reset>, Error> {
    event_cycles_direct(event, producer, consumer, n)
}

/// The loop of each event cycle form, also run once (uncounted) as the warm-up: the cycle's
/// code, closures included, has this one call site, as in a program that runs it in one loop.
macro_rules! event_loop {
    ($name:ident, $cycle:ident) => {
        #[inline(never)]
        fn $name<'t>(
            mut event: Event<'t, Reset>,
            producer: &'t Stream<'t>,
            consumer: &'t Stream<'t>,
            n: u64,
        ) -> Result<Event<'t, Reset>, Error> {
            for _ in 0..n {
                event = $cycle(event, producer, consumer)?;
            }
            Ok(event)
        }
    };
}
event_loop!(event_cycles, typed_event_cycle);
event_loop!(event_cycles_direct, typed_event_cycle_direct);

/// Counted by callgrind: N cycles of K events (all recorded on the producer, then each
/// waited on and reset by the consumer; the host synchronises the producer only), nothing
/// else.
#[unsafe(no_mangle)]
#[inline(never)]
fn typed_many_events<'t>(
    events: &mut [Option<Event<'t, Reset>>],
    producer: &'t Stream<'t>,
    consumer: &'t Stream<'t>,
    n: u64,
) -> Result<(), Error> {
    events_k_cycles(events, producer, consumer, n)
}

/// The loop, also run once (uncounted) as the warm-up.
#[inline(never)]
fn events_k_cycles<'t>(
    events: &mut [Option<Event<'t, Reset>>],
    producer: &'t Stream<'t>,
    consumer: &'t Stream<'t>,
    n: u64,
) -> Result<(), Error> {
    // One slot per event for its *Recorded* state, beside its *Reset* one: the events move
    // between the two (no container work per cycle beyond an `Option` per move).
    let mut recorded: Vec<Option<Event<'t, Recorded>>> = events.iter().map(|_| None).collect();
    for _ in 0..n {
        for (slot, recorded) in events.iter_mut().zip(recorded.iter_mut()) {
            if let Some(event) = slot.take() {
                *recorded = Some(event.record(producer)?);
            }
        }
        for (slot, recorded) in events.iter_mut().zip(recorded.iter_mut()) {
            if let Some(event) = recorded.take() {
                *slot = Some(event.wait_and_reset(consumer)?);
            }
        }
        producer.synchronize()?;
    }
    Ok(())
}

fn k_events<'c>(ctx: &'c Context<'_>, k: usize) -> Result<Vec<Option<Event<'c, Reset>>>, Error> {
    (0..k)
        .map(|_| Ok(Some(ctx.create_event()?.into())))
        .collect()
}

fn destroy_k_events(events: Vec<Option<Event<'_, Reset>>>) -> Result<(), Error> {
    for event in events.into_iter().flatten() {
        event.destroy()?;
    }
    Ok(())
}

/// One of the other threads of `events_k K T`: the same loop (not counted), on its own two
/// streams of the shared context.
fn other_thread_k_cycles(ctx: &Context<'_>, k: usize, n: u64) -> Result<(), Error> {
    let (producer, consumer) = (ctx.create_stream()?, ctx.create_stream()?);
    let mut events = k_events(ctx, k)?;
    events_k_cycles(&mut events, &producer, &consumer, n + 2)?;
    consumer.synchronize()?;
    destroy_k_events(events)?;
    producer.destroy()?;
    consumer.destroy()
}

/// Counted by callgrind: N copies, nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn typed_copies(
    ctx: &Context<'_>,
    stream: &Stream<'_>,
    dst: &mut DeviceBuffer<'_, u8>,
    src: &HostBuffer<'_, u8>,
    n: u64,
) -> Result<(), Error> {
    copy_cycles(ctx, stream, dst, src, n)
}

/// The loop, also run once (uncounted) as the warm-up (see `event_cycles`).
#[inline(never)]
fn copy_cycles(
    ctx: &Context<'_>,
    stream: &Stream<'_>,
    dst: &mut DeviceBuffer<'_, u8>,
    src: &HostBuffer<'_, u8>,
    n: u64,
) -> Result<(), Error> {
    for _ in 0..n {
        typed_copy(ctx, stream, dst, src)?;
    }
    Ok(())
}

/// Counted by callgrind: N callback launches (each synchronised), nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn typed_callbacks(stream: &Subscribed<'_, '_>, n: u64) -> Result<(), Error> {
    callback_cycles(stream, n)
}

/// The loop, also run once (uncounted) as the warm-up (see `event_cycles`).
#[inline(never)]
fn callback_cycles(stream: &Subscribed<'_, '_>, n: u64) -> Result<(), Error> {
    for _ in 0..n {
        typed_callback(stream)?;
    }
    Ok(())
}

/// Counted by callgrind: N cycles of D callback launches, then one synchronisation (up to D
/// in flight on the stream), nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn typed_deep_callbacks(stream: &Subscribed<'_, '_>, depth: u32, n: u64) -> Result<(), Error> {
    deep_callback_cycles(stream, depth, n)
}

/// The loop, also run once (uncounted) as the warm-up.
#[inline(never)]
fn deep_callback_cycles(stream: &Subscribed<'_, '_>, depth: u32, n: u64) -> Result<(), Error> {
    for _ in 0..n {
        for _ in 0..depth {
            stream.launch(CallbackMode::Blocking, || {})?;
        }
        stream.synchronize()?;
    }
    Ok(())
}

/// Counted by callgrind: N frames of the double-buffered pipeline, nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn typed_pipeline(frames: &mut pipeline::TypedLoop<'_>, first: u64, n: u64) -> Result<(), Error> {
    pipeline_cycles(frames, first, n)
}

/// The loop, also run (uncounted) as the warm-up that fills every slot.
#[inline(never)]
fn pipeline_cycles(frames: &mut pipeline::TypedLoop<'_>, first: u64, n: u64) -> Result<(), Error> {
    for frame in first..first + n {
        frames.frame(frame)?;
    }
    Ok(())
}

/// Counted by callgrind: N frames of the JPEG pipeline, nothing else.
#[unsafe(no_mangle)]
#[inline(never)]
fn typed_jpeg_pipeline(frames: &mut jpeg_pipeline::TypedJpegLoop<'_>, n: u64) -> Result<(), Error> {
    jpeg_pipeline_cycles(frames, n)
}

/// The loop, also run (uncounted) as the warm-up that fills every slot.
#[inline(never)]
fn jpeg_pipeline_cycles(
    frames: &mut jpeg_pipeline::TypedJpegLoop<'_>,
    n: u64,
) -> Result<(), Error> {
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
    let acl = Acl::init()?;
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    match which.as_str() {
        "events" => {
            let first: Event<'_, Reset> = ctx.create_event()?.into();
            let event = event_cycles(first, &s1, &s2, 1)?;
            typed_events(event, &s1, &s2, n)?.destroy()?;
        }
        "events_direct" => {
            let first: Event<'_, Reset> = ctx.create_event()?.into();
            let event = event_cycles_direct(first, &s1, &s2, 1)?;
            typed_events_direct(event, &s1, &s2, n)?.destroy()?;
        }
        "events_k" => {
            let k: usize = args.next().map_or(8, |s| s.parse().expect("K"));
            // T: the counted thread and T - 1 more running the same loop on their own streams
            // in the same context, at the same time.
            let t: usize = args.next().map_or(1, |s| s.parse().expect("T"));
            std::thread::scope(|scope| -> Result<(), Error> {
                let others: Vec<_> = (1..t)
                    .map(|_| scope.spawn(|| other_thread_k_cycles(&ctx, k, n)))
                    .collect();
                let mut events = k_events(&ctx, k)?;
                events_k_cycles(&mut events, &s1, &s2, 2)?;
                typed_many_events(&mut events, &s1, &s2, n)?;
                s2.synchronize()?;
                destroy_k_events(events)?;
                for other in others {
                    other.join().expect("a bench thread panicked")?;
                }
                Ok(())
            })?;
        }
        "copies" => {
            let mut dst = ctx.alloc::<u8>(COPY_BYTES, MallocPolicy::HugeFirst)?;
            let src = ctx.alloc_host::<u8>(COPY_BYTES)?;
            copy_cycles(&ctx, &s1, &mut dst, &src, 1)?;
            typed_copies(&ctx, &s1, &mut dst, &src, n)?;
            dst.free()?;
            src.free()?;
        }
        "callbacks" => {
            let report = ReportThread::spawn(&ctx)?;
            let stream = report.subscribe(ctx.create_stream()?)?;
            callback_cycles(&stream, 1)?;
            typed_callbacks(&stream, n)?;
            stream.unsubscribe()?.destroy()?;
            report.stop()?;
        }
        "callbacks_deep" => {
            let depth: u32 = args.next().map_or(64, |s| s.parse().expect("D"));
            let report = ReportThread::spawn(&ctx)?;
            let stream =
                report.subscribe_with_capacity(ctx.create_stream()?, depth.max(1) as usize)?;
            deep_callback_cycles(&stream, depth, 1)?;
            typed_deep_callbacks(&stream, depth, n)?;
            stream.unsubscribe()?.destroy()?;
            report.stop()?;
        }
        "pipeline" => {
            let mut frames = pipeline::TypedLoop::new(&ctx, std::time::Duration::ZERO)?;
            let warm = pipeline::SLOTS as u64;
            pipeline_cycles(&mut frames, 0, warm)?;
            typed_pipeline(&mut frames, warm, n)?;
            frames.finish()?;
        }
        "jpeg_pipeline" => {
            let media = acl.media_v1()?;
            let mut frames = jpeg_pipeline::TypedJpegLoop::new(&ctx, &media)?;
            jpeg_pipeline_cycles(&mut frames, jpeg_pipeline::SLOTS as u64)?;
            let sim = acl.simulator();
            if let Some(sim) = &sim {
                sim.reset_call_counts();
            }
            typed_jpeg_pipeline(&mut frames, n)?;
            if let Some(sim) = &sim {
                jpeg_pipeline::check_calls(sim, n, "typed");
            }
            let checksum = frames.finish()?;
            jpeg_pipeline::check_checksum(checksum, n + jpeg_pipeline::SLOTS as u64, "typed");
        }
        other => {
            panic!(
                "unknown workload {other:?} (events|events_direct|events_k|copies|callbacks|pipeline|jpeg_pipeline)"
            )
        }
    }
    s1.destroy()?;
    s2.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    println!("typed {which} n={n}: done");
    Ok(())
}
