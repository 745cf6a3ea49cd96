//! Scoped model executions under faults and in every drop order (nothing lost): faults on
//! every call of a static and a dynamic scoped execution, failed destroys of the model's kept
//! datasets (retried and reported, or kept with their context), a failed scope
//! synchronisation, drop orders of model, buffers and stream, a model dropped while pending in
//! a pipeline. The compile-time escapes tried against the same API are listed in
//! `scoped_attacks.rs`.

use crate::support;

use std::time::Duration;

use ascend_typestate::{Error, MallocPolicy, PipelineConfig};
use support::sim::Session;

use super::common::{
    CLASSES, FEATURES, assert_close, classifier, ends_clean, expected, frame_input, model_file,
};

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
    let path = model_file("scoped_faults_static", &classifier(2, &[]));
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
    let path = model_file("scoped_faults_dynamic", &classifier(4, &[1, 2, 4]));
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
    let path = model_file("scoped_destroy_faults", &classifier(2, &[]));
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
    let path = model_file("scoped_drop_orders", &classifier(2, &[]));
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
        "scoped_deferred",
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
    let path = model_file("scoped_failed_launch", &classifier(2, &[]));
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

/// A kept dataset that cannot be destroyed (persistent fault) is reported, stays counted,
/// and its context is never destroyed over it (D3): `LiveChildren`.
#[test]
fn held_an_undestroyable_kept_dataset_keeps_its_context() {
    // It leaves objects in the runtime: a process of its own.
    if support::child::ran_in_child(
        "held_an_undestroyable_kept_dataset_keeps_its_context",
        "SCOPED_MODEL_CHILD",
        "STUCK-DATASET-OK",
    ) {
        return;
    }
    let path = model_file("scoped_stuck_dataset", &classifier(2, &[]));
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

/// A failing synchronisation at the end of the scope (once): the error is returned, the
/// retry proves the stream done, and the results are complete.
#[test]
fn held_a_failing_scope_synchronisation_after_an_execution() {
    let slow = classifier(2, &[]).time_per_item(Duration::from_millis(10));
    let path = model_file("scoped_sync_fault", &slow);
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
