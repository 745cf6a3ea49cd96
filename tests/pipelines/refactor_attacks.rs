//! The input stage of a pipeline's frames (`Tensors`, `Jpegs`) at its edges: a submission
//! refused before anything is issued, a fault in the tensor input copy (when it is issued,
//! when it runs), a pipeline destroyed with a slot left unsettled. Every frame's output is
//! attributed to its own number, no output is lost but that of a frame that failed, and
//! every test ends with no finding and nothing alive.

use crate::support;

use std::time::Duration;

use ascend_typestate::{
    Error, FrameLayout, JpegConfig, JpegPipeline, Pipeline, PipelineConfig, PixelFormat,
};
use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
use support::sim::Session;

const LEN: usize = 129;

/// A task error the simulator reports when the next task on a stream runs (P3b).
const TASK_FAILURE: i32 = 507_000;
/// An error a runtime call returns when it is issued.
const CALL_FAILURE: i32 = 507_899;

fn infer(x: f32) -> f32 {
    x * 3.0 - 1.0
}

fn frame_input(n: u64, input: &mut [f32]) {
    for (i, x) in input.iter_mut().enumerate() {
        *x = n as f32 * 1000.0 + i as f32;
    }
}

fn check_output(n: u64, output: &[f32]) {
    for (i, y) in output.iter().enumerate() {
        assert_eq!(
            *y,
            infer(n as f32 * 1000.0 + i as f32),
            "frame {n}, element {i}"
        );
    }
}

fn ends_clean(session: Session) {
    assert_eq!(session.sim.live_objects(), 0, "everything released");
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Submits one tensor frame whose input is its number; returns the number.
fn submit_frame(pipeline: &mut Pipeline<'_, f32, f32>) -> Result<u64, Error> {
    let mut slot = pipeline.next_slot()?;
    if let Some((n, output)) = slot.output() {
        check_output(n, output);
    }
    let n = slot.frame();
    frame_input(n, slot.input_mut());
    slot.submit(|launch| launch.simulated_map(Duration::from_micros(50), infer))
}

/// The input copy refused when it is issued (`aclrtMemcpyAsync` fails): the submission
/// returns the error, the frame number is not used, the slot is settled before it is handed
/// out again, and the frames in flight in the other slots are complete and attributed to
/// their own numbers.
#[test]
fn m3_an_input_copy_refused_when_issued_uses_no_frame_number() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN).slots(3))
            .unwrap();
        for n in 0..4 {
            assert_eq!(submit_frame(&mut pipeline).unwrap(), n);
        }
        session
            .sim
            .inject_fault_at("aclrtMemcpyAsync", CALL_FAILURE, 0, 1);
        let mut slot = pipeline.next_slot().unwrap();
        let (before, index_frame) = (slot.frame(), slot.output().map(|(n, _)| n));
        assert_eq!((before, index_frame), (4, Some(1)));
        frame_input(before, slot.input_mut());
        let err = slot
            .submit(|_| panic!("the kernel runs after a refused input copy"))
            .unwrap_err();
        assert!(format!("{err}").contains("507899"), "{err}");
        assert_eq!(pipeline.submitted(), 4, "no frame number used");
        // The same slot again, settled; its last output (frame 1) is gone with the failed
        // submission, never attributed to another frame.
        let mut slot = pipeline.next_slot().unwrap();
        assert_eq!(slot.frame(), 4);
        assert_eq!(slot.output().map(|(n, _)| n), None);
        frame_input(4, slot.input_mut());
        assert_eq!(
            slot.submit(|l| l.simulated_map(Duration::ZERO, infer))
                .unwrap(),
            4
        );
        for n in 5..9 {
            assert_eq!(submit_frame(&mut pipeline).unwrap(), n);
        }
        pipeline.wait_all().unwrap();
        let seen: Vec<u64> = pipeline
            .outputs()
            .map(|(n, output)| {
                check_output(n, output);
                n
            })
            .collect();
        assert_eq!(seen, [6, 7, 8]);
        pipeline.destroy().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// The input copy fails when it runs: the frame is not handed out (`next_slot` returns the
/// error, the slot is free again after), its number is used and never seen as an output,
/// the frame before it is complete, and so is every frame submitted after the error was
/// seen; every output seen is its own frame's.
#[test]
fn p3_m3_an_input_copy_failing_when_it_runs_fails_only_its_frame() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN).slots(2))
            .unwrap();
        for n in 0..3 {
            assert_eq!(submit_frame(&mut pipeline).unwrap(), n);
        }
        // Frame 3: everything already issued on the compute stream has run.
        pipeline.wait_all().unwrap();
        let mut slot = pipeline.next_slot().unwrap();
        frame_input(3, slot.input_mut());
        let compute = std::cell::Cell::new(std::ptr::null_mut());
        let failed = slot
            .submit(|launch| {
                compute.set(launch.stream().as_raw());
                launch.simulated_map(Duration::ZERO, infer)
            })
            .unwrap();
        assert_eq!(failed, 3);
        let compute = compute.get();
        // The next task on the compute stream is frame 4's input copy.
        session.sim.inject_task_failure(compute, TASK_FAILURE);
        assert_eq!(submit_frame(&mut pipeline).unwrap(), 4);
        let mut errors = 0;
        let mut seen = Vec::new();
        for n in 5..10 {
            let mut slot = loop {
                match pipeline.next_slot() {
                    Ok(slot) => break slot,
                    Err(error) => {
                        assert!(format!("{error}").contains("507000"), "{error}");
                        errors += 1;
                    }
                }
            };
            if let Some((done, output)) = slot.output() {
                check_output(done, output);
                seen.push(done);
            }
            assert_eq!(slot.frame(), n);
            frame_input(n, slot.input_mut());
            assert_eq!(
                slot.submit(|l| l.simulated_map(Duration::ZERO, infer))
                    .unwrap(),
                n
            );
        }
        pipeline.wait_all().unwrap();
        seen.extend(pipeline.outputs().map(|(done, output)| {
            check_output(done, output);
            done
        }));
        assert!(errors >= 1, "the failed copy is reported");
        assert!(!seen.contains(&4), "frame 4 failed: {seen:?}");
        // Frame 5 was in flight behind the failed one when the failure was seen: it may be
        // dropped too (never handed out unproven); every later frame is seen.
        assert!((6..10).all(|n| seen.contains(&n)), "{seen:?}");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        pipeline.destroy().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// Destroyed (or dropped) right after a submission whose input copy was refused, the slot
/// unsettled and another frame in flight: both streams are seen done, everything released.
#[test]
fn m2_e9_a_pipeline_ended_with_an_unsettled_slot_releases_everything() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        for destroy in [true, false] {
            let mut pipeline = device
                .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))
                .unwrap();
            let slot = pipeline.next_slot().unwrap();
            slot.submit(|l| l.simulated_map(Duration::from_millis(2), infer))
                .unwrap();
            session
                .sim
                .inject_fault_at("aclrtMemcpyAsync", CALL_FAILURE, 0, 1);
            let slot = pipeline.next_slot().unwrap();
            assert!(slot.submit(|_| Ok(())).is_err());
            if destroy {
                pipeline.destroy().unwrap();
            } else {
                drop(pipeline);
            }
        }
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// The resized picture, SIDE x SIDE NV12: what the kernel reads.
const SIDE: u32 = 32;

/// A grey JPEG (luma `level`) of `width` x `height`.
fn grey(level: u8, width: u16, height: u16) -> Vec<u8> {
    let pixels: Vec<u8> = (0..usize::from(width) * usize::from(height))
        .flat_map(|_| [level; 3])
        .collect();
    let mut out = Vec::new();
    let mut encoder = Encoder::new(&mut out, 95);
    encoder.set_sampling_factor(SamplingFactor::R_4_2_0);
    encoder
        .encode(&pixels, width, height, ColorType::Rgb)
        .expect("encode the fixture");
    out
}

/// Frame `n`'s grey level.
fn level(n: u64) -> u8 {
    30 + (n % 10) as u8 * 20
}

/// A frame's output (the picture, copied by an identity kernel) is frame `n`'s.
fn check_picture(n: u64, output: &[u8]) {
    let luma = &output[..(SIDE * SIDE) as usize];
    let want = level(n);
    assert!(
        luma.iter().all(|y| y.abs_diff(want) <= 3),
        "frame {n}: luma {} expected about {want}",
        luma[0]
    );
}

/// In a JPEG pipeline, a submission refused by its input stage (no file loaded: never
/// loaded, or unloaded by a refused file) uses no frame number and keeps the slot free with
/// its last output, still attributed to its own frame; the frame in flight in the other slot
/// completes; the next frames are numbered on and carry their own pictures.
#[test]
fn dv7_m3_a_refused_jpeg_submission_keeps_the_slots_output_and_numbers() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let target = FrameLayout::resized(SIDE, SIDE, PixelFormat::Nv12).unwrap();
        let config = PipelineConfig::new(64 * 1024, target.byte_len()).slots(2);
        let mut pipeline: JpegPipeline<'_, u8> = ctx
            .create_jpeg_pipeline(&media, config, JpegConfig::new(target))
            .unwrap();
        let identity: fn(u8) -> u8 = |x| x;
        let mut seen = Vec::new();
        for round in 0..6u64 {
            let mut slot = pipeline.next_slot().unwrap();
            let last = slot.output().map(|(done, output)| {
                check_picture(done, output);
                done
            });
            if let Some(done) = last {
                seen.push(done);
            }
            assert_eq!(slot.frame(), round);
            // Every other round: a refusal first (none loaded yet in the second slot, then
            // a good file unloaded by a refused one).
            if round % 2 == 1 {
                if round > 1 {
                    assert!(slot.jpeg().is_some(), "a submission does not unload");
                    slot.load_jpeg(&grey(level(round), 64, 48)).unwrap();
                    assert!(slot.load_jpeg(&[0u8; 64]).is_err());
                }
                assert_eq!(slot.jpeg(), None);
                let err = slot
                    .submit(|_| panic!("a kernel of a refused submission"))
                    .unwrap_err();
                assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
                assert_eq!(pipeline.submitted(), round, "no frame number used");
                slot = pipeline.next_slot().unwrap();
                assert_eq!(slot.frame(), round);
                assert_eq!(
                    slot.output().map(|(done, _)| done),
                    last,
                    "the slot's last output stays, attributed to its frame"
                );
                if let Some((done, output)) = slot.output() {
                    check_picture(done, output);
                }
            }
            slot.load_jpeg(&grey(level(round), 64 + 2 * round as u16, 48))
                .unwrap();
            assert_eq!(
                slot.submit(|launch| launch.simulated_map(Duration::from_micros(100), identity))
                    .unwrap(),
                round
            );
        }
        pipeline.wait_all().unwrap();
        for (done, output) in pipeline.outputs() {
            check_picture(done, output);
            seen.push(done);
        }
        assert_eq!(seen, (0..6).collect::<Vec<_>>());
        pipeline.destroy().unwrap();
    }
    ends_clean(session);
}
