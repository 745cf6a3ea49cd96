//! Attacks on the JPEG pipeline (DV4-DV11 with M1-M3, E9, MD1, MD10, D3): safe programs that
//! try to make it race, read a stale description, free under a task, leak or lose an error.
//! Each test asserts the correct behaviour; one that exposes a defect is kept, ignored, with
//! the defect named.

use crate::common::ends_clean;
use crate::pipeline::model_file;
use crate::support;

use std::time::Duration;

use ascend_typestate::{
    Error, FrameLayout, JpegConfig, JpegPipeline, JpegdVpc, PipelineConfig, PixelFormat,
};
use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
use support::DropErrors;
use support::sim::Session;

/// The kernel's picture: SIDE x SIDE NV12 (strides equal to the sizes).
const SIDE: u32 = 32;

fn target() -> FrameLayout {
    FrameLayout::resized(SIDE, SIDE, PixelFormat::Nv12).unwrap()
}

/// A `width` x `height` JPEG (4:2:0) whose left half is white and right half black, as
/// stored; with `orientation` written in an APP1 Exif segment (big-endian TIFF) if given.
fn split(width: u16, height: u16, orientation: Option<u16>) -> Vec<u8> {
    split_sampled(width, height, orientation, Some(SamplingFactor::R_4_2_0))
}

/// As [`split`], sampled as `sampling` says (`None`: a gray, one-component JPEG).
fn split_sampled(
    width: u16,
    height: u16,
    orientation: Option<u16>,
    sampling: Option<SamplingFactor>,
) -> Vec<u8> {
    let channels = if sampling.is_some() { 3 } else { 1 };
    let pixels: Vec<u8> = (0..usize::from(height))
        .flat_map(|_| 0..usize::from(width))
        .flat_map(|x| {
            let v = if x < usize::from(width) / 2 { 255u8 } else { 0 };
            std::iter::repeat_n(v, channels)
        })
        .collect();
    let mut out = Vec::new();
    let mut encoder = Encoder::new(&mut out, 95);
    let colour = match sampling {
        Some(factor) => {
            encoder.set_sampling_factor(factor);
            ColorType::Rgb
        }
        None => ColorType::Luma,
    };
    encoder
        .encode(&pixels, width, height, colour)
        .expect("encode the fixture");
    match orientation {
        None => out,
        Some(o) => {
            let mut app1 = vec![0xFF, 0xE1, 0, 34];
            app1.extend_from_slice(b"Exif\0\0");
            app1.extend_from_slice(b"MM\0\x2A\0\0\0\x08"); // TIFF header, IFD at 8
            app1.extend_from_slice(&[0, 1]); // one entry
            app1.extend_from_slice(&[0x01, 0x12, 0, 3, 0, 0, 0, 1]); // Orientation, SHORT, 1
            app1.extend_from_slice(&o.to_be_bytes());
            app1.extend_from_slice(&[0, 0]);
            app1.extend_from_slice(&[0, 0, 0, 0]); // no next IFD
            assert_eq!(app1.len(), 2 + 34);
            let mut with = out[..2].to_vec();
            with.extend_from_slice(&app1);
            with.extend_from_slice(&out[2..]);
            with
        }
    }
}

/// Where the white half of a displayed picture is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bright {
    Left,
    Top,
    Right,
    Bottom,
}

/// The white half of the resized picture `nv12` (SIDE x SIDE), from its quadrants' luma.
fn bright_half(nv12: &[u8]) -> Bright {
    let side = SIDE as usize;
    let mean = |rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| {
        let n = rows.len() * cols.len();
        let sum: usize = rows
            .flat_map(|r| cols.clone().map(move |c| usize::from(nv12[r * side + c])))
            .sum();
        sum / n
    };
    let h = side / 2;
    // Away from the edge between the halves (the resize blends it).
    let (a, b) = (0..h - 3, h + 3..side);
    let tl = mean(a.clone(), a.clone());
    let tr = mean(a.clone(), b.clone());
    let bl = mean(b.clone(), a.clone());
    let br = mean(b.clone(), b.clone());
    match (tl > 200, tr > 200, bl > 200, br > 200) {
        (true, false, true, false) if br < 50 && tr < 50 => Bright::Left,
        (true, true, false, false) if bl < 50 && br < 50 => Bright::Top,
        (false, true, false, true) if tl < 50 && bl < 50 => Bright::Right,
        (false, false, true, true) if tl < 50 && tr < 50 => Bright::Bottom,
        other => panic!("neither half is white: {other:?} ({tl} {tr} {bl} {br})"),
    }
}

/// The kernel of the tests that read the picture back: the identity, byte for byte.
fn same(x: u8) -> u8 {
    x
}

fn picture_pipeline<'a>(
    ctx: &'a ascend_typestate::Context<'a>,
    media: &'a ascend_typestate::MediaV1<'_>,
    slots: usize,
) -> JpegPipeline<'a, u8> {
    ctx.create_jpeg_pipeline::<u8>(
        media,
        PipelineConfig::new(64 * 1024, target().byte_len()).slots(slots),
        JpegConfig::new(target()).max_picture(200, 200),
    )
    .unwrap()
}

/// The frames of the picture tests: a file, and where its white half is once displayed.
/// Stored sizes vary; an EXIF orientation 6 (turn 90 degrees clockwise) puts the stored left
/// half at the top and swaps the sizes, so that a 96 x 64 file turned decodes to the same
/// layout as a 64 x 96 one that is not (DV7, DV8).
fn picture_frames() -> Vec<(Vec<u8>, Bright, (u32, u32))> {
    vec![
        (split(96, 64, Some(6)), Bright::Top, (64, 96)),
        (split(64, 96, None), Bright::Left, (64, 96)),
        (split(64, 96, Some(1)), Bright::Left, (64, 96)),
        (split(200, 40, None), Bright::Left, (200, 40)),
        (split(40, 200, Some(6)), Bright::Top, (200, 40)),
        (split(33, 35, None), Bright::Left, (32, 34)),
        (split(130, 98, Some(6)), Bright::Top, (98, 130)),
        (split(98, 130, None), Bright::Left, (98, 130)),
        // Odd sizes turned: 33 x 35 displays as 35 x 33, decoded 34 x 32.
        (split(33, 35, Some(6)), Bright::Top, (34, 32)),
        (split(96, 64, Some(8)), Bright::Bottom, (64, 96)),
        (split(64, 96, Some(3)), Bright::Right, (64, 96)),
        (
            split_sampled(96, 64, Some(6), Some(SamplingFactor::R_4_2_2)),
            Bright::Top,
            (64, 96),
        ),
        (
            split_sampled(64, 96, None, Some(SamplingFactor::R_4_4_4)),
            Bright::Left,
            (64, 96),
        ),
        (split_sampled(96, 64, Some(6), None), Bright::Top, (64, 96)),
    ]
}

/// Frames of changing sizes, EXIF-turned or not, across 1 to 4 slots, some submitted again
/// without a new file: each frame's picture is the one its file displays (no description
/// left from another size or orientation), and `Slot::jpeg` says the turned size (DV6-DV8,
/// DV11, M3).
#[test]
fn dv7_dv8_turned_and_resized_frames_of_many_sizes_read_right() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let frames = picture_frames();
        for slots in 1..=4 {
            let mut pipeline = picture_pipeline(&ctx, &media, slots);
            let mut expected = Vec::new();
            let mut seen = 0;
            for n in 0..(3 * frames.len() as u64) {
                let mut slot = pipeline.next_slot().unwrap();
                if let Some((done, output)) = slot.output() {
                    assert_eq!(bright_half(output), expected[done as usize], "frame {done}");
                    seen += 1;
                }
                // Every third frame is submitted again without a new file (once its slot
                // has one): it decodes the slot's last file, that of frame `n - slots`
                // (every submission succeeds: frame `f` goes to slot `f % slots`).
                if n % 3 == 2 && slot.jpeg().is_some() {
                    let last = slot.jpeg().unwrap();
                    assert!(frames.iter().any(|f| (last.width(), last.height()) == f.2));
                    expected.push(expected[n as usize - slots]);
                } else {
                    let which = (n as usize * 5 + slots) % frames.len();
                    let (file, bright, size) = &frames[which];
                    slot.load_jpeg(file).unwrap();
                    let decoded = slot.jpeg().unwrap();
                    assert_eq!((decoded.width(), decoded.height()), *size, "file {which}");
                    expected.push(*bright);
                }
                slot.submit(|launch| launch.simulated_map(Duration::ZERO, same))
                    .unwrap();
            }
            pipeline.wait_all().unwrap();
            for (done, output) in pipeline.outputs() {
                assert_eq!(bright_half(output), expected[done as usize], "frame {done}");
                seen += 1;
            }
            assert_eq!(seen, expected.len(), "{slots} slots");
            pipeline.destroy().unwrap();
        }
    }
    ends_clean(session);
}

/// A JPEG pipeline is `Send`: moved (here lent to a scoped worker thread) while the decode of
/// a frame it submitted is still pending on its channel, its next frames must not use the
/// channel from the other thread with those tasks pending (DV4: a channel is not
/// thread-safe), and every frame reads right.
#[test]
fn dv4_a_jpeg_pipeline_lent_to_another_thread_with_frames_in_flight() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let frames = picture_frames();
        let mut pipeline = picture_pipeline(&ctx, &media, 3);
        // Frame 0's kernel sleeps: frame 1's decode waits behind it on the compute stream.
        for (n, frame) in frames.iter().take(2).enumerate() {
            let mut slot = pipeline.next_slot().unwrap();
            slot.load_jpeg(&frame.0).unwrap();
            slot.submit(|launch| {
                if n == 0 {
                    session.sim.sleep_kernel(launch.stream().as_raw(), 50_000);
                }
                launch.simulated_map(Duration::ZERO, same)
            })
            .unwrap();
        }
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut slot = pipeline.next_slot().unwrap();
                slot.load_jpeg(&frames[2].0).unwrap();
                slot.submit(|launch| launch.simulated_map(Duration::ZERO, same))
                    .unwrap();
            })
            .join()
            .unwrap();
        });
        pipeline.wait_all().unwrap();
        let seen: Vec<_> = pipeline
            .outputs()
            .map(|(n, o)| (n, bright_half(o)))
            .collect();
        assert_eq!(seen, [(0, frames[0].1), (1, frames[1].1), (2, frames[2].1)]);
        pipeline.destroy().unwrap();
    }
    ends_clean(session);
}

/// One frame of the picture tests in `pipeline`, tolerant of an error anywhere (a fault):
/// returns the frames that completed and what they showed.
fn tolerant_frame(
    pipeline: &mut JpegPipeline<'_, u8>,
    file: &[u8],
    seen: &mut Vec<(u64, Bright)>,
) -> Result<u64, Error> {
    let mut slot = pipeline.next_slot()?;
    if let Some((done, output)) = slot.output() {
        seen.push((done, bright_half(output)));
    }
    slot.load_jpeg(file)?;
    slot.submit(|launch| launch.simulated_map(Duration::ZERO, same))
}

/// Each call of `load_jpeg` and `submit` fails at each of its first occurrences (the
/// descriptions set half-way, a decode or resize refused after the other was issued, a
/// hand-off cut short), with frames whose decoded size changes every frame: every frame
/// handed out afterwards shows its own file (no half-described input read as another
/// size), nothing is found, nothing leaks (DV6, DV8, DV10, M3, E4).
#[test]
fn dv6_dv8_faults_in_load_and_submit_with_changing_sizes_leave_no_stale_description() {
    const CALLS: &[&str] = &[
        "acldvppJpegGetImageInfoV2",
        "aclrtMemcpy",
        "acldvppSetPicDescFormat",
        "acldvppSetPicDescWidth",
        "acldvppSetPicDescHeight",
        "acldvppSetPicDescWidthStride",
        "acldvppSetPicDescHeightStride",
        "acldvppSetPicDescSize",
        "acldvppJpegDecodeAsync",
        "acldvppVpcResizeAsync",
        "aclsimLaunchKernel",
        "aclrtRecordEvent",
        "aclrtStreamWaitEvent",
        "aclrtResetEvent",
        "aclrtMemcpyAsync",
        "aclrtSynchronizeEvent",
        "aclrtSynchronizeStream",
    ];
    let session = Session::start();
    let errors = DropErrors::capture();
    let mut failed = 0;
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let frames = picture_frames();
        for call in CALLS {
            for skip in 0..4 {
                for slots in [1, 2] {
                    let mut pipeline = picture_pipeline(&ctx, &media, slots);
                    let mut seen = Vec::new();
                    let mut files = Vec::new();
                    session.sim.inject_fault_at(call, 507_899, skip, 1);
                    // Files alternate between sizes and orientations; a failed frame is
                    // tried again with the next file.
                    let mut k = 0usize;
                    let mut attempts = 0;
                    while pipeline.submitted() < 8 {
                        attempts += 1;
                        assert!(attempts < 40, "{call} {skip}: the loop does not recover");
                        let which = k % frames.len();
                        match tolerant_frame(&mut pipeline, &frames[which].0, &mut seen) {
                            Ok(n) => {
                                assert_eq!(n as usize, files.len());
                                files.push(which);
                            }
                            Err(_) => failed += 1,
                        }
                        k += 3;
                    }
                    let mut waits = 0;
                    while let Err(error) = pipeline.wait_all() {
                        waits += 1;
                        assert!(waits < 10, "{call} {skip}: {error}");
                        failed += 1;
                    }
                    session.sim.clear_faults();
                    seen.extend(pipeline.outputs().map(|(n, o)| (n, bright_half(o))));
                    for &(n, bright) in &seen {
                        assert_eq!(bright, frames[files[n as usize]].1, "{call} {skip} {n}");
                    }
                    assert!(seen.len() >= 6, "{call} {skip}: {seen:?}");
                    pipeline.destroy().unwrap();
                    let findings = session.sim.findings();
                    assert!(findings.is_empty(), "{call} {skip}: {findings:#?}");
                }
            }
        }
    }
    assert!(failed >= 40, "the faults were hit ({failed})");
    let _ = errors.take();
    ends_clean(session);
}

/// After the decode and resize of a frame were issued, its kernel closure panics, returns a
/// refused model (wrong size, MD10; another context's, MD1), or runs a model twice: the
/// error is returned, the slot is settled before reuse, the next frames read right, and
/// nothing is found or leaks (M3, DV6, MD6).
#[test]
fn m3_md10_a_kernel_that_fails_after_the_decode_leaves_the_slot_usable() {
    let session = Session::start();
    let errors = DropErrors::capture();
    support::quiet_panics(&["a kernel closure panics after the decode"]);
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let other = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let frames = picture_frames();
        let right = model_file("m3_md10_a_kernel_that_fails_right", target().byte_len());
        let wrong = model_file("m3_md10_a_kernel_that_fails_wrong", 48 * 48 * 3 / 2);
        let mut model = ctx.load_model(&right).unwrap();
        let mut small = ctx.load_model(&wrong).unwrap();
        let mut foreign = other.load_model(&right).unwrap();
        let mut pipeline: JpegPipeline<'_, i32> = ctx
            .create_jpeg_pipeline(
                &media,
                PipelineConfig::new(64 * 1024, 1).slots(2),
                JpegConfig::new(target()).max_picture(200, 200),
            )
            .unwrap();
        for case in 0..4 {
            for n in 0..6u64 {
                let mut slot = match pipeline.next_slot() {
                    Ok(slot) => slot,
                    Err(error) => panic!("case {case}, frame {n}: {error}"),
                };
                slot.load_jpeg(&frames[n as usize % frames.len()].0)
                    .unwrap();
                if n == 2 {
                    let kernel = |launch: &ascend_typestate::Launch<'_, '_, u8, i32>| match case {
                        0 => panic!("a kernel closure panics after the decode"),
                        1 => launch.execute(&mut small),
                        2 => launch.execute(&mut foreign),
                        _ => {
                            launch.execute(&mut model)?;
                            launch.execute(&mut model)
                        }
                    };
                    let submitted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        slot.submit(kernel)
                    }));
                    match (case, submitted) {
                        (0, Err(_)) => {}
                        (1, Ok(Err(Error::ModelSizeMismatch { .. }))) => {}
                        (2, Ok(Err(_))) => {}
                        (3, Ok(Err(Error::InvalidArgument(_)))) => {}
                        (case, Ok(other)) => panic!("case {case}: {other:?}"),
                        (case, Err(_)) => panic!("case {case}: a panic"),
                    }
                    continue;
                }
                slot.submit(|launch| launch.execute(&mut model)).unwrap();
            }
            pipeline.wait_all().unwrap();
            assert_eq!(pipeline.outputs().count(), 2, "case {case}");
        }
        pipeline.destroy().unwrap();
        model.unload().unwrap();
        small.unload().unwrap();
        foreign.unload().unwrap();
        drop(media);
        other.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert!(errors.take().is_empty());
    ends_clean(session);
}

/// Three frames in flight, their kernels sleeping, in a new context of device 0.
fn frames_in_flight<'a>(
    session: &Session,
    ctx: &'a ascend_typestate::Context<'a>,
    media: &'a ascend_typestate::MediaV1<'_>,
) -> JpegPipeline<'a, u8> {
    let frames = picture_frames();
    let mut pipeline = picture_pipeline(ctx, media, 3);
    for (n, frame) in frames.iter().take(3).enumerate() {
        let mut slot = pipeline.next_slot().unwrap();
        slot.load_jpeg(&frame.0).unwrap();
        slot.submit(|launch| {
            session
                .sim
                .sleep_kernel(launch.stream().as_raw(), 20_000 * (n as u64 + 1));
            launch.simulated_map(Duration::ZERO, same)
        })
        .unwrap();
    }
    pipeline
}

/// A JPEG pipeline forgotten with frames in flight leaks its channel, frames, descriptions
/// and buffers: nothing is freed or destroyed under the decodes, resizes and kernels still
/// running, and its context is kept (M2, DV10, D3). In a child process: the leak keeps the
/// runtime.
#[test]
fn m2_dv10_a_forgotten_jpeg_pipeline_with_frames_in_flight_leaks() {
    if support::child::ran_in_child(
        "m2_dv10_a_forgotten_jpeg_pipeline_with_frames_in_flight_leaks",
        "ASCEND_TYPESTATE_JPEG_FORGET_CHILD",
        "leaked as expected",
    ) {
        return;
    }
    let session = Session::start();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let media = session.acl().media_v1().unwrap();
    let pipeline = frames_in_flight(&session, &ctx, &media);
    std::mem::forget(pipeline);
    let failed = ctx.try_destroy().unwrap_err();
    assert!(
        matches!(failed.error, Error::LiveChildren { .. }),
        "{}",
        failed.error
    );
    let ctx = failed.value;
    std::thread::sleep(Duration::from_millis(100));
    ctx.synchronize_device().unwrap();
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    assert!(session.sim.live_objects() > 0);
    println!("leaked as expected");
    std::process::exit(0);
}

/// Destroyed or dropped while every synchronisation fails: the pipeline returns (or
/// reports) the error and leaks everything rather than free it under its pending tasks
/// (M2, E9, DV10): no finding, even once the tasks end. In a child process.
#[test]
fn m2_dv10_a_jpeg_pipeline_ended_while_synchronisation_fails_leaks() {
    if support::child::ran_in_child(
        "m2_dv10_a_jpeg_pipeline_ended_while_synchronisation_fails_leaks",
        "ASCEND_TYPESTATE_JPEG_SYNC_FAILS_CHILD",
        "leaked as expected",
    ) {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let media = session.acl().media_v1().unwrap();
    for end in 0..2 {
        let pipeline = frames_in_flight(&session, &ctx, &media);
        session
            .sim
            .inject_fault_at("aclrtSynchronizeStream", 507_899, 0, 1000);
        if end == 0 {
            let err = pipeline.destroy().unwrap_err();
            assert!(err.to_string().contains("507899"), "{err}");
        } else {
            drop(pipeline);
            assert!(!errors.take().is_empty(), "the drop reports");
        }
        session.sim.clear_faults();
    }
    std::thread::sleep(Duration::from_millis(200));
    ctx.synchronize_device().unwrap();
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    assert!(session.sim.live_objects() > 0);
    println!("leaked as expected");
    std::process::exit(0);
}

/// Sizes at the edges: a file area beyond the device's memory or `isize::MAX`, a largest
/// picture of 16384 x 16384 (each slot's decoded frame is 384 MiB), a file area shorter than the file, no output. Each is a typed
/// error at creation (or at load) or works; nothing leaks, nothing is found (M1, DV5, DV8).
#[test]
fn dv5_dv8_huge_and_tiny_pipeline_sizes_are_typed_errors_and_leak_nothing() {
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let jpeg = JpegConfig::new(target()).max_picture(200, 200);
        for (input_len, slots) in [
            (9usize << 30, 1),
            (usize::MAX, 1),
            (isize::MAX as usize + 1, 2),
            (usize::MAX - 31, 1),
        ] {
            let created = ctx.create_jpeg_pipeline::<u8>(
                &media,
                PipelineConfig::new(input_len, 4).slots(slots),
                jpeg,
            );
            let err = created.map(|_| ()).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument(_) | Error::Runtime { .. }),
                "{input_len}: {err}"
            );
            assert_eq!(session.sim.live_objects(), 0, "{input_len}: nothing leaks");
        }
        // The largest picture JPEGD decodes: one slot's decoded frame is 384 MiB.
        let pipeline = ctx
            .create_jpeg_pipeline::<u8>(
                &media,
                PipelineConfig::new(1024, 4).slots(1),
                JpegConfig::new(target()).max_picture(16384, 16384),
            )
            .unwrap();
        pipeline.destroy().unwrap();
        // A file area shorter than a valid file: refused at load, nothing issued.
        let file = split(64, 64, None);
        let mut pipeline = ctx
            .create_jpeg_pipeline::<u8>(&media, PipelineConfig::new(file.len() - 1, 4), jpeg)
            .unwrap();
        let mut slot = pipeline.next_slot().unwrap();
        let err = slot.load_jpeg(&file).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert_eq!(slot.jpeg(), None);
        pipeline.destroy().unwrap();
        // No output: refused at creation, or frames that run and output nothing.
        match ctx.create_jpeg_pipeline::<u8>(&media, PipelineConfig::new(64 * 1024, 0), jpeg) {
            Err(err) => assert!(matches!(err, Error::InvalidArgument(_)), "{err}"),
            Ok(mut pipeline) => {
                for _ in 0..3 {
                    let mut slot = pipeline.next_slot().unwrap();
                    slot.load_jpeg(&file).unwrap();
                    slot.submit(|_| Ok(())).unwrap();
                }
                pipeline.wait_all().unwrap();
                assert!(pipeline.outputs().all(|(_, o)| o.is_empty()));
                pipeline.destroy().unwrap();
            }
        }
        assert_eq!(session.sim.live_objects(), 0, "nothing leaks");
    }
    let _ = errors.take();
    ends_clean(session);
}

/// A media scope of its own (another channel, another stream) decoding and resizing in the
/// same context while the pipeline's frames are in flight: both read right, no finding
/// (DV4: one channel per stream and thread, DV6).
#[test]
fn dv4_dv6_a_media_scope_beside_a_jpeg_pipeline_in_the_same_context() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let frames = picture_frames();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 256 * 256 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, target().byte_len()).unwrap();
        let mut pipeline = picture_pipeline(&ctx, &media, 2);
        let mut expected = Vec::new();
        let mut seen = Vec::new();
        for n in 0..10usize {
            let mut slot = pipeline.next_slot().unwrap();
            if let Some((done, output)) = slot.output() {
                seen.push((done, bright_half(output)));
            }
            let (file, bright, _) = &frames[n % frames.len()];
            slot.load_jpeg(file).unwrap();
            expected.push(*bright);
            slot.submit(|launch| {
                session.sim.sleep_kernel(launch.stream().as_raw(), 3_000);
                launch.simulated_map(Duration::ZERO, same)
            })
            .unwrap();
            let (other, other_bright, _) = &frames[(n + 3) % frames.len()];
            input.load(other).unwrap();
            ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                tasks.resize(frame, &mut resized, target())?;
                Ok(())
            })
            .unwrap();
            let mut back = vec![0u8; target().byte_len()];
            ctx.copy(&mut back[..], &resized).unwrap();
            assert_eq!(bright_half(&back), *other_bright, "scope {n}");
        }
        pipeline.wait_all().unwrap();
        seen.extend(pipeline.outputs().map(|(n, o)| (n, bright_half(o))));
        assert_eq!(seen.len(), 10);
        for (n, bright) in seen {
            assert_eq!(bright, expected[n as usize], "frame {n}");
        }
        pipeline.destroy().unwrap();
        channel.destroy().unwrap();
        drop((input, decoded, resized));
        stream.destroy().unwrap();
    }
    ends_clean(session);
}

/// `destroy` returns the first error of the release (its docs; no lost error): when the
/// media memory or a picture description of a slot cannot be released (the runtime keeps
/// failing `acldvppFree` or `acldvppDestroyPicDesc`), `destroy` returns that error, as a
/// tensor pipeline's does for its buffers (M2, DV10). In a child process: what could not
/// be released is kept.
#[test]
fn dv10_a_jpeg_pipeline_whose_slot_release_fails_returns_the_error() {
    if support::child::ran_in_child(
        "dv10_a_jpeg_pipeline_whose_slot_release_fails_returns_the_error",
        "ASCEND_TYPESTATE_JPEG_RELEASE_CHILD",
        "kept as expected",
    ) {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let media = session.acl().media_v1().unwrap();
    let frames = picture_frames();
    for call in ["acldvppFree", "acldvppDestroyPicDesc"] {
        let mut pipeline = picture_pipeline(&ctx, &media, 2);
        for frame in frames.iter().take(2) {
            let mut slot = pipeline.next_slot().unwrap();
            slot.load_jpeg(&frame.0).unwrap();
            slot.submit(|launch| launch.simulated_map(Duration::ZERO, same))
                .unwrap();
        }
        pipeline.wait_all().unwrap();
        session.sim.inject_fault_at(call, 507_899, 0, 1000);
        let destroyed = pipeline.destroy();
        session.sim.clear_faults();
        let reported = errors.take();
        assert!(!reported.is_empty(), "{call}: reported");
        let err = destroyed.expect_err(call);
        assert!(err.to_string().contains("507899"), "{call}: {err}");
    }
    println!("kept as expected");
    std::process::exit(0);
}

/// The pipeline's frames on one thread while another thread of the same context decodes and
/// resizes in media scopes of its own channel and stream: every picture reads right, and no
/// channel is used from two threads (DV4, DV6, D6).
#[test]
fn dv4_d6_a_jpeg_pipeline_and_a_media_scope_on_two_threads_of_one_context() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let frames = picture_frames();
        std::thread::scope(|s| {
            let scopes = s.spawn(|| {
                let stream = ctx.create_stream().unwrap();
                let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
                let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
                let mut decoded = ctx.alloc_frame(&media, 256 * 256 * 3 / 2).unwrap();
                let mut resized = ctx.alloc_frame(&media, target().byte_len()).unwrap();
                for n in 0..12 {
                    let (file, bright, _) = &frames[(n * 7 + 1) % frames.len()];
                    input.load(file).unwrap();
                    ctx.async_scope(|scope| {
                        let tasks = scope.media(&mut channel, &stream)?;
                        let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                        tasks.resize(frame, &mut resized, target())?;
                        Ok(())
                    })
                    .unwrap();
                    let mut back = vec![0u8; target().byte_len()];
                    ctx.copy(&mut back[..], &resized).unwrap();
                    assert_eq!(bright_half(&back), *bright, "scope {n}");
                }
                channel.destroy().unwrap();
                drop((input, decoded, resized));
                stream.destroy().unwrap();
            });
            let mut pipeline = picture_pipeline(&ctx, &media, 3);
            let mut expected = Vec::new();
            let mut seen = Vec::new();
            for n in 0..12usize {
                let mut slot = pipeline.next_slot().unwrap();
                if let Some((done, output)) = slot.output() {
                    seen.push((done, bright_half(output)));
                }
                let (file, bright, _) = &frames[n % frames.len()];
                slot.load_jpeg(file).unwrap();
                expected.push(*bright);
                slot.submit(|launch| {
                    session.sim.sleep_kernel(launch.stream().as_raw(), 1_000);
                    launch.simulated_map(Duration::ZERO, same)
                })
                .unwrap();
            }
            pipeline.wait_all().unwrap();
            seen.extend(pipeline.outputs().map(|(n, o)| (n, bright_half(o))));
            assert_eq!(seen.len(), 12);
            for (n, bright) in seen {
                assert_eq!(bright, expected[n as usize], "frame {n}");
            }
            pipeline.destroy().unwrap();
            scopes.join().unwrap();
        });
    }
    ends_clean(session);
}

/// Files whose header the runtime reads otherwise than the crate's parser might (two frame
/// headers of different sizes, a stuffed byte among the segments, an EXIF orientation after
/// the frame header): refused when loaded, or decoded to the size `Slot::jpeg` says; never
/// a task that fails at submission (DV7).
#[test]
fn dv7_files_with_unusual_headers_are_refused_at_load_or_read_right() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let plain = split(96, 64, None);
        let sof = plain
            .windows(2)
            .position(|w| w == [0xFF, 0xC0])
            .expect("a frame header");
        let sof_len = usize::from(u16::from_be_bytes([plain[sof + 2], plain[sof + 3]]));
        let segment = plain[sof..sof + 2 + sof_len].to_vec();
        // Two frame headers: 96 x 64, then the same turned (64 x 96).
        let mut twice = plain.clone();
        let mut turned = segment.clone();
        turned[5..9].copy_from_slice(&[0, 96, 0, 64]);
        twice.splice(sof + 2 + sof_len..sof + 2 + sof_len, turned);
        // A stuffed byte (FF 00) before the frame header.
        let mut stuffed = plain.clone();
        stuffed.splice(2..2, [0xFF, 0x00, 0x00, 0x02]);
        // The EXIF segment after the frame header.
        let exif = split(96, 64, Some(6));
        let app1 = exif[2..2 + 36].to_vec();
        let mut late = plain.clone();
        late.splice(sof + 2 + sof_len..sof + 2 + sof_len, app1);
        let mut pipeline = picture_pipeline(&ctx, &media, 2);
        for (file, what) in [
            (&twice, "two frames"),
            (&stuffed, "stuffed"),
            (&late, "late"),
        ] {
            let mut slot = pipeline.next_slot().unwrap();
            match slot.load_jpeg(file) {
                Err(error) => {
                    assert_eq!(slot.jpeg(), None, "{what}: {error}");
                }
                Ok(_) => {
                    let layout = slot.jpeg().unwrap();
                    slot.submit(|launch| launch.simulated_map(Duration::ZERO, same))
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    pipeline.wait_all().unwrap();
                    let (_, output) = pipeline.outputs().last().unwrap();
                    let expected = if (layout.width(), layout.height()) == (64, 96) {
                        Bright::Top
                    } else {
                        Bright::Left
                    };
                    assert_eq!(bright_half(output), expected, "{what}");
                }
            }
        }
        pipeline.destroy().unwrap();
    }
    ends_clean(session);
}

/// The way round the thread move above: a JPEG pipeline whose frames were all waited for
/// (`wait_all`) is lent to another thread and back, frames submitted on each, without a
/// finding (DV4: nothing of its channel is pending when the thread changes, M3).
#[test]
fn dv4_a_jpeg_pipeline_lent_to_another_thread_once_waited_for() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let frames = picture_frames();
        let mut pipeline = picture_pipeline(&ctx, &media, 2);
        let mut expected = Vec::new();
        let mut run = |pipeline: &mut JpegPipeline<'_, u8>, from: usize| {
            for (n, frame) in frames.iter().enumerate().skip(from).take(3) {
                let mut slot = pipeline.next_slot().unwrap();
                slot.load_jpeg(&frame.0).unwrap();
                slot.submit(|launch| {
                    session.sim.sleep_kernel(launch.stream().as_raw(), 2_000);
                    launch.simulated_map(Duration::ZERO, same)
                })
                .unwrap();
                expected.push(frames[n].1);
            }
            pipeline.wait_all().unwrap();
        };
        run(&mut pipeline, 0);
        std::thread::scope(|s| {
            s.spawn(|| run(&mut pipeline, 3)).join().unwrap();
        });
        run(&mut pipeline, 6);
        let seen: Vec<_> = pipeline
            .outputs()
            .map(|(n, o)| (n, bright_half(o)))
            .collect();
        assert_eq!(seen.len(), 2);
        for (n, bright) in seen {
            assert_eq!(bright, expected[n as usize], "frame {n}");
        }
        pipeline.destroy().unwrap();
    }
    ends_clean(session);
}
