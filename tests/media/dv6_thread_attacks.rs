//! DV6 seen from other threads and other contexts, and the JPEG pipeline moved between
//! threads: a frame written by a task that failed never reports a layout, whichever
//! synchronisation saw the failure; a frame whose task succeeded keeps it when nothing
//! failed; a pipeline used round-robin from three threads never uses its channel from two
//! threads with tasks pending (DV4); its `destroy` returns the errors of releasing its
//! frames and loses nothing; the typed JPEG header reader agrees with the runtime's.
//! Each test asserts the correct behaviour; one that exposes a defect is kept, ignored,
//! with the defect named.

use crate::common::{assert_luma, ends_clean, jpeg};
use crate::support;

use std::sync::mpsc;
use std::time::Duration;

use ascend_typestate::{
    FrameLayout, JpegConfig, JpegHeader, JpegPipeline, JpegdVpc, PipelineConfig, PixelFormat, Vpc,
};
use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
use support::DropErrors;
use support::sim::Session;

/// A task error the simulator reports when the next task on a stream runs (P3b).
const TASK_FAILURE: i32 = 507_000;

fn target() -> FrameLayout {
    FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap()
}

/// Two contexts on device 0: a decode of the first fails, and the second context's device
/// synchronisation (`aclrtSynchronizeDevice` waits for, and reports, every stream of the
/// device) sees the failure first, from the body's thread or from another one. The scope's
/// own synchronisation then succeeds: the frame must still report no picture.
#[test]
fn dv6_a_failure_seen_by_another_contexts_device_synchronisation_forgets_the_layout() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let other = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        input.load(&jpeg(128, 96, false)).unwrap();
        for on_another_thread in [true, false] {
            session
                .sim
                .inject_task_failure(stream.as_raw(), TASK_FAILURE);
            let mut seen = None;
            let outcome = ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                let synchronized = if on_another_thread {
                    std::thread::scope(|s| s.spawn(|| other.synchronize_device()).join()).unwrap()
                } else {
                    other.synchronize_device()
                };
                seen = Some(synchronized.is_err());
                Ok(())
            });
            assert_eq!(seen, Some(true), "the other context's device sync saw it");
            assert!(outcome.is_ok(), "reported once, already: {outcome:?}");
            assert_eq!(
                decoded.layout(),
                None,
                "another thread: {on_another_thread}: the layout of a decode that failed"
            );
        }
        drop((channel, input, decoded, stream));
        drop(media);
        other.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// The same context's device synchronisation, from another thread while the body waits,
/// and an event recorded after the decode, synchronised on another thread: each sees the
/// failure first, and the frame reports no picture.
#[test]
fn dv6_a_failure_seen_on_another_thread_of_the_same_context_forgets_the_layout() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        input.load(&jpeg(128, 96, false)).unwrap();
        for by_event in [false, true] {
            session
                .sim
                .inject_task_failure(stream.as_raw(), TASK_FAILURE);
            let mut seen = None;
            let outcome = ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                let synchronized = if by_event {
                    let event = ctx.create_event()?.record(&stream)?;
                    std::thread::scope(|s| s.spawn(move || event.synchronize()).join()).unwrap()
                } else {
                    let ctx = &ctx;
                    std::thread::scope(|s| s.spawn(move || ctx.synchronize_device()).join())
                        .unwrap()
                };
                seen = Some(synchronized.is_err());
                Ok(())
            });
            assert_eq!(seen, Some(true), "the other thread saw the failure");
            // An event reports the error its record captured; the stream still has it.
            assert_eq!(outcome.is_err(), by_event, "{outcome:?}");
            assert_eq!(
                decoded.layout(),
                None,
                "by an event: {by_event}: the layout of a decode that failed"
            );
        }
    }
    ends_clean(session);
}

/// Three scopes nested, each with its own stream and frame, the innermost synchronising
/// the outermost's stream (an `Event` recorded after the decode), then the body panics:
/// every frame written while the failure was pending reports no picture, the panic
/// reaches the caller, and nothing is left.
#[test]
fn dv6_three_nested_scopes_and_a_panic_after_the_failure_was_seen() {
    let session = Session::start();
    let errors = DropErrors::capture();
    support::quiet_panics(&["the body panics after the failure was seen"]);
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let streams: Vec<_> = (0..3).map(|_| ctx.create_stream().unwrap()).collect();
        let mut jpegd = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut vpc1 = ctx.create_media_channel::<Vpc>(&media).unwrap();
        let mut vpc2 = ctx.create_media_channel::<Vpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        let mut middle = ctx.alloc_frame(&media, target().byte_len()).unwrap();
        let mut inner = ctx.alloc_frame(&media, target().byte_len()).unwrap();
        input.load(&jpeg(128, 96, false)).unwrap();
        session
            .sim
            .inject_task_failure(streams[0].as_raw(), TASK_FAILURE);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ctx.async_scope(|outer| {
                let tasks = outer.media(&mut jpegd, &streams[0])?;
                let picture = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                ctx.async_scope(|mid| {
                    let tasks = mid.media(&mut vpc1, &streams[1])?;
                    tasks.resize(picture, &mut middle, target())?;
                    ctx.async_scope(|innermost| {
                        let tasks = innermost.media(&mut vpc2, &streams[2])?;
                        tasks.resize(picture, &mut inner, target())?;
                        let event = ctx.create_event()?.record(&streams[0])?;
                        assert!(event.synchronize().is_err(), "the decode failed");
                        Ok(())
                    })
                })?;
                panic!("the body panics after the failure was seen");
                #[allow(unreachable_code)]
                Ok(())
            })
        }));
        assert!(panicked.is_err(), "the panic reaches the caller");
        assert_eq!(decoded.layout(), None, "the decode failed");
        assert_eq!(middle.layout(), None, "resized from a failed decode");
        assert_eq!(inner.layout(), None, "resized from a failed decode");
    }
    // The outer stream's error, reported by its synchronisation on the panic's way out.
    assert_eq!(errors.take().len(), 1);
    ends_clean(session);
}

/// Nothing fails in the context (two contexts on two devices, the other's tasks failing
/// and its synchronisations reporting it): every frame of the first context keeps its
/// layout and the right picture, in scopes that end on every path but a failed one.
#[test]
fn dv6_no_failure_in_the_context_forgets_nothing() {
    let session = Session::start();
    {
        let zero = session.acl().set_device(0).unwrap();
        let one = session.acl().set_device(1).unwrap();
        let ctx = zero.create_context().unwrap();
        let other = one.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let other_stream = other.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        input.load(&jpeg(128, 96, false)).unwrap();
        for round in 0..4 {
            let outcome = ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                if round % 2 == 1 {
                    scope.synchronize(&stream)?;
                }
                Ok(())
            });
            outcome.unwrap();
            let layout = decoded.layout().expect("its task succeeded");
            let mut bytes = vec![0u8; layout.byte_len()];
            ctx.copy(&mut bytes[..], &decoded).unwrap();
            assert_luma(&bytes, 128, 96, layout.width_stride());
        }
        drop((channel, input, decoded, stream, other_stream));
        drop(media);
        other.destroy().unwrap();
        ctx.destroy().unwrap();
        one.reset().unwrap();
        zero.reset().unwrap();
    }
    ends_clean(session);
}

/// A `side` x `side` JPEG (4:2:0) whose top half (or left half) is white, the rest black.
fn halves(side: u16, top: bool) -> Vec<u8> {
    let side_us = usize::from(side);
    let pixels: Vec<u8> = (0..side_us)
        .flat_map(|y| (0..side_us).map(move |x| (x, y)))
        .flat_map(|(x, y)| {
            let white = if top {
                y < side_us / 2
            } else {
                x < side_us / 2
            };
            [if white { 255u8 } else { 0 }; 3]
        })
        .collect();
    let mut out = Vec::new();
    let mut encoder = Encoder::new(&mut out, 95);
    encoder.set_sampling_factor(SamplingFactor::R_4_2_0);
    encoder
        .encode(&pixels, side, side, ColorType::Rgb)
        .expect("encode the fixture");
    out
}

/// Whether the white half of a 32 x 32 NV12 picture is the top one (`None`: neither).
fn white_top(nv12: &[u8]) -> Option<bool> {
    let mean = |rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| {
        let n = rows.len() * cols.len();
        let sum: usize = rows
            .flat_map(|r| cols.clone().map(move |c| usize::from(nv12[r * 32 + c])))
            .sum();
        sum / n
    };
    let (a, b) = (0..13, 19..32);
    let (tl, tr, bl) = (
        mean(a.clone(), a.clone()),
        mean(a.clone(), b.clone()),
        mean(b, a),
    );
    match (tl > 200, tr > 200, bl > 200) {
        (true, true, false) => Some(true),
        (true, false, true) => Some(false),
        _ => None,
    }
}

/// A JPEG pipeline handed round-robin between three threads, a frame submitted on each turn
/// while earlier ones are in flight (their kernels sleep), some kernels failing when they
/// run: the channel is never used from two threads with tasks pending (no DV4 finding),
/// every output handed out is its own frame's picture, a frame whose kernel failed is never
/// handed out, and nothing is left.
#[test]
fn dv4_dv6_a_jpeg_pipeline_moved_round_robin_between_three_threads() {
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let files = [halves(64, true), halves(64, false)];
        let pipeline: JpegPipeline<'_, u8> = ctx
            .create_jpeg_pipeline(
                &media,
                PipelineConfig::new(64 * 1024, target().byte_len()).slots(3),
                JpegConfig::new(target()).max_picture(200, 200),
            )
            .unwrap();
        const FRAMES: u64 = 30;
        let expected = |n: u64| n % 3 != 1;
        let failing = |n: u64| n % 7 == 3;
        let sim = &session.sim;
        let files = &files;
        // What each thread saw: (frame, output top or not) and the failures reported.
        type Turn<'a> = Option<(JpegPipeline<'a, u8>, u64)>;
        let (seen, failures, pipeline) = std::thread::scope(|s| {
            let (senders, receivers): (Vec<_>, Vec<_>) =
                (0..3).map(|_| mpsc::channel::<Turn<'_>>()).unzip();
            let (back, done) = mpsc::channel();
            let mut handles = Vec::new();
            for (me, receiver) in receivers.into_iter().enumerate() {
                let next = senders[(me + 1) % 3].clone();
                let back = back.clone();
                handles.push(s.spawn(move || {
                    let mut seen = Vec::new();
                    let mut failures = 0;
                    while let Ok(Some((mut pipeline, n))) = receiver.recv() {
                        if n == FRAMES {
                            failures += pipeline.wait_all().err().map_or(0, |_| 1);
                            while pipeline.wait_all().is_err() {
                                failures += 1;
                            }
                            for (done, out) in pipeline.outputs() {
                                seen.push((done, white_top(out)));
                            }
                            back.send(pipeline).unwrap();
                            continue;
                        }
                        let mut tries = 0;
                        let submitted = loop {
                            tries += 1;
                            assert!(tries < 10, "frame {n}: no slot after {tries} tries");
                            let mut slot = match pipeline.next_slot() {
                                Ok(slot) => slot,
                                Err(_) => {
                                    failures += 1;
                                    continue;
                                }
                            };
                            if let Some((done, out)) = slot.output() {
                                seen.push((done, white_top(out)));
                            }
                            slot.load_jpeg(&files[usize::from(!expected(n))]).unwrap();
                            let outcome = slot.submit(|launch| {
                                sim.sleep_kernel(launch.stream().as_raw(), 2_000);
                                if failing(n) {
                                    sim.inject_task_failure(launch.stream().as_raw(), TASK_FAILURE);
                                }
                                launch.simulated_map(Duration::ZERO, |x| x)
                            });
                            match outcome {
                                Ok(frame) => break frame,
                                Err(_) => failures += 1,
                            }
                        };
                        seen.push((u64::MAX - submitted, None));
                        next.send(Some((pipeline, n + 1))).unwrap();
                    }
                    (seen, failures)
                }));
            }
            senders[0].send(Some((pipeline, 0))).unwrap();
            let pipeline = done.recv().unwrap();
            for sender in &senders {
                sender.send(None).unwrap();
            }
            let mut seen = Vec::new();
            let mut failures = 0;
            for handle in handles {
                let (s, f) = handle.join().unwrap();
                seen.extend(s);
                failures += f;
            }
            (seen, failures, pipeline)
        });
        // The submissions' numbers (stored as MAX - frame) in the order submitted.
        let mut numbers: Vec<u64> = seen
            .iter()
            .filter(|(n, _)| *n > FRAMES * 10)
            .map(|(n, _)| u64::MAX - n)
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len() as u64, FRAMES, "every frame submitted once");
        let outputs: Vec<_> = seen.iter().filter(|(n, _)| *n <= FRAMES * 10).collect();
        assert!(failures > 0, "the failing kernels were reported");
        // Frame numbers are those `submit` returned: the n-th submission is frame n.
        for (frame, top) in &outputs {
            assert!(
                !failing(*frame),
                "frame {frame}, whose kernel failed, handed out"
            );
            assert_eq!(
                *top,
                Some(expected(*frame)),
                "frame {frame}: another frame's picture"
            );
        }
        assert!(outputs.len() >= 10, "{outputs:?}");
        pipeline.destroy().unwrap();
    }
    drop(errors.take());
    ends_clean(session);
}

/// `destroy` while `acldvppFree`, `acldvppDestroyPicDesc` or `acldvppDestroyChannel` fails
/// once: the error is returned (its code in it), the `Drop` fallback's second try releases
/// it, and nothing is leaked, released twice or found.
#[test]
fn dv10_a_jpeg_pipeline_destroyed_while_a_release_fails_once() {
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let files = [halves(64, true), halves(64, false)];
        for call in [
            "acldvppFree",
            "acldvppDestroyPicDesc",
            "acldvppDestroyChannel",
        ] {
            for skip in [0, 1, 5] {
                let mut pipeline: JpegPipeline<'_, u8> = ctx
                    .create_jpeg_pipeline(
                        &media,
                        PipelineConfig::new(64 * 1024, target().byte_len()).slots(2),
                        JpegConfig::new(target()).max_picture(200, 200),
                    )
                    .unwrap();
                for file in &files {
                    let mut slot = pipeline.next_slot().unwrap();
                    slot.load_jpeg(file).unwrap();
                    slot.submit(|launch| launch.simulated_map(Duration::ZERO, |x| x))
                        .unwrap();
                }
                session.sim.inject_fault_at(call, 507_899, skip, 1);
                let destroyed = pipeline.destroy();
                session.sim.clear_faults();
                let reported = errors.take();
                if call == "acldvppDestroyChannel" {
                    // Only one channel: a fault after `skip` > 0 calls never fires. The
                    // channel's destroy tries again at once, and reports the failure.
                    destroyed.unwrap();
                    assert_eq!(reported.len(), usize::from(skip == 0), "{reported:?}");
                } else {
                    let err = destroyed.expect_err(call);
                    assert!(err.to_string().contains("507899"), "{call}: {err}");
                }
                assert_eq!(session.sim.live_objects(), 0, "{call} after {skip}");
                assert!(
                    session.sim.findings().is_empty(),
                    "{call} after {skip}: {:#?}",
                    session.sim.findings()
                );
            }
        }
    }
    ends_clean(session);
}

/// Headers derived from a real file by changing one byte of its header segments: every one
/// the typed reader accepts is read by the runtime (`acldvppJpegGetImageInfoV2`, through
/// `JpegBuffer::load`), with the same frame size.
#[test]
fn dv7_every_header_the_typed_reader_accepts_the_runtime_reads() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let base = jpeg(64, 48, false);
        // Up to the scan's data: the header segments.
        let sos = base.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
        let header_end = sos + 2 + usize::from(u16::from_be_bytes([base[sos + 2], base[sos + 3]]));
        let values = [
            0x00, 0x01, 0x02, 0x08, 0x11, 0x12, 0x21, 0x22, 0x41, 0xC0, 0xC1, 0xC2, 0xC4, 0xC8,
            0xCC, 0xD0, 0xD8, 0xD9, 0xDA, 0xDB, 0xDC, 0xE1, 0xFE, 0xFF,
        ];
        let mut accepted = 0;
        for at in 2..header_end {
            for &value in &values {
                let mut file = base.clone();
                if file[at] == value {
                    continue;
                }
                file[at] = value;
                let Ok(header) = JpegHeader::parse(&file) else {
                    continue;
                };
                accepted += 1;
                match input.load(&file) {
                    Ok(loaded) => assert_eq!(
                        (loaded.width(), loaded.height()),
                        (header.width(), header.height()),
                        "byte {at} set to {value:#04x}"
                    ),
                    Err(error) => panic!("byte {at} set to {value:#04x}: accepted, then {error}"),
                }
            }
        }
        assert!(accepted > 0);
        // Markers the fast path leaves to the general reader, inserted after the SOI:
        // fill bytes, a TEM and a restart marker (no length), DAC and JPG segments, a DNL
        // and an extension segment.
        let inserts: [&[u8]; 7] = [
            &[0xFF, 0xFF, 0xFF, 0xFE, 0, 3, 0],
            &[0xFF, 0x01],
            &[0xFF, 0xD3],
            &[0xFF, 0xCC, 0, 4, 0, 0],
            &[0xFF, 0xC8, 0, 2],
            &[0xFF, 0xDC, 0, 4, 0, 48],
            &[0xFF, 0xF7, 0, 2],
        ];
        let mut read = 0;
        for insert in inserts {
            let mut file = base[..2].to_vec();
            file.extend_from_slice(insert);
            file.extend_from_slice(&base[2..]);
            let Ok(header) = JpegHeader::parse(&file) else {
                continue;
            };
            read += 1;
            match input.load(&file) {
                Ok(loaded) => assert_eq!(
                    (loaded.width(), loaded.height()),
                    (header.width(), header.height()),
                    "{insert:02x?}"
                ),
                Err(error) => panic!("{insert:02x?}: accepted, then {error}"),
            }
        }
        assert_eq!(read, inserts.len(), "every insert is a valid header");
    }
    ends_clean(session);
}

/// `destroy` while `acldvppDestroyChannel` fails for good, frames having run: the error is
/// returned (not only reported), everything else is released, and exactly the channel and
/// its description are kept (counted as live, never destroyed twice, no finding). In a
/// child process: what could not be released is kept.
#[test]
fn dv10_a_jpeg_pipeline_whose_channel_cannot_be_destroyed_returns_the_error() {
    if support::child::ran_in_child(
        "dv10_a_jpeg_pipeline_whose_channel_cannot_be_destroyed_returns_the_error",
        "ASCEND_TYPESTATE_JPEG_CHANNEL_CHILD",
        "kept as expected",
    ) {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let ctx = session.default_device(0);
    let media = session.acl().media_v1().unwrap();
    let files = [halves(64, true), halves(64, false)];
    let mut pipeline: JpegPipeline<'_, u8> = ctx
        .create_jpeg_pipeline(
            &media,
            PipelineConfig::new(64 * 1024, target().byte_len()).slots(2),
            JpegConfig::new(target()).max_picture(200, 200),
        )
        .unwrap();
    for file in &files {
        let mut slot = pipeline.next_slot().unwrap();
        slot.load_jpeg(file).unwrap();
        slot.submit(|launch| launch.simulated_map(Duration::ZERO, |x| x))
            .unwrap();
    }
    let before = session.sim.live_objects();
    session
        .sim
        .inject_fault_at("acldvppDestroyChannel", 507_899, 0, 1000);
    let destroyed = pipeline.destroy();
    session.sim.clear_faults();
    let err = destroyed.expect_err("the channel cannot be destroyed");
    assert!(err.to_string().contains("507899"), "{err}");
    assert!(!errors.take().is_empty(), "the retries are reported");
    assert!(
        session.sim.findings().is_empty(),
        "{:#?}",
        session.sim.findings()
    );
    let kept = session.sim.live_objects();
    assert!(kept > 0 && kept < before, "kept {kept} of {before}");
    println!("kept as expected");
    std::process::exit(0);
}

/// Frames in flight (their kernels sleeping), then the pipeline is moved to another thread
/// and destroyed there, or dropped there: its channel is never destroyed from a thread
/// other than its user's with tasks pending (no DV4 finding), and nothing is left.
#[test]
fn dv4_a_jpeg_pipeline_ended_on_another_thread_with_frames_in_flight() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let files = [halves(64, true), halves(64, false)];
        for destroy in [true, false] {
            let mut pipeline: JpegPipeline<'_, u8> = ctx
                .create_jpeg_pipeline(
                    &media,
                    PipelineConfig::new(64 * 1024, target().byte_len()).slots(3),
                    JpegConfig::new(target()).max_picture(200, 200),
                )
                .unwrap();
            for n in 0..3 {
                let mut slot = pipeline.next_slot().unwrap();
                slot.load_jpeg(&files[n % 2]).unwrap();
                slot.submit(|launch| {
                    session.sim.sleep_kernel(launch.stream().as_raw(), 20_000);
                    launch.simulated_map(Duration::ZERO, |x| x)
                })
                .unwrap();
            }
            std::thread::scope(|s| {
                s.spawn(move || {
                    if destroy {
                        pipeline.destroy().unwrap();
                    } else {
                        drop(pipeline);
                    }
                })
                .join()
                .unwrap();
            });
            assert!(
                session.sim.findings().is_empty(),
                "destroy: {destroy}: {:#?}",
                session.sim.findings()
            );
        }
    }
    ends_clean(session);
}
