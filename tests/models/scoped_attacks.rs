//! Attacks on the asynchronous model execution in async scopes (`AsyncScope::execute` /
//! `execute_batch`, `ModelInput` / `ModelOutput` / `Executed`), the model's kept scoped
//! datasets (`Model::scoped_datasets`, `release`, `defer_release`) and the pipeline's split
//! of a slot's buffers (`consecutive`, `SlotDatasets::create`).
//!
//! Attacks that held are kept as regression tests. Compile-time escapes were tried in a
//! scratch file (all refused by the borrow checker, so none is a test here; the existing
//! ui-tests `md7_*`, `md8_*`, `m1_model_output_read_*` cover the same ground):
//! returning `Executed` / a `PendingDevice` from the body; pushing one into a `Vec` declared
//! outside; `mem::forget(executed)` then dropping the output buffer; a `DeviceSlice` by value
//! as input, then dropping its buffer in the scope; `slice(0..8)` + `slice_mut(8..16)` of one
//! buffer as input and output; `&DeviceSliceMut` as input and the same slice as output;
//! destroying the stream or dropping the model after the execution in the scope; moving a
//! `ModelInput` or `Executed` into a scoped thread (`!Send`); an `&mut` access to an output
//! `DeviceSliceMut`'s buffer from a scoped thread; an inner scope's output smuggled to the
//! outer scope through an `Option` declared between them; `Box::leak(executed)` to get a
//! `PendingDevice<'static, _>`; a synchronous `ctx.copy` into a pending input.

use crate::support;

use std::path::PathBuf;
use std::time::Duration;

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{Error, F16, MallocPolicy, PipelineConfig};
use support::sim::Session;

const FEATURES: usize = 8;
const CLASSES: usize = 4;

fn weights() -> Vec<f32> {
    (0..FEATURES * CLASSES)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) / 4.0)
        .collect()
}

const BIAS: [f32; CLASSES] = [0.5, -0.25, 0.0, 1.0];

fn classifier(rows: usize, gears: &[u64]) -> SimModel {
    SimModel::new(
        SimDtype::F32,
        &[rows, FEATURES],
        SimDtype::F32,
        &[rows, CLASSES],
    )
    .batch_gears(gears)
    .matmul(FEATURES, CLASSES, &weights())
    .bias(&BIAS)
}

fn expected(input: &[f32]) -> Vec<f32> {
    let w = weights();
    input
        .chunks(FEATURES)
        .flat_map(|row| {
            (0..CLASSES).map(|c| {
                let mut sum = 0.0f32;
                for (r, x) in row.iter().enumerate() {
                    sum += x * w[r * CLASSES + c];
                }
                sum + BIAS[c]
            })
        })
        .collect()
}

fn assert_close(found: &[f32], want: &[f32], what: &str) {
    assert_eq!(found.len(), want.len(), "{what}");
    for (i, (a, b)) in found.iter().zip(want).enumerate() {
        assert!((a - b).abs() < 1e-3, "{what}: element {i}: {a} != {b}");
    }
}

fn model_file(name: &str, model: &SimModel) -> PathBuf {
    let path = support::scratch_dir(&format!("models_scoped_attacks_{name}")).join("m.model");
    model.write(&path).expect("write the model file");
    path
}

fn frame_input(n: u64, rows: usize) -> Vec<f32> {
    (0..rows * FEATURES)
        .map(|i| ((n as usize * 31 + i) % 17) as f32 / 8.0 - 1.0)
        .collect()
}

fn ends_clean(session: Session) {
    assert_eq!(session.sim.live_objects(), 0, "everything released");
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

const FAULT: i32 = 507000;

/// One scoped execution of `model` over `input` -> `output`, uploading `host` first.
fn run_once(
    ctx: &ascend_typestate::Context<'_>,
    stream: &ascend_typestate::Stream<'_>,
    model: &mut ascend_typestate::Model<'_>,
    input: &mut ascend_typestate::DeviceBuffer<'_, f32>,
    output: &mut ascend_typestate::DeviceBuffer<'_, f32>,
    host: &[f32],
) -> ascend_typestate::Result<Vec<f32>> {
    let mut scores = vec![f32::NAN; output.len()];
    ctx.async_scope(|scope| {
        let up = scope.copy(stream, input, host)?;
        let run = scope.execute(stream, model, [up.into()], [output.into()])?;
        scope.copy(stream, &mut scores[..], run.output::<f32>(0)?)?;
        Ok(())
    })?;
    Ok(scores)
}

// ---------------------------------------------------------------------------------------
// 3. Leaks / nothing lost: faults on every call of a scoped execution.

#[test]
fn held_faults_on_every_call_of_a_static_scoped_execution_lose_nothing() {
    let path = model_file("faults_static", &classifier(2, &[]));
    let drops = support::DropErrors::capture();
    for call in [
        "aclmdlCreateDataset",
        "aclCreateDataBuffer",
        "aclmdlAddDatasetBuffer",
        "aclmdlExecuteAsync",
        "aclrtSetCurrentContext",
    ] {
        for skip in 0..3u32 {
            let session = Session::start();
            session.expect_findings();
            {
                let ctx = session.default_device(0);
                let stream = ctx.create_stream().unwrap();
                let mut model = ctx.load_model(&path).unwrap();
                let mut input = ctx
                    .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
                    .unwrap();
                let mut output = ctx
                    .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
                    .unwrap();
                let host = frame_input(skip as u64, 2);
                session.sim.inject_fault_at(call, FAULT, skip, 1);
                let first = run_once(&ctx, &stream, &mut model, &mut input, &mut output, &host);
                session.sim.clear_faults();
                // Whatever failed, the next execution works and reads the right answer.
                let scores = run_once(&ctx, &stream, &mut model, &mut input, &mut output, &host)
                    .unwrap_or_else(|e| panic!("{call} skip {skip}: after {first:?}: {e}"));
                assert_close(&scores, &expected(&host), call);
                if let Ok(scores) = first {
                    assert_close(&scores, &expected(&host), call);
                }
                model.unload().unwrap();
                drop(output);
                drop(input);
                stream.destroy().unwrap();
            }
            assert_eq!(session.sim.live_objects(), 0, "{call} skip {skip}");
            let findings = session.finish();
            assert!(findings.is_empty(), "{call} skip {skip}: {findings:#?}");
        }
    }
    drops.take();
}

#[test]
fn held_faults_on_a_dynamic_scoped_execution_lose_nothing() {
    let path = model_file("faults_dynamic", &classifier(4, &[1, 2, 4]));
    let drops = support::DropErrors::capture();
    for (call, skip) in [
        ("aclrtMalloc", 0u32),
        ("aclmdlSetDynamicBatchSize", 0),
        ("aclmdlSetDynamicBatchSize", 1),
        ("aclmdlExecuteAsync", 0),
        ("aclmdlCreateDataset", 1),
        ("aclmdlAddDatasetBuffer", 1),
    ] {
        let session = Session::start();
        session.expect_findings();
        {
            let ctx = session.default_device(0);
            let stream = ctx.create_stream().unwrap();
            let mut model = ctx.load_dynamic_model(&path).unwrap();
            let mut input = ctx
                .alloc::<f32>(4 * FEATURES, MallocPolicy::HugeFirst)
                .unwrap();
            let mut output = ctx
                .alloc::<f32>(4 * CLASSES, MallocPolicy::HugeFirst)
                .unwrap();
            session.sim.inject_fault_at(call, FAULT, skip, 1);
            let mut outcomes = Vec::new();
            for batch in [2u64, 1, 4] {
                let host = frame_input(batch, 4);
                let mut scores = [f32::NAN; 4 * CLASSES];
                let done = ctx.async_scope(|scope| {
                    let up = scope.copy(&stream, &mut input, &host[..])?;
                    let run = scope.execute_batch(
                        &stream,
                        &mut model,
                        batch,
                        [up.into()],
                        [(&mut output).into()],
                    )?;
                    scope.copy(&stream, &mut scores[..], run.output::<f32>(0)?)?;
                    Ok(())
                });
                if done.is_ok() {
                    let rows = batch as usize;
                    assert_close(
                        &scores[..rows * CLASSES],
                        &expected(&host[..rows * FEATURES]),
                        call,
                    );
                    assert_eq!(
                        model.current_output_dims(0).unwrap(),
                        [batch as i64, CLASSES as i64],
                        "{call}: MD12 after a successful gear {batch}"
                    );
                }
                outcomes.push(done.is_ok());
            }
            assert!(outcomes.iter().any(|ok| !ok), "{call}: the fault was hit");
            assert!(
                outcomes.last().copied().unwrap_or(false),
                "{call}: recovered"
            );
            session.sim.clear_faults();
            drop(model);
        }
        assert_eq!(session.sim.live_objects(), 0, "{call} skip {skip}");
        let findings = session.finish();
        assert!(findings.is_empty(), "{call} skip {skip}: {findings:#?}");
    }
    drops.take();
}

/// A transient failure to destroy the kept datasets (on a rebuild, and at unload) is tried
/// again: nothing is left behind, and each failure is reported, not swallowed.
#[test]
fn held_transient_destroy_faults_of_kept_datasets_are_retried_and_reported() {
    let path = model_file("destroy_faults", &classifier(2, &[]));
    let drops = support::DropErrors::capture();
    drops.take();
    for call in ["aclDestroyDataBuffer", "aclmdlDestroyDataset"] {
        for at_unload in [false, true] {
            let session = Session::start();
            session.expect_findings();
            {
                let ctx = session.default_device(0);
                let stream = ctx.create_stream().unwrap();
                let mut model = ctx.load_model(&path).unwrap();
                let mut a = ctx
                    .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
                    .unwrap();
                let mut b = ctx
                    .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
                    .unwrap();
                let mut out = ctx
                    .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
                    .unwrap();
                let host = frame_input(1, 2);
                run_once(&ctx, &stream, &mut model, &mut a, &mut out, &host).unwrap();
                if !at_unload {
                    // Other buffers: the kept datasets are destroyed and rebuilt.
                    session.sim.inject_fault(call, FAULT, 1);
                    let scores =
                        run_once(&ctx, &stream, &mut model, &mut b, &mut out, &host).unwrap();
                    assert_close(&scores, &expected(&host), call);
                } else {
                    session.sim.inject_fault(call, FAULT, 1);
                }
                drop(model);
                session.sim.clear_faults();
            }
            let reported = drops.take();
            assert!(
                reported.iter().any(|r| r.contains("507000")),
                "{call} at_unload {at_unload}: the failure is reported: {reported:?}"
            );
            assert_eq!(
                session.sim.live_objects(),
                0,
                "{call} at_unload {at_unload}"
            );
            let findings = session.finish();
            assert!(findings.is_empty(), "{call}: {findings:#?}");
        }
    }
}

/// Every drop order of model, buffers, stream and context after scoped executions (the
/// model keeps datasets naming the buffers): nothing is left, no finding.
#[test]
fn held_every_drop_order_after_scoped_executions() {
    let path = model_file("drop_orders", &classifier(2, &[]));
    // 0 model, 1 input, 2 output, 3 stream
    let orders: [[usize; 4]; 6] = [
        [0, 1, 2, 3],
        [3, 2, 1, 0],
        [1, 2, 0, 3],
        [3, 0, 1, 2],
        [2, 3, 0, 1],
        [1, 3, 2, 0],
    ];
    for order in orders {
        let session = Session::start();
        {
            let ctx = session.default_device(0);
            let stream = ctx.create_stream().unwrap();
            let mut model = ctx.load_model(&path).unwrap();
            let mut input = ctx
                .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
                .unwrap();
            let mut output = ctx
                .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
                .unwrap();
            let host = frame_input(3, 2);
            let scores =
                run_once(&ctx, &stream, &mut model, &mut input, &mut output, &host).unwrap();
            assert_close(&scores, &expected(&host), "drop orders");
            let (mut m, mut i, mut o, mut st) =
                (Some(model), Some(input), Some(output), Some(stream));
            for k in order {
                match k {
                    0 => drop(m.take()),
                    1 => drop(i.take()),
                    2 => drop(o.take()),
                    _ => drop(st.take()),
                }
            }
        }
        ends_clean(session);
    }
}

// ---------------------------------------------------------------------------------------
// MD7 / MD8 with a pipeline: deferred release with kept scoped datasets; failed launches.

#[test]
fn held_model_with_kept_datasets_dropped_while_pending_in_a_pipeline() {
    let path = model_file(
        "deferred",
        &classifier(2, &[]).time_per_item(Duration::from_millis(5)),
    );
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut pipeline = ctx
            .create_pipeline::<f32, f32>(PipelineConfig::new(2 * FEATURES, 2 * CLASSES))
            .unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let mut input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let host = frame_input(5, 2);
        run_once(&ctx, &stream, &mut model, &mut input, &mut output, &host).unwrap();
        // The kept datasets name buffers freed now.
        drop(input);
        drop(output);
        let mut slot = pipeline.next_slot().unwrap();
        slot.input_mut().copy_from_slice(&host);
        slot.submit(|launch| launch.execute(&mut model)).unwrap();
        assert_eq!(model.pending(), 1);
        drop(model); // deferred: released when the pipeline proves the frame done
        pipeline.destroy().unwrap();
        stream.destroy().unwrap();
    }
    ends_clean(session);
}

/// A pipeline launch whose `aclmdlExecuteAsync` (or batch setting) fails must not leave the
/// model counted as pending forever (which would refuse every later scoped execution with
/// `ModelInUse` and make `unload` fail).
#[test]
fn held_a_failed_pipeline_launch_does_not_pin_the_model() {
    let path = model_file("failed_launch", &classifier(2, &[]));
    let drops = support::DropErrors::capture();
    let session = Session::start();
    session.expect_findings();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let mut pipeline = ctx
            .create_pipeline::<f32, f32>(PipelineConfig::new(2 * FEATURES, 2 * CLASSES))
            .unwrap();
        let host = frame_input(2, 2);
        session.sim.inject_fault("aclmdlExecuteAsync", FAULT, 1);
        let mut slot = pipeline.next_slot().unwrap();
        slot.input_mut().copy_from_slice(&host);
        let failed = slot.submit(|launch| launch.execute(&mut model));
        assert!(failed.is_err(), "{failed:?}");
        session.sim.clear_faults();
        let _ = pipeline.wait_all();
        assert_eq!(model.pending(), 0, "a failed launch is not pending");
        let mut input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let scores = run_once(&ctx, &stream, &mut model, &mut input, &mut output, &host).unwrap();
        assert_close(&scores, &expected(&host), "after a failed launch");
        let _ = pipeline.destroy();
        model.unload().unwrap();
    }
    drops.take();
    assert_eq!(session.sim.live_objects(), 0);
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

// ---------------------------------------------------------------------------------------
// 4. Bad input: pipeline slot sizes, element types.

#[test]
fn held_pipeline_slot_sizes_and_types_must_match_the_model() {
    let path = model_file("slot_sizes", &classifier(2, &[]));
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let mut model = ctx.load_model(&path).unwrap();
        for (ins, outs) in [
            (2 * FEATURES + 1, 2 * CLASSES),
            (2 * FEATURES, 2 * CLASSES - 1),
            (2 * FEATURES - 1, 2 * CLASSES + 1),
            (1, 1),
        ] {
            let mut pipeline = ctx
                .create_pipeline::<f32, f32>(PipelineConfig::new(ins, outs))
                .unwrap();
            let slot = pipeline.next_slot().unwrap();
            let refused = slot.submit(|launch| launch.execute(&mut model));
            assert!(
                matches!(refused, Err(Error::ModelSizeMismatch { .. })),
                "{ins}/{outs}: {refused:?}"
            );
            assert_eq!(model.pending(), 0);
            pipeline.destroy().unwrap();
        }
        // Same byte sizes, other element types (u32 for f32): refused (MD13).
        let mut pipeline = ctx
            .create_pipeline::<u32, f32>(PipelineConfig::new(2 * FEATURES, 2 * CLASSES))
            .unwrap();
        let slot = pipeline.next_slot().unwrap();
        let refused = slot.submit(|launch| launch.execute(&mut model));
        assert!(
            matches!(refused, Err(Error::ModelTypeMismatch { .. })),
            "{refused:?}"
        );
        pipeline.destroy().unwrap();
        // A byte-sized element type whose byte count matches: refused too.
        let mut pipeline = ctx
            .create_pipeline::<u8, u8>(PipelineConfig::new(8 * FEATURES, 8 * CLASSES))
            .unwrap();
        let slot = pipeline.next_slot().unwrap();
        let refused = slot.submit(|launch| launch.execute(&mut model));
        assert!(
            matches!(refused, Err(Error::ModelTypeMismatch { .. })),
            "{refused:?}"
        );
        pipeline.destroy().unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}

#[test]
fn held_f16_model_in_a_scope_and_type_checks_of_outputs() {
    let model =
        SimModel::new(SimDtype::F16, &[2, FEATURES], SimDtype::F16, &[2, FEATURES]).scale(2.0);
    let path = model_file("f16", &model);
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let host: Vec<F16> = (0..2 * FEATURES)
            .map(|i| F16::from_f32(i as f32 / 4.0))
            .collect();
        let mut input = ctx
            .alloc::<F16>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<F16>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        // u16 buffers of the same byte size: refused (MD13), as input and as output.
        let mut as_u16 = ctx
            .alloc::<u16>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let refused = ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&input).into()],
                [(&mut as_u16).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelTypeMismatch { .. })),
            "{refused:?}"
        );
        let refused = ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&as_u16).into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelTypeMismatch { .. })),
            "{refused:?}"
        );
        // A slice of the right byte size but half the elements of a wider type: refused.
        let wide = ctx.alloc::<f32>(FEATURES, MallocPolicy::HugeFirst).unwrap();
        let refused = ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [wide.slice(..).unwrap().into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelTypeMismatch { .. })),
            "{refused:?}"
        );
        // Zero-length views: refused by size.
        let refused = ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [input.slice(0..0).unwrap().into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelSizeMismatch { .. })),
            "{refused:?}"
        );
        let mut back = [F16::from_f32(0.0); 2 * FEATURES];
        ctx.async_scope(|scope| {
            let up = scope.copy(&stream, &mut input, &host[..])?;
            let run = scope.execute(&stream, &mut model, [up.into()], [(&mut output).into()])?;
            assert!(matches!(
                run.output::<u16>(0),
                Err(Error::ModelTypeMismatch { .. })
            ));
            assert!(matches!(
                run.output::<BF16>(0),
                Err(Error::ModelTypeMismatch { .. })
            ));
            assert!(matches!(
                run.output::<F16>(usize::MAX),
                Err(Error::InvalidArgument(_))
            ));
            let out = run.output::<F16>(0)?;
            assert_eq!(ascend_typestate::Source::len(&out), 2 * FEATURES);
            scope.copy(&stream, &mut back[..], out)?;
            Ok(())
        })
        .unwrap();
        for (i, (b, h)) in back.iter().zip(&host).enumerate() {
            assert_eq!(b.to_f32(), h.to_f32() * 2.0, "element {i}");
        }
        drop(model);
    }
    ends_clean(session);
}

use ascend_typestate::BF16;

// ---------------------------------------------------------------------------------------
// 2. Ordering: results of a slow model read on other streams, by copies and kernels.

fn halved(x: f32) -> f32 {
    x / 2.0
}

#[test]
fn held_outputs_consumed_on_other_streams_by_a_kernel_and_a_second_model() {
    let slow = classifier(2, &[]).time_per_item(Duration::from_millis(20));
    let path = model_file("chain", &slow);
    let second = SimModel::new(SimDtype::F32, &[2, CLASSES], SimDtype::F32, &[2, CLASSES])
        .scale(3.0)
        .time_per_item(Duration::from_millis(10));
    let path2 = model_file("chain2", &second);
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let (s1, s2, s3) = (
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        );
        let mut first = ctx.load_model(&path).unwrap();
        let mut then = ctx.load_model(&path2).unwrap();
        let mut input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut mid = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut k = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut last = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        for n in 0..3 {
            let host = frame_input(n, 2);
            let (mut a, mut b, mut c) = ([0f32; 8], [0f32; 8], [0f32; 8]);
            ctx.async_scope(|scope| {
                let up = scope.copy(&s1, &mut input, &host[..])?;
                let run = scope.execute(&s1, &mut first, [up.into()], [(&mut mid).into()])?;
                let out = run.output::<f32>(0)?;
                // Read three ways on three other streams, each must be joined after the model.
                let kernel =
                    scope.simulated_map(&s2, Duration::from_millis(1), out, &mut k, halved)?;
                let run2 = scope.execute(&s3, &mut then, [out.into()], [(&mut last).into()])?;
                scope.copy(&s2, &mut a[..], kernel)?;
                scope.copy(&s1, &mut b[..], run2.output::<f32>(0)?)?;
                scope.copy(&s3, &mut c[..], out)?;
                Ok(())
            })
            .unwrap();
            let want = expected(&host);
            assert_close(
                &a,
                &want.iter().map(|x| x / 2.0).collect::<Vec<_>>(),
                "kernel",
            );
            assert_close(
                &b,
                &want.iter().map(|x| x * 3.0).collect::<Vec<_>>(),
                "model 2",
            );
            assert_close(&c, &want, "copy");
        }
        drop(first);
        drop(then);
    }
    ends_clean(session);
}

/// I/O memory of another context of the same device in a scope of the model's context.
#[test]
fn held_buffers_of_another_context_on_the_same_device() {
    let path = model_file("other_ctx_buffers", &classifier(2, &[]));
    let session = Session::start();
    {
        let device = session.default_device(0);
        let other = device.create_context().unwrap();
        let stream = device.create_stream().unwrap();
        let mut model = device.load_model(&path).unwrap();
        let mut input = other
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = other
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let host = frame_input(9, 2);
        let scores = run_once(&device, &stream, &mut model, &mut input, &mut output, &host);
        if let Ok(scores) = scores {
            assert_close(&scores, &expected(&host), "other context's buffers");
        }
        drop(model);
        drop(input);
        drop(output);
        drop(other);
    }
    ends_clean(session);
}

/// A failing synchronisation at the end of the scope (once): the error is returned, the
/// retry proves the stream done, and the results are complete.
#[test]
fn held_a_failing_scope_synchronisation_after_an_execution() {
    let slow = classifier(2, &[]).time_per_item(Duration::from_millis(10));
    let path = model_file("sync_fault", &slow);
    let drops = support::DropErrors::capture();
    let session = Session::start();
    session.expect_findings();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let mut input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let host = frame_input(4, 2);
        session.sim.inject_fault("aclrtSynchronizeStream", FAULT, 1);
        let failed = run_once(&ctx, &stream, &mut model, &mut input, &mut output, &host);
        assert!(failed.is_err(), "{failed:?}");
        assert!(stream.is_complete().unwrap());
        let mut back = vec![0f32; 2 * CLASSES];
        ctx.copy(&mut back[..], &output).unwrap();
        assert_close(&back, &expected(&host), "after the failed synchronisation");
        drop(model);
    }
    drops.take();
    assert_eq!(session.sim.live_objects(), 0);
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A kept dataset that cannot be destroyed (persistent fault) is reported, stays counted,
/// and its context is never destroyed over it (D3): `LiveChildren`.
#[test]
fn held_an_undestroyable_kept_dataset_keeps_its_context() {
    // It leaves objects in the runtime: a process of its own.
    if support::child::ran_in_child(
        "held_an_undestroyable_kept_dataset_keeps_its_context",
        "RED_TEAM_MODEL_SCOPE_CHILD",
        "STUCK-DATASET-OK",
    ) {
        return;
    }
    let path = model_file("stuck_dataset", &classifier(2, &[]));
    let drops = support::DropErrors::capture();
    drops.take();
    let session = Session::start();
    session.expect_findings();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let mut input = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(2 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        let host = frame_input(4, 2);
        run_once(&ctx, &stream, &mut model, &mut input, &mut output, &host).unwrap();
        session
            .sim
            .inject_fault("aclmdlDestroyDataset", FAULT, 1000);
        model.unload().unwrap();
        let reported = drops.take();
        assert!(
            reported.iter().any(|r| r.contains("507000")),
            "{reported:?}"
        );
        drop((input, output));
        stream.destroy().unwrap();
        let refused = ctx.destroy();
        assert!(
            matches!(&refused, Err(Error::LiveChildren { .. })),
            "{refused:?}"
        );
        session.sim.clear_faults();
        drop(refused);
    }
    drops.take();
    // The leaked dataset is left, and the checker saw nothing wrong with it.
    assert!(session.sim.live_objects() > 0);
    let findings = session.sim.findings();
    assert!(
        findings.iter().all(|f| f.rule != "MD5" && f.rule != "MD6"),
        "{findings:#?}"
    );
    println!("STUCK-DATASET-OK");
    std::mem::forget(session);
}

#[test]
fn held_dynamic_gears_out_of_range_are_refused_before_any_call() {
    let path = model_file("gears", &classifier(4, &[1, 2, 4]));
    let session = Session::start();
    session.sim.reset_call_counts();
    {
        let ctx = session.default_device(0);
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_dynamic_model(&path).unwrap();
        let input = ctx
            .alloc::<f32>(4 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let small = ctx
            .alloc::<f32>(2 * FEATURES, MallocPolicy::HugeFirst)
            .unwrap();
        let mut output = ctx
            .alloc::<f32>(4 * CLASSES, MallocPolicy::HugeFirst)
            .unwrap();
        for batch in [0u64, 3, 5, u64::MAX] {
            let refused = ctx.async_scope(|scope| {
                scope.execute_batch(
                    &stream,
                    &mut model,
                    batch,
                    [(&input).into()],
                    [(&mut output).into()],
                )?;
                Ok(())
            });
            assert!(
                matches!(refused, Err(Error::NotAGear { .. })),
                "{batch}: {refused:?}"
            );
        }
        // Inputs sized for a smaller gear: refused (MD10: the largest gear's size).
        let refused = ctx.async_scope(|scope| {
            scope.execute_batch(
                &stream,
                &mut model,
                2,
                [(&small).into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelSizeMismatch { .. })),
            "{refused:?}"
        );
        // The batch input is the model's own: passing it too is a count error.
        let refused = ctx.async_scope(|scope| {
            scope.execute_batch(
                &stream,
                &mut model,
                2,
                [(&input).into(), (&input).into()],
                [(&mut output).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelTensorCount { .. })),
            "{refused:?}"
        );
        assert_eq!(session.sim.call_count("aclmdlExecuteAsync"), 0);
        assert_eq!(session.sim.call_count("aclmdlCreateDataset"), 0);
        drop(model);
    }
    ends_clean(session);
}
