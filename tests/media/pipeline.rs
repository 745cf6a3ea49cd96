//! JPEG pipelines (DV3-DV11 with M1-M3, E2-E5, MD6-MD13): each frame's file decoded and
//! resized on the compute stream into the picture its model reads, classified right; the
//! checks of a file before any task; failures on the device, faults and drops.

use crate::common::ends_clean;
use crate::support;

use std::time::Duration;

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{Error, FrameLayout, JpegConfig, JpegPipeline, PipelineConfig, PixelFormat};
use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
use support::DropErrors;
use support::sim::Session;

/// The model's input: SIDE x SIDE NV12.
const SIDE: u32 = 32;
/// The classes of the fixtures: bright (luma), blue (U), red (V).
const PICTURES: [([u8; 3], i32, u16, u16); 4] = [
    ([240, 240, 240], 0, 320, 240),
    ([20, 30, 230], 1, 97, 75),
    ([230, 20, 20], 2, 64, 64),
    ([10, 250, 10], 0, 100, 81),
];

fn coloured(rgb: [u8; 3], width: u16, height: u16) -> Vec<u8> {
    let pixels: Vec<u8> = (0..usize::from(width) * usize::from(height))
        .flat_map(|_| rgb)
        .collect();
    let mut out = Vec::new();
    let mut encoder = Encoder::new(&mut out, 90);
    encoder.set_sampling_factor(SamplingFactor::R_4_2_0);
    encoder
        .encode(&pixels, width, height, ColorType::Rgb)
        .expect("encode the fixture");
    out
}

/// Scores: the mean of the Y plane, of the U bytes and of the V bytes of an NV12 picture of
/// `bytes` bytes; its output is the top-1 class (`i32`).
pub(crate) fn model_file(name: &str, bytes: usize) -> std::path::PathBuf {
    let luma = bytes * 2 / 3;
    let mut weights = vec![0.0f32; bytes * 3];
    for (i, w) in weights.chunks_mut(3).enumerate() {
        let class = if i < luma { 0 } else { 1 + (i - luma) % 2 };
        let count = if class == 0 { luma } else { (bytes - luma) / 2 };
        w[class] = 1.0 / count as f32;
    }
    let file = support::scratch_dir(name).join("classify.model");
    SimModel::new(SimDtype::U8, &[1, bytes], SimDtype::I32, &[1])
        .matmul(bytes, 3, &weights)
        .argmax(3)
        .write(&file)
        .expect("write the model");
    file
}

fn target() -> FrameLayout {
    FrameLayout::resized(SIDE, SIDE, PixelFormat::Nv12).unwrap()
}

fn config() -> (PipelineConfig, JpegConfig) {
    (
        PipelineConfig::new(64 * 1024, 1),
        JpegConfig::new(target()).max_picture(320, 240),
    )
}

/// Frame `n`'s picture and class.
fn picture(jpegs: &[(Vec<u8>, i32)], n: u64) -> &(Vec<u8>, i32) {
    &jpegs[n as usize % jpegs.len()]
}

fn fixtures() -> Vec<(Vec<u8>, i32)> {
    PICTURES
        .iter()
        .map(|&(rgb, class, w, h)| (coloured(rgb, w, h), class))
        .collect()
}

/// Every frame's file decoded, resized and classified right, double- and triple-buffered;
/// every output read once, through its slot or after `wait_all`.
#[test]
fn dv11_m3_every_frame_of_a_jpeg_pipeline_is_classified_right() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let path = model_file(
            "dv11_m3_every_frame_of_a_jpeg_pipeline_i",
            target().byte_len(),
        );
        let mut model = ctx.load_model(&path).unwrap();
        let jpegs = fixtures();
        for slots in [1, 2, 3] {
            let (config, jpeg) = config();
            let mut pipeline: JpegPipeline<'_, i32> = ctx
                .create_jpeg_pipeline(&media, config.slots(slots), jpeg)
                .unwrap();
            let mut seen = 0;
            for n in 0..12u64 {
                let mut slot = pipeline.next_slot().unwrap();
                if let Some((done, output)) = slot.output() {
                    assert_eq!(output, [picture(&jpegs, done).1], "frame {done}");
                    seen += 1;
                }
                assert_eq!(slot.frame(), n);
                let header = slot.load_jpeg(&picture(&jpegs, n).0).unwrap();
                let decoded = slot.jpeg().unwrap();
                assert_eq!(
                    (decoded.width(), decoded.height()),
                    (header.width() & !1, header.height() & !1)
                );
                slot.submit(|launch| launch.execute(&mut model)).unwrap();
            }
            pipeline.wait_all().unwrap();
            for (done, output) in pipeline.outputs() {
                assert_eq!(output, [picture(&jpegs, done).1], "frame {done}");
                seen += 1;
            }
            assert_eq!(seen, 12, "{slots} slots");
            pipeline.destroy().unwrap();
        }
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// The steady state creates nothing: per frame one file query, the file's copy, a decode, a
/// resize, an execution, the output's copy and the pipeline's events; a description is set again only when
/// a slot's picture size changes.
#[test]
fn dv3_m3_a_jpeg_pipeline_frame_creates_nothing() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let path = model_file(
            "dv3_m3_a_jpeg_pipeline_frame_creates_not",
            target().byte_len(),
        );
        let mut model = ctx.load_model(&path).unwrap();
        let jpegs = fixtures();
        let (config, jpeg) = config();
        let mut pipeline = ctx
            .create_jpeg_pipeline::<i32>(&media, config, jpeg)
            .unwrap();
        let same = &jpegs[0].0;
        for _ in 0..4 {
            let mut slot = pipeline.next_slot().unwrap();
            slot.load_jpeg(same).unwrap();
            slot.submit(|launch| launch.execute(&mut model)).unwrap();
        }
        pipeline.wait_all().unwrap();
        session.sim.reset_call_counts();
        for _ in 0..50 {
            let mut slot = pipeline.next_slot().unwrap();
            assert_eq!(slot.output().map(|(_, o)| o[0]), Some(jpegs[0].1));
            slot.load_jpeg(same).unwrap();
            slot.submit(|launch| launch.execute(&mut model)).unwrap();
        }
        let count = |f: &str| session.sim.call_count(f);
        for (f, n) in [
            ("acldvppJpegGetImageInfoV2", 50),
            ("aclrtMemcpy", 50),
            ("aclrtMemcpyAsync", 50),
            ("acldvppJpegDecodeAsync", 50),
            ("acldvppVpcResizeAsync", 50),
            ("aclmdlExecuteAsync", 50),
            ("aclrtRecordEvent", 100),
            ("aclrtStreamWaitEvent", 50),
            ("aclrtSynchronizeEvent", 48),
            ("aclrtSynchronizeStream", 0),
            ("acldvppSetPicDescWidth", 0),
            ("acldvppSetPicDescSize", 0),
            ("acldvppMalloc", 0),
            ("acldvppCreatePicDesc", 0),
            ("aclmdlCreateDataset", 0),
            ("aclrtCreateEventWithFlag", 0),
            ("aclrtSetCurrentContext", 0),
        ] {
            assert_eq!((f, count(f)), (f, n));
        }
        // Another size: the slot's descriptions are set again, once.
        session.sim.reset_call_counts();
        for _ in 0..4 {
            let mut slot = pipeline.next_slot().unwrap();
            slot.load_jpeg(&jpegs[1].0).unwrap();
            slot.submit(|launch| launch.execute(&mut model)).unwrap();
        }
        pipeline.wait_all().unwrap();
        // Two slots, two descriptions each (the decode's output, the resize's input).
        assert_eq!(count("acldvppSetPicDescWidth"), 4);
        for (n, output) in pipeline.outputs() {
            assert_eq!(output, [jpegs[1].1], "frame {n}");
        }
        pipeline.destroy().unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// What the engine would refuse is refused when the file is loaded, before any task; a
/// slot with no file loaded refuses to submit and stays free; creation checks the sizes.
#[test]
fn dv7_dv8_dv9_a_jpeg_pipeline_checks_each_file_before_any_task() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let path = model_file(
            "dv7_dv8_dv9_a_jpeg_pipeline_checks_each_",
            target().byte_len(),
        );
        let mut model = ctx.load_model(&path).unwrap();
        for (width, height) in [(31, 100), (100, 16385), (0, 0)] {
            let err = ctx
                .create_jpeg_pipeline::<i32>(
                    &media,
                    PipelineConfig::new(1024, 1),
                    JpegConfig::new(target()).max_picture(width, height),
                )
                .unwrap_err();
            assert!(matches!(err, Error::PictureLayout(_)), "{err}");
        }
        let err = ctx
            .create_jpeg_pipeline::<i32>(
                &media,
                PipelineConfig::new(0, 1),
                JpegConfig::new(target()),
            )
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        let (config, jpeg) = config();
        let mut pipeline = ctx
            .create_jpeg_pipeline::<i32>(&media, config, jpeg)
            .unwrap();
        let good = coloured([240, 240, 240], 64, 64);
        let mut long = good.clone();
        long.resize(64 * 1024 + 1, 0);
        let progressive = crate::common::jpeg(64, 64, true);
        let large = coloured([240, 240, 240], 322, 100);
        let small_sides = coloured([240, 240, 240], 33, 33);
        session.sim.reset_call_counts();
        for (bytes, what) in [
            (&progressive, "progressive"),
            (&large, "larger than max_picture"),
            (&long, "longer than the input"),
            (&good[..40].to_vec(), "cut off in its header"),
            (&vec![0u8; 100], "not a JPEG"),
        ] {
            let mut slot = pipeline.next_slot().unwrap();
            slot.load_jpeg(&good).unwrap();
            let err = slot.load_jpeg(bytes).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::UnsupportedJpeg(_) | Error::PictureLayout(_) | Error::InvalidArgument(_)
                ),
                "{what}: {err}"
            );
            // The refused file unloaded the good one: nothing to submit.
            assert_eq!(slot.jpeg(), None, "{what}");
            let err = slot
                .submit(|launch| launch.execute(&mut model))
                .unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{what}: {err}");
        }
        for f in [
            "aclrtMemcpyAsync",
            "acldvppJpegDecodeAsync",
            "aclmdlExecuteAsync",
            "aclrtSynchronizeStream",
        ] {
            assert_eq!((f, session.sim.call_count(f)), (f, 0), "nothing issued");
        }
        assert_eq!(pipeline.submitted(), 0);
        // A picture VPC does not read after JPEGD's rounding is refused too: 33 x 33 decodes
        // to 32 x 32, which it reads; all fine.
        let mut slot = pipeline.next_slot().unwrap();
        slot.load_jpeg(&small_sides).unwrap();
        slot.submit(|launch| launch.execute(&mut model)).unwrap();
        pipeline.wait_all().unwrap();
        let outputs: Vec<_> = pipeline.outputs().map(|(n, o)| (n, o.to_vec())).collect();
        assert_eq!(outputs, [(0, vec![0])]);
        pipeline.destroy().unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// The end of a JPEG's header: the byte after its start-of-scan segment.
fn scan_start(jpeg: &[u8]) -> usize {
    let sos = jpeg
        .windows(2)
        .position(|w| w == [0xFF, 0xDA])
        .expect("a scan");
    sos + 2 + usize::from(u16::from_be_bytes([jpeg[sos + 2], jpeg[sos + 3]]))
}

/// A frame that fails on the device (P3b: a file whose scan does not decode, or a task
/// failure injected on the compute stream) is never handed out: `next_slot` returns the
/// error when its slot comes round, and the frames after it are right.
#[test]
fn p3_dv6_a_frame_that_fails_on_the_device_is_not_handed_out() {
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let path = model_file("p3_dv6_a_frame_that_fails", target().byte_len());
        let mut model = ctx.load_model(&path).unwrap();
        let jpegs = fixtures();
        let good = &jpegs[0].0;
        // Its frame header whole, its Huffman tables broken: it parses, and fails when the
        // decode runs.
        let mut cut = good.clone();
        let dht = cut
            .windows(2)
            .position(|w| w == [0xFF, 0xC4])
            .expect("a Huffman table");
        cut[dht + 5..dht + 21].fill(0xFF);
        assert!(dht < scan_start(good));
        for injected in [false, true] {
            let (config, jpeg) = config();
            let mut pipeline = ctx
                .create_jpeg_pipeline::<i32>(&media, config, jpeg)
                .unwrap();
            let bad: u64 = 3;
            let mut failures = 0;
            let mut outputs = Vec::new();
            while pipeline.submitted() < 8 {
                let mut slot = match pipeline.next_slot() {
                    Ok(slot) => slot,
                    Err(error) => {
                        assert!(error.to_string().contains("507"), "{error}");
                        failures += 1;
                        assert!(failures < 4, "the loop does not recover");
                        continue;
                    }
                };
                if let Some((done, output)) = slot.output() {
                    outputs.push((done, output[0]));
                }
                let frame = slot.frame();
                if frame == bad && !injected {
                    slot.load_jpeg(&cut).unwrap();
                } else {
                    slot.load_jpeg(&picture(&jpegs, frame).0).unwrap();
                }
                slot.submit(|launch| {
                    if frame == bad && injected {
                        session
                            .sim
                            .inject_task_failure(launch.stream().as_raw(), 507_000);
                    }
                    launch.execute(&mut model)
                })
                .unwrap();
            }
            pipeline.wait_all().unwrap();
            outputs.extend(pipeline.outputs().map(|(n, o)| (n, o[0])));
            assert!(failures >= 1, "injected: {injected}");
            assert!(!outputs.iter().any(|&(n, _)| n == bad), "{outputs:?}");
            for &(n, class) in &outputs {
                assert_eq!(class, picture(&jpegs, n).1, "frame {n}");
            }
            assert!(outputs.len() >= 5, "{outputs:?}");
            pipeline.destroy().unwrap();
        }
        model.unload().unwrap();
    }
    let _ = errors.take();
    ends_clean(session);
}

/// Dropped, destroyed or with its model unloaded while frames are in flight: the pipeline
/// waits for them before anything is released (M2, E9, DV10), and the model's unload waits
/// for the pipeline (MD7).
#[test]
fn m2_dv10_a_jpeg_pipeline_ended_with_frames_in_flight_waits_for_them() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let path = model_file(
            "m2_dv10_a_jpeg_pipeline_ended_with_frame",
            target().byte_len(),
        );
        let jpegs = fixtures();
        for end in 0..3 {
            let mut model = ctx.load_model(&path).unwrap();
            let (config, jpeg) = config();
            let mut pipeline = ctx
                .create_jpeg_pipeline::<i32>(&media, config.slots(3), jpeg)
                .unwrap();
            for n in 0..3 {
                let mut slot = pipeline.next_slot().unwrap();
                slot.load_jpeg(&picture(&jpegs, n).0).unwrap();
                slot.submit(|launch| {
                    session.sim.sleep_kernel(launch.stream().as_raw(), 2_000);
                    launch.execute(&mut model)
                })
                .unwrap();
            }
            match end {
                0 => drop(pipeline),
                1 => pipeline.destroy().unwrap(),
                _ => {
                    let err = model.try_unload().unwrap_err();
                    assert!(
                        matches!(err.error, Error::ModelInUse { .. }),
                        "{}",
                        err.error
                    );
                    model = err.value;
                    drop(pipeline);
                }
            }
            model.unload().unwrap();
        }
        drop(media);
        std::thread::sleep(Duration::from_millis(1));
    }
    ends_clean(session);
}

/// Creation failing at each of its calls releases what it created: nothing leaks.
#[test]
fn a_jpeg_pipeline_whose_creation_fails_releases_everything() {
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let mut failed = 0;
        for call in [
            "acldvppCreateChannelDesc",
            "acldvppCreateChannel",
            "acldvppCreateResizeConfig",
            "acldvppMalloc",
            "acldvppCreatePicDesc",
            "acldvppSetPicDescWidth",
            "aclrtMemset",
            "aclrtCreateStream",
            "aclrtMalloc",
            "aclrtMallocHost",
            "aclrtCreateEventWithFlag",
        ] {
            for skip in 0..5 {
                session.sim.inject_fault_at(call, 207_001, skip, 1);
                let (config, jpeg) = config();
                let created = ctx.create_jpeg_pipeline::<i32>(&media, config, jpeg);
                session.sim.clear_faults();
                match created {
                    Ok(pipeline) => pipeline.destroy().unwrap(),
                    Err(_) => failed += 1,
                }
            }
        }
        assert!(failed >= 20, "the faults were hit ({failed})");
    }
    assert!(errors.take().is_empty());
    ends_clean(session);
}
