//! `Pipeline`: frames in flight on two streams, each slot's buffers handed back only once its
//! work is proven done (M1, M2, M3, E2-E5, E10). Every test ends with zero checker findings
//! and no live runtime object, on every path: errors, panics, forgotten guards, injected
//! faults.

use crate::support;

use std::time::Duration;

use ascend_typestate::{Error, Pipeline, PipelineConfig};
use support::DropErrors;
use support::sim::{Session, Sim};

const LEN: usize = 257;

fn infer(x: f32) -> f32 {
    x * 2.0 + 1.0
}

/// Frame `n`'s input: distinct per frame and element.
fn frame_input(n: u64, input: &mut [f32]) {
    for (i, x) in input.iter_mut().enumerate() {
        *x = (n as f32) * 1000.0 + i as f32;
    }
}

fn check_output(n: u64, output: &[f32]) {
    for (i, y) in output.iter().enumerate() {
        let x = (n as f32) * 1000.0 + i as f32;
        assert_eq!(*y, infer(x), "frame {n}, element {i}");
    }
}

/// Submits frame after frame, checking every output as its slot comes round, then the last
/// ones after `wait_all`; returns how many outputs were checked.
fn run_frames(pipeline: &mut Pipeline<'_, f32, f32>, frames: u64, kernel_time: Duration) -> u64 {
    let mut checked = 0;
    for _ in 0..frames {
        let mut slot = pipeline.next_slot().unwrap();
        if let Some((n, output)) = slot.output() {
            check_output(n, output);
            checked += 1;
        }
        let n = slot.frame();
        frame_input(n, slot.input_mut());
        assert_eq!(
            slot.submit(|launch| launch.simulated_map(kernel_time, infer))
                .unwrap(),
            n
        );
    }
    pipeline.wait_all().unwrap();
    for (n, output) in pipeline.outputs() {
        check_output(n, output);
        checked += 1;
    }
    checked
}

fn ends_clean(session: Session) {
    assert_eq!(session.sim.live_objects(), 0, "everything released");
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// The double-buffered loop: every frame's output is the kernel of its own input, seen once
/// its slot comes round (or after `wait_all`), in frame order.
#[test]
fn m3_double_buffered_frames_are_complete_when_handed_back() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        for slots in [1, 2, 3] {
            let config = PipelineConfig::new(LEN, LEN).slots(slots);
            let mut pipeline = device.create_pipeline::<f32, f32>(config).unwrap();
            // A slow kernel: an early read would see a stale or partial output.
            assert_eq!(
                run_frames(&mut pipeline, 40, Duration::from_micros(300)),
                40
            );
            let outputs: Vec<u64> = pipeline.outputs().map(|(n, _)| n).collect();
            let expected: Vec<u64> = (40 - slots as u64..40).collect();
            assert_eq!(outputs, expected, "oldest first");
            assert_eq!(pipeline.submitted(), 40);
            pipeline.destroy().unwrap();
        }
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// Inputs and outputs of different types and lengths (an image in, scores out).
#[test]
fn m3_input_and_output_of_different_shapes() {
    fn score(x: u8) -> f32 {
        f32::from(x) / 2.0
    }
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut pipeline = device
            .create_pipeline::<u8, f32>(PipelineConfig::new(64, 16))
            .unwrap();
        for n in 0..6u8 {
            let mut slot = pipeline.next_slot().unwrap();
            slot.input_mut().fill(n);
            slot.submit(|launch| {
                assert_eq!((launch.input_len(), launch.output_len()), (64, 16));
                launch.simulated_map(Duration::ZERO, score)
            })
            .unwrap();
        }
        pipeline.wait_all().unwrap();
        for (n, output) in pipeline.outputs() {
            assert_eq!(output, &[f32::from(n as u8) / 2.0; 16][..]);
        }
        pipeline.destroy().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// A guard dropped or forgotten without submitting leaves its slot free: the same slot
/// comes back, and nothing is skipped or found (M3: the state lives in the pipeline).
#[test]
#[expect(
    clippy::forget_non_drop,
    clippy::drop_non_drop,
    reason = "the point: a guard has nothing to run, forgotten or dropped"
)]
fn m3_a_dropped_or_forgotten_slot_changes_nothing() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))
            .unwrap();
        run_frames(&mut pipeline, 3, Duration::ZERO);
        let mut slot = pipeline.next_slot().unwrap();
        let before = slot.frame();
        slot.input_mut().fill(-1.0);
        std::mem::forget(slot);
        let slot = pipeline.next_slot().unwrap();
        assert_eq!(slot.frame(), before);
        drop(slot);
        // 5 frames, and the 2 completed before them, seen as their slots come round.
        assert_eq!(
            run_frames(&mut pipeline, 5, Duration::from_micros(100)),
            5 + 2
        );
        pipeline.destroy().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// A kernel that fails or panics after the input copy was issued: the slot is left
/// unsettled, the next `next_slot` synchronises both streams first, and the loop goes on
/// with correct results; the frame number is not used.
#[test]
fn m3_a_kernel_error_or_panic_leaves_the_slot_settled_before_reuse() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))
            .unwrap();
        run_frames(&mut pipeline, 3, Duration::from_micros(200));
        let slot = pipeline.next_slot().unwrap();
        let err = slot
            .submit(|launch| {
                launch.simulated_map(Duration::from_millis(2), infer)?;
                Err(Error::InvalidArgument("the model refused the frame"))
            })
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        let submitted = pipeline.submitted();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let slot = pipeline.next_slot().unwrap();
            slot.submit(|launch| {
                launch.simulated_map(Duration::from_millis(2), infer)?;
                panic!("a kernel closure panics after launching");
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(pipeline.submitted(), submitted, "no frame number used");
        // A second launch in one frame is refused, and the frame goes on.
        let mut slot = pipeline.next_slot().unwrap();
        frame_input(slot.frame(), slot.input_mut());
        slot.submit(|launch| {
            launch.simulated_map(Duration::ZERO, infer)?;
            let second = launch.simulated_map(Duration::ZERO, infer).unwrap_err();
            assert!(matches!(second, Error::InvalidArgument(_)), "{second}");
            Ok(())
        })
        .unwrap();
        // 6 frames, and the 2 before them (one of them the frame above), as the slots come
        // round: all correct.
        assert_eq!(
            run_frames(&mut pipeline, 6, Duration::from_micros(100)),
            6 + 2
        );
        pipeline.destroy().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// Dropping (or destroying) a pipeline with frames in flight waits for them first: no free
/// or destroy under a pending task (M2, E9).
#[test]
fn m2_e9_a_pipeline_dropped_with_frames_in_flight_waits_for_them() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        for destroy in [false, true] {
            let mut pipeline = device
                .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN).slots(4))
                .unwrap();
            for _ in 0..4 {
                let slot = pipeline.next_slot().unwrap();
                slot.submit(|l| l.simulated_map(Duration::from_millis(3), infer))
                    .unwrap();
            }
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

/// A forgotten pipeline with frames in flight: its buffers, events and streams are leaked,
/// never freed under the running tasks, and its context is kept (D3, M2). In a child
/// process: the leak keeps the runtime, which no later test of this process could start.
#[test]
fn m2_d3_a_forgotten_pipeline_leaks_and_keeps_its_context() {
    if support::child::ran_in_child(
        "m2_d3_a_forgotten_pipeline_leaks_and_keeps_its_context",
        "ASCEND_TYPESTATE_PIPELINE_CHILD",
        "leaked as expected",
    ) {
        return;
    }
    let session = Session::start();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let mut pipeline = ctx
        .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))
        .unwrap();
    for _ in 0..2 {
        let slot = pipeline.next_slot().unwrap();
        slot.submit(|l| l.simulated_map(Duration::from_millis(5), infer))
            .unwrap();
    }
    std::mem::forget(pipeline);
    let failed = ctx.try_destroy().unwrap_err();
    assert!(
        matches!(failed.error, Error::LiveChildren { .. }),
        "{}",
        failed.error
    );
    let ctx = failed.value;
    // The frames finish on the leaked streams; nothing was freed under them.
    std::thread::sleep(Duration::from_millis(50));
    ctx.synchronize_device().unwrap();
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    println!("leaked as expected");
    // The context, device and runtime are kept with the leak: end the process here.
    std::process::exit(0);
}

/// Each runtime call of the loop fails once, at each of its first occurrences: the loop
/// retries the failing step, and every output it sees is right; nothing leaks, nothing is
/// found.
#[test]
fn fault_sweep_over_the_pipeline_loop() {
    const CALLS: &[&str] = &[
        "aclrtMemcpyAsync",
        "aclsimLaunchKernel",
        "aclrtRecordEvent",
        "aclrtStreamWaitEvent",
        "aclrtResetEvent",
        "aclrtSynchronizeEvent",
        "aclrtSynchronizeStream",
    ];
    let session = Session::start();
    let errors = DropErrors::capture();
    let mut injected = 0;
    {
        let device = session.default_device(0);
        for call in CALLS {
            for skip in 0..6 {
                let mut pipeline = device
                    .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))
                    .unwrap();
                session.sim.inject_fault_at(call, 507_000, skip, 1);
                let mut failures = 0;
                let mut frames = 0;
                while frames < 6 {
                    let step = pipeline.next_slot().and_then(|mut slot| {
                        if let Some((n, output)) = slot.output() {
                            check_output(n, output);
                        }
                        let n = slot.frame();
                        frame_input(n, slot.input_mut());
                        slot.submit(|l| l.simulated_map(Duration::from_micros(50), infer))
                    });
                    match step {
                        Ok(_) => frames += 1,
                        Err(_) => failures += 1,
                    }
                    assert!(failures < 10, "{call} #{skip}: the loop does not recover");
                }
                while pipeline.wait_all().is_err() {
                    failures += 1;
                    assert!(failures < 10, "{call} #{skip}: wait_all does not recover");
                }
                for (n, output) in pipeline.outputs() {
                    check_output(n, output);
                }
                session.sim.clear_faults();
                pipeline.destroy().unwrap();
                injected += failures;
            }
        }
        device.reset().unwrap();
    }
    assert!(injected > 20, "the faults were hit ({injected})");
    let _ = errors.take();
    ends_clean(session);
}

/// The pipeline's steady state makes no create or destroy call per frame, and the calls it
/// makes are those of the raw loop: per frame 2 copies, 1 kernel, 2 records, 1 wait,
/// 2 resets, 1 event synchronisation, nothing else (no binding on the loop's thread).
#[test]
fn m3_each_frame_makes_the_raw_loops_calls_and_nothing_else() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))
            .unwrap();
        run_frames(&mut pipeline, 4, Duration::ZERO);
        let sim: &Sim = &session.sim;
        sim.reset_call_counts();
        for _ in 0..100 {
            let slot = pipeline.next_slot().unwrap();
            slot.submit(|l| l.simulated_map(Duration::ZERO, infer))
                .unwrap();
        }
        let counts: Vec<(&str, u64)> = [
            "aclrtMemcpyAsync",
            "aclsimLaunchKernel",
            "aclrtRecordEvent",
            "aclrtStreamWaitEvent",
            "aclrtResetEvent",
            "aclrtSynchronizeEvent",
            "aclrtSynchronizeStream",
            "aclrtCreateEventWithFlag",
            "aclrtDestroyEvent",
            "aclrtSetCurrentContext",
        ]
        .into_iter()
        .map(|f| (f, sim.call_count(f)))
        .collect();
        assert_eq!(
            counts,
            [
                ("aclrtMemcpyAsync", 200),
                ("aclsimLaunchKernel", 100),
                ("aclrtRecordEvent", 200),
                ("aclrtStreamWaitEvent", 100),
                // The first two slots were already free (`wait_all`).
                ("aclrtResetEvent", 198),
                ("aclrtSynchronizeEvent", 98),
                ("aclrtSynchronizeStream", 0),
                ("aclrtCreateEventWithFlag", 0),
                ("aclrtDestroyEvent", 0),
                ("aclrtSetCurrentContext", 0),
            ]
        );
        pipeline.destroy().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// Creation failures release what was created (nothing leaks), and the slot count is
/// checked before anything is.
#[test]
fn creation_failures_release_everything() {
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        for slots in [0, ascend_typestate::MAX_PIPELINE_SLOTS + 1] {
            let err = device
                .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN).slots(slots))
                .unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        }
        for call in [
            "aclrtCreateStream",
            "aclrtMalloc",
            "aclrtMallocHost",
            "aclrtCreateEventWithFlag",
        ] {
            for skip in 0..4 {
                session.sim.inject_fault_at(call, 207_001, skip, 1);
                let created =
                    device.create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN).slots(2));
                session.sim.clear_faults();
                if let Ok(pipeline) = created {
                    pipeline.destroy().unwrap();
                }
            }
        }
        device.reset().unwrap();
    }
    assert!(errors.take().is_empty());
    ends_clean(session);
}

/// Drives frames like `run_frames`, but a frame may fail: `next_slot` errors are counted (the
/// loop goes on), and every output handed out must be right.
fn run_frames_tolerant(
    pipeline: &mut Pipeline<'_, f32, f32>,
    frames: u64,
    kernel: impl Fn(u64) -> (Duration, fn(f32) -> f32),
    mut before_submit: impl FnMut(u64, &ascend_typestate::Launch<'_, '_, f32, f32>),
) -> (u64, u64) {
    let (mut checked, mut failed) = (0, 0);
    let mut submitted = 0;
    while submitted < frames {
        let mut slot = match pipeline.next_slot() {
            Ok(slot) => slot,
            Err(_) => {
                failed += 1;
                assert!(failed < 20, "the loop does not recover");
                continue;
            }
        };
        if let Some((n, output)) = slot.output() {
            check_output(n, output);
            checked += 1;
        }
        let n = slot.frame();
        frame_input(n, slot.input_mut());
        let (time, f) = kernel(n);
        slot.submit(|launch| {
            before_submit(n, launch);
            launch.simulated_map(time, f)
        })
        .unwrap();
        submitted += 1;
    }
    while pipeline.wait_all().is_err() {
        failed += 1;
        assert!(failed < 20, "wait_all does not recover");
    }
    for (n, output) in pipeline.outputs() {
        check_output(n, output);
        checked += 1;
    }
    (checked, failed)
}

/// A frame whose kernel fails on the device (stopped by the operator timeout, P5, or an
/// injected task failure) is never handed out: the error its completion event captured is
/// returned by `next_slot` (P3), and the frames after it are right (M3).
#[test]
fn p3_m3_a_frame_whose_kernel_fails_on_the_device_is_not_handed_out() {
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))
            .unwrap();
        // The operator execution timeout stops frame 4's kernel (safe API).
        let acl = session.acl();
        let (checked, failed) = run_frames_tolerant(
            &mut pipeline,
            10,
            |n| {
                let time = if n == 4 { 50_000 } else { 0 };
                (Duration::from_micros(time), infer)
            },
            |n, _| {
                let limit = if n == 4 { 1 } else { 0 };
                acl.set_op_execute_timeout(Duration::from_millis(limit))
                    .unwrap();
            },
        );
        assert!(failed >= 1, "the failed frame was reported");
        assert!(
            checked < 10,
            "the failed frame was not handed out ({checked})"
        );
        // An injected task failure of frame 3's kernel.
        let sim = &session.sim;
        let (_, failed) = run_frames_tolerant(
            &mut pipeline,
            8,
            |_| (Duration::ZERO, infer),
            |n, launch| {
                if n == 13 {
                    sim.inject_task_failure(launch.stream().as_raw(), 507_000);
                }
            },
        );
        assert!(failed >= 1, "the failed frame was reported");
        pipeline.destroy().unwrap();
        device.reset().unwrap();
    }
    // The failures also reach the handler when the streams are settled (reported, not lost).
    let _ = errors.take();
    ends_clean(session);
}

/// A frame whose simulated kernel's function panics half-way is not handed out: `next_slot`
/// returns `Error::CallbackPanicked` for it, and the loop goes on.
#[test]
fn m3_a_frame_whose_kernel_function_panics_is_not_handed_out() {
    fn sometimes_panics(x: f32) -> f32 {
        if (4000.0..4010.0).contains(&x) {
            panic!("the kernel's function panics on frame 4");
        }
        infer(x)
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))
            .unwrap();
        let (checked, failed) = run_frames_tolerant(
            &mut pipeline,
            9,
            |_| (Duration::ZERO, sometimes_panics),
            |_, _| {},
        );
        assert_eq!((checked, failed), (8, 1));
        pipeline.destroy().unwrap();
        device.reset().unwrap();
    }
    let reported = errors.take();
    assert!(
        reported.iter().any(|r| r.contains("panicked")),
        "{reported:?}"
    );
    ends_clean(session);
}

/// A kernel closure that makes another context current before launching: the launch binds
/// the pipeline's context again (D6).
#[test]
fn d6_a_kernel_closure_that_uses_another_context_still_launches() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let other_device = session.acl().set_device(1).unwrap();
        let other = other_device.create_context().unwrap();
        let mut pipeline = device
            .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))
            .unwrap();
        let (checked, failed) = run_frames_tolerant(
            &mut pipeline,
            6,
            |_| (Duration::ZERO, infer),
            |_, _| other.synchronize_device().unwrap(),
        );
        assert_eq!((checked, failed), (6, 0));
        pipeline.destroy().unwrap();
        other.destroy().unwrap();
        other_device.reset().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// The program of a reported finding: one `aclrtResetEvent` of a slot's `ready` event
/// fails inside `Slot::submit` (after its wait was issued), and `?` drops the pipeline. The
/// pipeline resets the waited event before destroying it (E4): no finding, nothing left.
#[test]
fn e4_a_failed_reset_in_submit_then_drop_resets_before_destroying() {
    let session = Session::start();
    let errors = DropErrors::capture();
    {
        let device = session.default_device(0);
        let run = || -> Result<(), Error> {
            let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))?;
            // The first reset of the program is the submission's reset of `ready` (E4).
            session
                .sim
                .inject_fault_at("aclrtResetEvent", 507_000, 0, 1);
            let slot = pipeline.next_slot()?;
            slot.submit(|l| l.simulated_map(Duration::ZERO, infer))?;
            Ok(())
        };
        let outcome = run();
        session.sim.clear_faults();
        match outcome {
            Err(Error::Runtime { call, .. }) => assert_eq!(call, "aclrtResetEvent"),
            other => panic!("{other:?}"),
        }
        assert_eq!(errors.take(), Vec::<String>::new());
    }
    ends_clean(session);
}

/// As above, and every reset the pipeline's release tries fails too: the waited event is
/// never destroyed unreset (E4); it is leaked, still counted, and its context refuses to be
/// released over it (D3). In a child process: the runtime stays initialised.
#[test]
fn e4_d3_a_waited_event_whose_reset_keeps_failing_is_kept_not_destroyed() {
    if support::child::ran_in_child(
        "e4_d3_a_waited_event_whose_reset_keeps_failing_is_kept_not_destroyed",
        "ASCEND_TYPESTATE_PIPELINE_RESET_CHILD",
        "kept as expected",
    ) {
        return;
    }
    let session = Session::start();
    session.expect_findings();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    {
        let mut pipeline = ctx
            .create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))
            .unwrap();
        // The submission's reset, then every try of the release's (four).
        session
            .sim
            .inject_fault_at("aclrtResetEvent", 507_000, 0, 5);
        let slot = pipeline.next_slot().unwrap();
        let submitted = slot.submit(|l| l.simulated_map(Duration::ZERO, infer));
        assert!(
            matches!(submitted, Err(Error::Runtime { .. })),
            "{submitted:?}"
        );
        let destroyed = pipeline.destroy();
        session.sim.clear_faults();
        match destroyed {
            Err(Error::Runtime { call, .. }) => assert_eq!(call, "aclrtResetEvent"),
            other => panic!("{other:?}"),
        }
    }
    let reported = errors.take();
    // The release's first three failed resets; the fourth is returned.
    assert_eq!(reported.len(), 3, "{reported:?}");
    let failed = ctx.try_destroy().unwrap_err();
    assert!(
        matches!(failed.error, Error::LiveChildren { count: 1 }),
        "{}",
        failed.error
    );
    assert_eq!(session.sim.live_objects(), 2, "the context and its event");
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    println!("kept as expected");
    std::process::exit(0);
}

/// The crate docs' scoped worker: a pipeline borrowed by a `std::thread::scope`
/// worker, then destroyed, the device reset and the runtime finalized by their owner: every
/// frame checked, nothing left, no finding.
#[test]
fn a_scoped_worker_thread_and_clean_teardown() {
    let mut session = Session::start();
    let acl = session.acl.take().unwrap();
    let run = || -> Result<u64, Error> {
        let device = acl.set_device(0)?.into_default_context()?;
        let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(LEN, LEN))?;
        let frames = std::thread::scope(|s| {
            let worker = s.spawn(|| -> Result<u64, Error> {
                Ok(run_frames(&mut pipeline, 50, Duration::ZERO))
            });
            worker.join().expect("the worker panicked")
        })?;
        pipeline.destroy()?;
        device.reset()?;
        Ok(frames)
    };
    assert_eq!(run().unwrap(), 50);
    acl.finalize().unwrap();
    assert_eq!(session.sim.live_objects(), 0);
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
}
