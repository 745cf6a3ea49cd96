//! A program that drops its values in the order Rust chooses never leaks. The
//! harness, and how a case runs and passes, are in `drop_orders`; this module's groups:
//! models in a pipeline, model sources, and the case of a pipeline and its model written out.

use std::fmt::Debug;
use std::time::Instant;

use ascend_typestate::{
    Acl, Context, Dynamic, MallocPolicy, Model, ModelIo, ModelSource, Pipeline, PipelineConfig,
    Result, Static,
};

use super::drop_orders::{
    FRAME_IN, FRAME_KERNEL, FRAME_OUT, Group, MODEL_SLOTS, Run, group_test, infer,
};

// ---------------------------------------------------------------------------------------
// Models: a pipeline whose frames execute a fixed and a dynamic-batch model (pending when
// the program ends), and a ModelIo of the fixed model that executed it synchronously first.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Md {
    Pipeline,
    StaticModel,
    DynamicModel,
    ModelIo,
}

const MODELS: Group<Md> = Group {
    name: "models",
    nodes: &[Md::Pipeline, Md::StaticModel, Md::DynamicModel, Md::ModelIo],
    // A ModelIo borrows nothing: it is declared anywhere, and assigned once its model is
    // loaded.
    borrows: |_| &[],
    stops_mid_way: true,
    kernel_endings: true,
    program: |acl, run, order| {
        let device = acl.set_device(0)?;
        let ctx = device.create_context()?;
        let env = MdEnv {
            ctx: &ctx,
            pipeline: None,
            fixed: None,
            dynamic: None,
            io: None,
        };
        models_level(env, run, order)
    },
};

struct MdEnv<'a, 'c> {
    ctx: &'c Context<'c>,
    pipeline: Option<&'a mut Pipeline<'c, f32, f32>>,
    fixed: Option<&'a mut Model<'c, Static>>,
    dynamic: Option<&'a mut Model<'c, Dynamic>>,
    io: Option<&'a mut Option<ModelIo<'c>>>,
}

/// What the kernel closure of frame `frame` of a model pipeline does once it has issued the
/// frame's execution: for the last frame, count the frames as issued work (one after the
/// other on the compute stream, each at least `FRAME_KERNEL`), and end there for the
/// endings in a kernel.
fn frame_issued<'r>(
    run: &'r Run<'_>,
    issued: Instant,
    frame: usize,
) -> impl Fn() -> Result<()> + 'r {
    move || {
        if frame + 1 < MODEL_SLOTS {
            return Ok(());
        }
        run.issued(issued, FRAME_KERNEL * MODEL_SLOTS as u32);
        run.end_in_kernel()
    }
}

fn model_pipeline<'c>(ctx: &'c Context<'c>) -> Result<Pipeline<'c, f32, f32>> {
    ctx.create_pipeline::<f32, f32>(PipelineConfig::new(FRAME_IN, FRAME_OUT).slots(MODEL_SLOTS))
}

fn models_level(env: MdEnv<'_, '_>, run: &Run<'_>, order: &[Md]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return models_end(env, run);
    };
    match node {
        Md::Pipeline => {
            let mut pipeline = model_pipeline(env.ctx)?;
            models_level(
                MdEnv {
                    pipeline: Some(&mut pipeline),
                    ..env
                },
                run,
                rest,
            )
        }
        Md::StaticModel => {
            let mut model = env.ctx.load_model(&run.models.fixed)?;
            models_level(
                MdEnv {
                    fixed: Some(&mut model),
                    ..env
                },
                run,
                rest,
            )
        }
        Md::DynamicModel => {
            let mut model = env.ctx.load_dynamic_model(&run.models.dynamic)?;
            models_level(
                MdEnv {
                    dynamic: Some(&mut model),
                    ..env
                },
                run,
                rest,
            )
        }
        Md::ModelIo => {
            let mut io = None;
            models_level(
                MdEnv {
                    io: Some(&mut io),
                    ..env
                },
                run,
                rest,
            )
        }
    }
}

/// The innermost frame: a synchronous execution on the ModelIo, then a frame in flight in
/// each slot, executing the fixed and the dynamic model in turn.
fn models_end(env: MdEnv<'_, '_>, run: &Run<'_>) -> Result<()> {
    let MdEnv {
        pipeline,
        mut fixed,
        mut dynamic,
        io,
        ..
    } = env;
    if let (Some(io), Some(model)) = (io, fixed.as_deref_mut()) {
        let mut created = model.create_io(MallocPolicy::HugeFirst)?;
        created.write_input(0, &[0.5f32; FRAME_IN])?;
        model.execute(&mut created)?;
        *io = Some(created);
    }
    if let Some(pipeline) = pipeline {
        let issued = Instant::now();
        for frame in 0..MODEL_SLOTS {
            let after = frame_issued(run, issued, frame);
            let mut slot = pipeline.next_slot()?;
            slot.input_mut().fill(frame as f32);
            match (frame % 2, fixed.as_deref_mut(), dynamic.as_deref_mut()) {
                (1, _, Some(model)) | (_, None, Some(model)) => slot.submit(|launch| {
                    launch.execute_batch(model, 2)?;
                    after()
                })?,
                (_, Some(model), _) => slot.submit(|launch| {
                    launch.execute(model)?;
                    after()
                })?,
                (_, None, None) => slot.submit(|launch| {
                    launch.simulated_map(FRAME_KERNEL, infer)?;
                    after()
                })?,
            };
        }
        // What makes the order matter: every model loaded has executions pending (MD7).
        let pending = [
            fixed.as_deref().map(Model::pending),
            dynamic.as_deref().map(Model::pending),
        ];
        assert!(pending.iter().flatten().all(|&p| p > 0), "{pending:?}");
    }
    run.end()
}

#[test]
fn models_in_every_order() {
    group_test("models_in_every_order", &MODELS);
}

// ---------------------------------------------------------------------------------------
// Model sources: a model loaded with work and weight memory it owns (MD2), one loaded from
// bytes (MD3), both executing in a pipeline's frames, and a source with memory that is never
// loaded.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    Pipeline,
    ModelWithMemory,
    UnloadedSourceWithMemory,
    ModelFromBytes,
}

const SOURCES: Group<Src> = Group {
    name: "model sources",
    nodes: &[
        Src::Pipeline,
        Src::ModelWithMemory,
        Src::UnloadedSourceWithMemory,
        Src::ModelFromBytes,
    ],
    borrows: |_| &[],
    stops_mid_way: true,
    kernel_endings: true,
    program: |acl, run, order| {
        let device = acl.set_device(0)?.into_default_context()?;
        let env = SrcEnv {
            ctx: &device,
            pipeline: None,
            with_memory: None,
            from_bytes: None,
        };
        sources_level(env, run, order)
    },
};

struct SrcEnv<'a, 'c> {
    ctx: &'c Context<'c>,
    pipeline: Option<&'a mut Pipeline<'c, f32, f32>>,
    with_memory: Option<&'a mut Model<'c, Static>>,
    from_bytes: Option<&'a mut Model<'c, Static>>,
}

fn source_with_memory<'c>(ctx: &'c Context<'c>, run: &Run<'_>) -> Result<ModelSource<'c>> {
    let path = &run.models.fixed;
    let (work, weight) = ctx.model_memory_size(path)?;
    Ok(ModelSource::file_with_memory(
        path,
        ctx.alloc::<u8>(work, MallocPolicy::HugeFirst)?,
        ctx.alloc::<u8>(weight, MallocPolicy::HugeFirst)?,
    ))
}

fn sources_level(env: SrcEnv<'_, '_>, run: &Run<'_>, order: &[Src]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return sources_end(env, run);
    };
    match node {
        Src::Pipeline => {
            let mut pipeline = model_pipeline(env.ctx)?;
            sources_level(
                SrcEnv {
                    pipeline: Some(&mut pipeline),
                    ..env
                },
                run,
                rest,
            )
        }
        Src::ModelWithMemory => {
            let mut model = env.ctx.load_model(source_with_memory(env.ctx, run)?)?;
            sources_level(
                SrcEnv {
                    with_memory: Some(&mut model),
                    ..env
                },
                run,
                rest,
            )
        }
        Src::UnloadedSourceWithMemory => {
            let _source = source_with_memory(env.ctx, run)?;
            sources_level(env, run, rest)
        }
        Src::ModelFromBytes => {
            let bytes = run.models.text.clone().into_bytes();
            let mut model = env.ctx.load_model(ModelSource::bytes(bytes))?;
            sources_level(
                SrcEnv {
                    from_bytes: Some(&mut model),
                    ..env
                },
                run,
                rest,
            )
        }
    }
}

/// The innermost frame: a frame in flight in each slot, executing the two models in turn.
fn sources_end(env: SrcEnv<'_, '_>, run: &Run<'_>) -> Result<()> {
    let SrcEnv {
        pipeline,
        mut with_memory,
        mut from_bytes,
        ..
    } = env;
    if let Some(pipeline) = pipeline {
        let issued = Instant::now();
        for frame in 0..MODEL_SLOTS {
            let slot = pipeline.next_slot()?;
            let after = frame_issued(run, issued, frame);
            let model = match (
                frame % 2,
                with_memory.as_deref_mut(),
                from_bytes.as_deref_mut(),
            ) {
                (1, _, Some(model)) | (_, None, Some(model)) | (_, Some(model), _) => model,
                (_, None, None) => {
                    slot.submit(|launch| {
                        launch.simulated_map(FRAME_KERNEL, infer)?;
                        after()
                    })?;
                    continue;
                }
            };
            slot.submit(|launch| {
                launch.execute(model)?;
                after()
            })?;
        }
        // Every model loaded has executions pending (MD7).
        let pending = [
            with_memory.as_deref().map(Model::pending),
            from_bytes.as_deref().map(Model::pending),
        ];
        assert!(pending.iter().flatten().all(|&p| p > 0), "{pending:?}");
    }
    run.end()
}

#[test]
fn model_sources_in_every_order() {
    group_test("model_sources_in_every_order", &SOURCES);
}

// ---------------------------------------------------------------------------------------
// The case of a pipeline and its model, written out: create a pipeline, load a model, submit a frame that
// executes it, return; in both declaration orders. The model declared after the pipeline
// drops first, its execution pending: its unload waits until the pipeline proves the frame
// done.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Issue {
    Pipeline,
    Model,
}

const ISSUE_23: Group<Issue> = Group {
    name: "a pipeline and the model it executes",
    nodes: &[Issue::Pipeline, Issue::Model],
    borrows: |_| &[],
    // Two programs written out, each ended as a whole.
    stops_mid_way: false,
    kernel_endings: false,
    program: |acl, run, order| match order {
        [Issue::Pipeline, Issue::Model] => pipeline_then_model(acl, run),
        _ => model_then_pipeline(acl, run),
    },
};

fn pipeline_then_model(acl: &Acl, run: &Run<'_>) -> Result<()> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut pipeline =
        device.create_pipeline::<f32, f32>(PipelineConfig::new(FRAME_IN, FRAME_OUT))?;
    let mut model = device.load_model(&run.models.fixed)?;
    let issued = Instant::now();
    pipeline.next_slot()?.submit(|l| l.execute(&mut model))?;
    run.issued(issued, FRAME_KERNEL);
    assert_eq!(model.pending(), 1, "the execution is pending");
    run.end()
}

fn model_then_pipeline(acl: &Acl, run: &Run<'_>) -> Result<()> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut model = device.load_model(&run.models.fixed)?;
    let mut pipeline =
        device.create_pipeline::<f32, f32>(PipelineConfig::new(FRAME_IN, FRAME_OUT))?;
    let issued = Instant::now();
    pipeline.next_slot()?.submit(|l| l.execute(&mut model))?;
    run.issued(issued, FRAME_KERNEL);
    assert_eq!(model.pending(), 1, "the execution is pending");
    run.end()
}

#[test]
fn a_model_executing_in_a_pipeline_in_both_declaration_orders() {
    group_test(
        "a_model_executing_in_a_pipeline_in_both_declaration_orders",
        &ISSUE_23,
    );
}
