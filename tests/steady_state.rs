//! The steady state of the loops users run creates no runtime object and allocates nothing
//! on the host thread per cycle (for the loops that already reach it):
//! counted with the simulator's per-function call counters and a counting global allocator.
//! A record/wait cycle whose waiting stream is never synchronised keeps its join events
//! bounded too.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use ascend_typestate::{Event, MallocPolicy, Recorded, Stream};
use support::sim::{Session, Sim};

/// Counts the allocations of threads that opted in (the loop's own thread), not those of the
/// test harness or of the simulator (a library with an allocator of its own).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards every call to the system allocator unchanged; the counter is a side
// effect that allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTED.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTED.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The runtime functions that create or destroy objects.
const CREATE_DESTROY: &[&str] = &[
    "aclrtCreateEvent",
    "aclrtCreateEventWithFlag",
    "aclrtDestroyEvent",
    "aclrtCreateStream",
    "aclrtDestroyStream",
    "aclrtCreateContext",
    "aclrtDestroyContext",
    "aclrtMalloc",
    "aclrtFree",
    "aclrtMallocHost",
    "aclrtFreeHost",
];

/// Runs `cycles` cycles of `cycle` after a warm-up, and returns (allocations on this
/// thread, create/destroy calls) made by the counted cycles.
fn measure(sim: &Sim, cycles: usize, mut cycle: impl FnMut()) -> (u64, u64) {
    for _ in 0..10 {
        cycle();
    }
    sim.reset_call_counts();
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTED.with(|c| c.set(true));
    for _ in 0..cycles {
        cycle();
    }
    COUNTED.with(|c| c.set(false));
    let calls = CREATE_DESTROY.iter().map(|f| sim.call_count(f)).sum();
    (ALLOCATIONS.load(Ordering::Relaxed), calls)
}

/// The allocator counts at all (else the zeros below would prove nothing).
#[test]
fn the_counting_allocator_counts() {
    let session = Session::start();
    let (allocations, _) = measure(&session.sim, 10, || {
        std::hint::black_box(Vec::<u8>::with_capacity(16));
    });
    assert_eq!(allocations, 10);
    session.finish();
}

/// A producer/consumer hand-off on device 0's default context: `body` gets the simulator,
/// both streams and the event (recorded on the producer) and gives the event back; then
/// everything is torn down, and nothing may be left alive or found.
fn hand_off<F>(body: F)
where
    F: for<'a> FnOnce(
        &Sim,
        &'a Stream<'a>,
        &'a Stream<'a>,
        Event<'a, Recorded>,
    ) -> Event<'a, Recorded>,
{
    let session = Session::start();
    {
        let device = session.default_device(0);
        let (producer, consumer) = (
            device.create_stream().unwrap(),
            device.create_stream().unwrap(),
        );
        let event = device.create_event().unwrap().record(&producer).unwrap();
        let event = body(&session.sim, &producer, &consumer, event);
        consumer.synchronize().unwrap();
        event.destroy().unwrap();
        producer.destroy().unwrap();
        consumer.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_eq!(
        session.sim.live_objects(),
        0,
        "kept join events end with the context"
    );
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Producer records, consumer waits and resets, both synchronised each cycle (the
/// pipeline's hand-off): no allocation, no runtime object created.
#[test]
fn an_event_hand_off_cycle_allocates_and_creates_nothing_e2_e4() {
    hand_off(|sim, producer, consumer, event| {
        let mut event = Some(event);
        let (allocations, calls) = measure(sim, 1000, || {
            let reset = event.take().unwrap().wait_and_reset(consumer).unwrap();
            consumer.synchronize().unwrap();
            event = Some(reset.record(producer).unwrap());
            producer.synchronize().unwrap();
        });
        assert_eq!((allocations, calls), (0, 0));
        event.unwrap()
    });
}

/// A timing pair re-recorded every frame (E10): nothing created, nothing allocated.
#[test]
fn a_timing_event_cycle_allocates_and_creates_nothing_e10() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let stream = device.create_stream().unwrap();
        let mut start = Some(device.create_event().unwrap().record(&stream).unwrap());
        let mut end = Some(device.create_event().unwrap().record(&stream).unwrap());
        let (allocations, calls) = measure(&session.sim, 1000, || {
            let e = end.take().unwrap();
            e.synchronize().unwrap();
            let s = start.take().unwrap().reset_completed(&stream).unwrap();
            start = Some(s.record(&stream).unwrap());
            end = Some(e.reset_completed(&stream).unwrap().record(&stream).unwrap());
        });
        assert_eq!((allocations, calls), (0, 0));
        start.unwrap().destroy().unwrap();
        end.unwrap().destroy().unwrap();
        stream.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A 4 KiB host-to-device copy in an async scope, synchronised by the scope: nothing
/// created, nothing allocated.
#[test]
fn an_async_copy_cycle_allocates_and_creates_nothing_m1() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let stream = device.create_stream().unwrap();
        let mut host = device.alloc_host::<u8>(4096).unwrap();
        host.fill(7);
        let mut on_device = device.alloc::<u8>(4096, MallocPolicy::HugeFirst).unwrap();
        let (allocations, calls) = measure(&session.sim, 1000, || {
            device
                .async_scope(|scope| {
                    scope.copy(&stream, &mut on_device, &host)?;
                    Ok(())
                })
                .unwrap();
        });
        assert_eq!((allocations, calls), (0, 0));
        on_device.free().unwrap();
        host.free().unwrap();
        stream.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A hand-off whose streams are synchronised only every tenth cycle: the other records are
/// joined after the previous reset (E5) with join events, which the context keeps once a
/// synchronisation shows them done and uses again: nothing created, nothing allocated.
#[test]
fn a_hand_off_synchronised_every_tenth_cycle_reuses_its_join_events_e5_e9() {
    hand_off(|sim, producer, consumer, event| {
        let mut event = Some(event);
        let mut cycle = 0u64;
        let (allocations, calls) = measure(sim, 1000, || {
            cycle += 1;
            let reset = event.take().unwrap().wait_and_reset(consumer).unwrap();
            event = Some(reset.record(producer).unwrap());
            if cycle.is_multiple_of(10) {
                consumer.synchronize().unwrap();
                producer.synchronize().unwrap();
            }
        });
        assert_eq!((allocations, calls), (0, 0));
        event.unwrap()
    });
}

/// When the stream that waits on the joins is never synchronised (E5, E9), only the event
/// (the host reads what it stands for): once 64 join events wait for the stream, the
/// crate queries it (never synchronises it) and, found idle, reuses them, so 100,000 cycles
/// create at most 64 join events, nothing per cycle once there, make no synchronisation the
/// program did not write, and keep memory flat.
#[test]
fn an_unsynchronised_hand_off_cycle_keeps_its_join_events_bounded_e5_e9() {
    hand_off(|sim, producer, consumer, event| {
        let mut event = Some(event);
        let rss_before = resident_kib();
        let (allocations, calls) = measure(sim, 100_000, || {
            let reset = event.take().unwrap().wait_and_reset(consumer).unwrap();
            let recorded = reset.record(producer).unwrap();
            recorded.synchronize().unwrap();
            event = Some(recorded);
        });
        let rss_after = resident_kib();
        assert_eq!(allocations, 0);
        // (`measure` counts from the end of its warm-up.)
        assert_eq!(
            sim.call_count("aclrtSynchronizeStream"),
            0,
            "a hidden synchronisation"
        );
        let queries = sim.call_count("aclrtStreamQuery");
        assert!(
            queries <= 100_000 / 64 + 1,
            "{queries} queries: one per 64 joins at most"
        );
        // The warm-up's 10 cycles created 10; at most 64 in all.
        assert!(calls <= 64 - 10, "{calls} create/destroy calls");
        assert!(
            rss_after < rss_before + 4096,
            "resident memory grew from {rss_before} to {rss_after} KiB"
        );
        event.unwrap()
    });
}

/// A hand-off whose host synchronises nothing at all queues work without bound; the joins
/// it needs stop at the context's join capacity with `Error::JoinCapacity` (E5, E9): no
/// hidden synchronisation, nothing issued for the refused join, nothing lost.
#[test]
fn a_hand_off_that_never_synchronises_stops_at_the_join_capacity_e5_e9() {
    hand_off(|sim, producer, consumer, event| {
        producer.context().set_join_capacity(128).unwrap();
        sim.reset_call_counts();
        let mut event = Some(event);
        let mut refused = None;
        for cycle in 0..10_000 {
            let reset = event.take().unwrap().wait_and_reset(consumer).unwrap();
            let syncs = sim.call_count("aclrtSynchronizeStream");
            match reset.record(producer) {
                Ok(recorded) => event = Some(recorded),
                Err(error) => {
                    // The refused event's own release synchronised its reset's stream (E9).
                    let by_release = sim.call_count("aclrtSynchronizeStream") - syncs;
                    refused = Some((cycle, error, syncs, by_release));
                    break;
                }
            }
        }
        let (cycle, error, syncs, by_release) = refused.expect("the capacity was never reached");
        assert!(
            matches!(
                error,
                ascend_typestate::Error::JoinCapacity { capacity: 128 }
            ),
            "{error:?}"
        );
        assert!(cycle >= 128, "refused after {cycle} cycles");
        assert_eq!(syncs, 0, "a hidden synchronisation");
        assert_eq!(by_release, 1, "the dropped event's release");
        producer.synchronize().unwrap();
        producer
            .context()
            .create_event()
            .unwrap()
            .record(producer)
            .unwrap()
    });
}

/// The resident set size of this process, KiB.
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A callback launch whose closure fits a slot (six words) allocates nothing: an `Arc`
/// clone and a number are captured, the callback runs, the stream is synchronised.
#[test]
fn a_callback_cycle_allocates_and_creates_nothing_c1() {
    use ascend_typestate::{CallbackMode, ReportThread};
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    let session = Session::start();
    {
        let device = session.default_device(0);
        let report = ReportThread::spawn(&device).unwrap();
        let stream = report.subscribe(device.create_stream().unwrap()).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let mut frame = 0usize;
        let (allocations, calls) = measure(&session.sim, 1000, || {
            let ran = Arc::clone(&ran);
            frame += 1;
            let this_frame = frame;
            stream
                .launch(CallbackMode::NonBlocking, move || {
                    ran.fetch_add(this_frame.min(1), Ordering::Relaxed);
                })
                .unwrap();
            stream.synchronize().unwrap();
        });
        assert_eq!((allocations, calls), (0, 0));
        assert_eq!(ran.load(Ordering::Relaxed), 1010);
        stream.unsubscribe().unwrap().destroy().unwrap();
        report.stop().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Launches allocate nothing at any depth: 1, 32, 64 and 256 callbacks in flight (a blocking
/// callback holds the stream), on a subscription created for 256. One more is
/// `Error::CallbackCapacity`, its closure dropped and never run; a closure too large for a
/// slot is boxed but counted against the capacity too. Every launched one runs once.
#[test]
fn callbacks_in_flight_allocate_nothing_at_any_depth_c1() {
    use ascend_typestate::{CallbackMode, Error, ReportThread};
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let session = Session::start();
    {
        let device = session.default_device(0);
        let report = ReportThread::spawn(&device).unwrap();
        for depth in [1usize, 32, 64, 256] {
            let stream = report
                .subscribe_with_capacity(device.create_stream().unwrap(), 256)
                .unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            let gate = Arc::new(std::sync::Barrier::new(2));
            let g = Arc::clone(&gate);
            stream
                .launch(CallbackMode::Blocking, move || {
                    g.wait();
                })
                .unwrap();
            ALLOCATIONS.store(0, Ordering::Relaxed);
            COUNTED.with(|c| c.set(true));
            for _ in 1..depth {
                let ran = Arc::clone(&ran);
                stream
                    .launch(CallbackMode::NonBlocking, move || {
                        ran.fetch_add(1, Ordering::Relaxed);
                    })
                    .unwrap();
            }
            COUNTED.with(|c| c.set(false));
            assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0, "depth {depth}");
            assert_eq!(stream.pending_callbacks(), depth);
            if depth == 256 {
                // Full: refused with a typed error; the closure is dropped, never run.
                let dropped = Arc::new(AtomicUsize::new(0));
                let counted = Counted(Arc::clone(&dropped));
                let ran_too = Arc::clone(&ran);
                let refused = stream.launch(CallbackMode::NonBlocking, move || {
                    let _keep = &counted;
                    ran_too.fetch_add(1000, Ordering::Relaxed);
                });
                assert!(
                    matches!(refused, Err(Error::CallbackCapacity { capacity: 256 })),
                    "{refused:?}"
                );
                assert_eq!(dropped.load(Ordering::Relaxed), 1, "dropped once");
                let big = [1u8; 256];
                let refused = stream.launch(CallbackMode::NonBlocking, move || {
                    std::hint::black_box(big);
                });
                assert!(matches!(refused, Err(Error::CallbackCapacity { .. })));
            }
            gate.wait();
            stream.synchronize().unwrap();
            assert_eq!(ran.load(Ordering::Relaxed), depth - 1, "each ran once");
            // A closure too large for a slot still runs (boxed, in a slot).
            let ran_big = Arc::clone(&ran);
            let big = [1u8; 256];
            stream
                .launch(CallbackMode::NonBlocking, move || {
                    ran_big.fetch_add(usize::from(big[255]), Ordering::Relaxed);
                })
                .unwrap();
            stream.synchronize().unwrap();
            assert_eq!(ran.load(Ordering::Relaxed), depth);
            stream.unsubscribe().unwrap().destroy().unwrap();
        }
        // A capacity of 0 or beyond the maximum is refused, the stream given back.
        match report.try_subscribe_with_capacity(device.create_stream().unwrap(), 0) {
            Err(failed) => {
                assert!(matches!(failed.error, Error::InvalidArgument(_)));
                failed.value.destroy().unwrap();
            }
            Ok(_) => panic!("capacity 0 accepted"),
        }
        report.stop().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// The pipeline's loop (H2D, kernel, D2H on two streams, per-slot events): 1,000 frames make
/// no create or destroy call and no allocation on the loop's thread (M3, E10).
#[test]
fn a_pipeline_frame_allocates_and_creates_nothing_m3() {
    fn twice(x: f32) -> f32 {
        x * 2.0
    }
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut pipeline = device
            .create_pipeline::<f32, f32>(ascend_typestate::PipelineConfig::new(1024, 1024))
            .unwrap();
        let mut seen = 0.0f32;
        let (allocations, calls) = measure(&session.sim, 1000, || {
            let mut slot = pipeline.next_slot().unwrap();
            if let Some((_, output)) = slot.output() {
                seen += output[0];
            }
            slot.input_mut()[0] = 1.0;
            slot.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, twice))
                .unwrap();
        });
        assert_eq!((allocations, calls), (0, 0));
        assert!(seen > 0.0);
        pipeline.destroy().unwrap();
        device.reset().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A media frame: a JPEG loaded, decoded, resized and fed to a model without a copy, its
/// top-1 copied back: no allocation on this thread, no object created or destroyed (DV3:
/// the channel, buffers and frames serve every frame; DV11: the model keeps its datasets
/// over the same frame).
#[test]
fn a_media_frame_allocates_and_creates_nothing_dv3_dv11() {
    use ascend_typestate::simulator::{SimDtype, SimModel};
    use ascend_typestate::{FrameLayout, JpegdVpc, MallocPolicy, PixelFormat};
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
    let path = support::scratch_dir("steady_state_media").join("m.model");
    SimModel::new(SimDtype::U8, &[1, target.byte_len()], SimDtype::I32, &[1])
        .argmax(target.byte_len())
        .write(&path)
        .unwrap();
    let pixels: Vec<u8> = (0..96 * 64).flat_map(|_| [200u8, 100, 50]).collect();
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 90)
        .encode(&pixels, 96, 64, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, target.byte_len()).unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let mut top = ctx.alloc::<i32>(1, MallocPolicy::HugeFirst).unwrap();
        let mut class = [0i32];
        let (allocations, calls) = measure(&session.sim, 200, || {
            input.load(&jpeg).unwrap();
            ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                let picture = tasks.resize(frame, &mut resized, target)?;
                scope.execute(&stream, &mut model, [picture.into()], [(&mut top).into()])?;
                Ok(())
            })
            .unwrap();
            ctx.copy(&mut class[..], &top).unwrap();
        });
        let media_calls: u64 = [
            "acldvppMalloc",
            "acldvppFree",
            "acldvppCreatePicDesc",
            "acldvppDestroyPicDesc",
            "acldvppCreateChannel",
            "acldvppCreateResizeConfig",
            "aclmdlCreateDataset",
            "aclCreateDataBuffer",
        ]
        .iter()
        .map(|f| session.sim.call_count(f))
        .sum();
        assert_eq!((allocations, calls, media_calls), (0, 0, 0));
        assert_eq!(session.sim.call_count("acldvppJpegDecodeAsync"), 200);
        model.unload().unwrap();
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}
