//! A program that drops its values in the order Rust chooses never leaks. The
//! harness, and how a case runs and passes, are in `drop_orders`; this module's groups:
//! memory and an async scope, pipelines.

use std::fmt::Debug;

use ascend_typestate::{Context, DeviceBuffer, HostBuffer, MallocPolicy, Pipeline, Result, Stream};

use super::drop_orders::{
    Group, Run, declared, group_test, host_fn_stream, pipeline_in_flight, slow,
};

// ---------------------------------------------------------------------------------------
// Memory and an async scope: device and pinned host buffers, a scope with pending copies
// (a host-to-device copy behind a kernel, and a device-to-host copy of its `Pending` result
// on another stream, joined after it), and handles declared before the scope or inside its
// body (dropped there before the scope synchronises): a host-function stream, an event
// recorded behind a kernel.

const SCOPE_LEN: usize = 1 << 14;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mem {
    DeviceBuffer,
    HostBuffer,
    AsyncScope,
    HostFnStream,
    RecordedEvent,
}

const MEMORY: Group<Mem> = Group {
    name: "memory and async scopes",
    nodes: &[
        Mem::DeviceBuffer,
        Mem::HostBuffer,
        Mem::AsyncScope,
        Mem::HostFnStream,
        Mem::RecordedEvent,
    ],
    borrows: |node| match node {
        Mem::AsyncScope => &[Mem::DeviceBuffer, Mem::HostBuffer],
        _ => &[],
    },
    stops_mid_way: true,
    kernel_endings: false,
    program: |acl, run, order| {
        let device = acl.set_device(0)?;
        let ctx = device.create_context()?;
        let (a, b) = (ctx.create_stream()?, ctx.create_stream()?);
        let mut out = vec![0u32; SCOPE_LEN];
        let env = MemEnv {
            ctx: &ctx,
            a: &a,
            b: &b,
            out: Some(&mut out),
            device: None,
            host: None,
        };
        memory_level(env, run, order)
    },
};

struct MemEnv<'a, 'c> {
    ctx: &'c Context<'c>,
    a: &'a Stream<'c>,
    b: &'a Stream<'c>,
    out: Option<&'a mut Vec<u32>>,
    device: Option<&'a mut DeviceBuffer<'c, u32>>,
    host: Option<&'a HostBuffer<'c, u32>>,
}

fn memory_level(mut env: MemEnv<'_, '_>, run: &Run<'_>, order: &[Mem]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return run.end();
    };
    match node {
        Mem::DeviceBuffer => {
            let mut buffer = env.ctx.alloc::<u32>(SCOPE_LEN, MallocPolicy::HugeFirst)?;
            memory_level(
                MemEnv {
                    device: Some(&mut buffer),
                    ..env
                },
                run,
                rest,
            )
        }
        Mem::HostBuffer => {
            let mut buffer = env.ctx.alloc_host::<u32>(SCOPE_LEN)?;
            buffer.fill(7);
            memory_level(
                MemEnv {
                    host: Some(&buffer),
                    ..env
                },
                run,
                rest,
            )
        }
        Mem::AsyncScope => {
            let (a, b) = (env.a, env.b);
            let device = declared(env.device.take());
            let host = declared(env.host);
            let out = declared(env.out.take());
            env.ctx.async_scope(|scope| {
                slow(run, a)?;
                let staged = scope.copy(a, device, host)?;
                let _back = scope.copy(b, out, staged)?;
                memory_level(env, run, rest)
            })
        }
        Mem::HostFnStream => {
            let _stream = host_fn_stream(run, env.ctx)?;
            memory_level(env, run, rest)
        }
        Mem::RecordedEvent => {
            // On the stream the scope's second copy uses: both wait behind this kernel.
            slow(run, env.b)?;
            let _event = env.ctx.create_event()?.record(env.b)?;
            memory_level(env, run, rest)
        }
    }
}

#[test]
fn memory_and_async_scopes_in_every_order() {
    group_test("memory_and_async_scopes_in_every_order", &MEMORY);
}

// ---------------------------------------------------------------------------------------
// Pipelines: two with frames in flight, a slot held (not submitted), and a stream.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pl {
    PipelineA,
    SlotOfA,
    PipelineB,
    Stream,
}

const PIPELINES: Group<Pl> = Group {
    name: "pipelines",
    nodes: &[Pl::PipelineA, Pl::SlotOfA, Pl::PipelineB, Pl::Stream],
    borrows: |node| match node {
        Pl::SlotOfA => &[Pl::PipelineA],
        _ => &[],
    },
    stops_mid_way: true,
    kernel_endings: false,
    program: |acl, run, order| {
        let device = acl.set_device(0)?.into_default_context()?;
        let env = PlEnv {
            ctx: &device,
            pipeline: None,
        };
        pipelines_level(env, run, order)
    },
};

struct PlEnv<'a, 'c> {
    ctx: &'c Context<'c>,
    pipeline: Option<&'a mut Pipeline<'c, f32, f32>>,
}

fn pipelines_level(mut env: PlEnv<'_, '_>, run: &Run<'_>, order: &[Pl]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return run.end();
    };
    match node {
        Pl::PipelineA => {
            let mut pipeline = pipeline_in_flight(run, env.ctx, 3)?;
            pipelines_level(
                PlEnv {
                    pipeline: Some(&mut pipeline),
                    ..env
                },
                run,
                rest,
            )
        }
        Pl::SlotOfA => {
            // The oldest frame is proven done; the two others are still in flight.
            let mut slot = declared(env.pipeline.take()).next_slot()?;
            slot.input_mut().fill(3.0);
            pipelines_level(env, run, rest)
        }
        Pl::PipelineB => {
            let _pipeline = pipeline_in_flight(run, env.ctx, 2)?;
            pipelines_level(env, run, rest)
        }
        Pl::Stream => {
            let stream = env.ctx.create_stream()?;
            slow(run, &stream)?;
            pipelines_level(env, run, rest)
        }
    }
}

#[test]
fn pipelines_in_every_order() {
    group_test("pipelines_in_every_order", &PIPELINES);
}
