//! A program that drops its values in the order Rust chooses never leaks. The
//! harness, and how a case runs and passes, are in `drop_orders`; this module's groups:
//! devices and contexts, one device set twice, streams.

use std::fmt::Debug;

use ascend_typestate::{Acl, Context, DefaultContext, Device, Result, Set, StreamConfig};

use super::drop_orders::{Group, Run, declared, group_test, host_fn_stream, slow};

// ---------------------------------------------------------------------------------------
// Devices and contexts: a device in Set with a context of its own, a device in
// DefaultContext, each with a stream (a plain one, a configured one) with a kernel pending.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rt {
    DeviceSet,
    ContextOfIt,
    StreamInContext,
    DeviceDefaultContext,
    ConfiguredStreamOnDefault,
}

const RUNTIME: Group<Rt> = Group {
    name: "devices and contexts",
    nodes: &[
        Rt::DeviceSet,
        Rt::ContextOfIt,
        Rt::StreamInContext,
        Rt::DeviceDefaultContext,
        Rt::ConfiguredStreamOnDefault,
    ],
    borrows: |node| match node {
        Rt::ContextOfIt => &[Rt::DeviceSet],
        Rt::StreamInContext => &[Rt::ContextOfIt],
        Rt::ConfiguredStreamOnDefault => &[Rt::DeviceDefaultContext],
        Rt::DeviceSet | Rt::DeviceDefaultContext => &[],
    },
    stops_mid_way: true,
    kernel_endings: false,
    program: |acl, run, order| {
        let env = RtEnv {
            acl,
            set: None,
            ctx: None,
            default: None,
        };
        runtime_level(env, run, order)
    },
};

struct RtEnv<'a> {
    acl: &'a Acl,
    set: Option<&'a Device<'a, Set>>,
    ctx: Option<&'a Context<'a>>,
    default: Option<&'a Device<'a, DefaultContext>>,
}

fn runtime_level(env: RtEnv<'_>, run: &Run<'_>, order: &[Rt]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return run.end();
    };
    match node {
        Rt::DeviceSet => {
            let device = env.acl.set_device(0)?;
            runtime_level(
                RtEnv {
                    set: Some(&device),
                    ..env
                },
                run,
                rest,
            )
        }
        Rt::ContextOfIt => {
            let ctx = declared(env.set).create_context()?;
            runtime_level(
                RtEnv {
                    ctx: Some(&ctx),
                    ..env
                },
                run,
                rest,
            )
        }
        Rt::StreamInContext => {
            let stream = declared(env.ctx).create_stream()?;
            slow(run, &stream)?;
            runtime_level(env, run, rest)
        }
        Rt::DeviceDefaultContext => {
            let device = env.acl.set_device(1)?.into_default_context()?;
            runtime_level(
                RtEnv {
                    default: Some(&device),
                    ..env
                },
                run,
                rest,
            )
        }
        Rt::ConfiguredStreamOnDefault => {
            let config = StreamConfig::new().priority(3).fast_launch().fast_sync();
            let stream = declared(env.default).create_stream_with(config)?;
            slow(run, &stream)?;
            runtime_level(env, run, rest)
        }
    }
}

#[test]
fn devices_and_contexts_in_every_order() {
    group_test("devices_and_contexts_in_every_order", &RUNTIME);
}

// One device set twice (set and reset pair, D1): one value in Set with a context of its own,
// the other in DefaultContext with a stream on its default context and a context created
// beside it. Each context comes with a stream (declared after it) with a kernel pending.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tw {
    DeviceSet,
    ContextOfSet,
    SameDeviceDefaultContext,
    ContextOfDefault,
    StreamOnDefault,
}

const SAME_DEVICE: Group<Tw> = Group {
    name: "one device set twice",
    nodes: &[
        Tw::DeviceSet,
        Tw::ContextOfSet,
        Tw::SameDeviceDefaultContext,
        Tw::ContextOfDefault,
        Tw::StreamOnDefault,
    ],
    borrows: |node| match node {
        Tw::ContextOfSet => &[Tw::DeviceSet],
        Tw::ContextOfDefault | Tw::StreamOnDefault => &[Tw::SameDeviceDefaultContext],
        Tw::DeviceSet | Tw::SameDeviceDefaultContext => &[],
    },
    stops_mid_way: true,
    kernel_endings: false,
    program: |acl, run, order| {
        let env = TwEnv {
            acl,
            set: None,
            default: None,
        };
        same_device_level(env, run, order)
    },
};

struct TwEnv<'a> {
    acl: &'a Acl,
    set: Option<&'a Device<'a, Set>>,
    default: Option<&'a Device<'a, DefaultContext>>,
}

fn same_device_level(env: TwEnv<'_>, run: &Run<'_>, order: &[Tw]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return run.end();
    };
    match node {
        Tw::DeviceSet => {
            let device = env.acl.set_device(0)?;
            same_device_level(
                TwEnv {
                    set: Some(&device),
                    ..env
                },
                run,
                rest,
            )
        }
        Tw::SameDeviceDefaultContext => {
            let device = env.acl.set_device(0)?.into_default_context()?;
            same_device_level(
                TwEnv {
                    default: Some(&device),
                    ..env
                },
                run,
                rest,
            )
        }
        Tw::ContextOfSet | Tw::ContextOfDefault => {
            let ctx = match node {
                Tw::ContextOfSet => declared(env.set).create_context()?,
                _ => declared(env.default).create_context()?,
            };
            let stream = ctx.create_stream()?;
            slow(run, &stream)?;
            same_device_level(env, run, rest)
        }
        Tw::StreamOnDefault => {
            let stream = declared(env.default).create_stream()?;
            slow(run, &stream)?;
            same_device_level(env, run, rest)
        }
    }
}

#[test]
fn one_device_set_twice_in_every_order() {
    group_test("one_device_set_twice_in_every_order", &SAME_DEVICE);
}

// ---------------------------------------------------------------------------------------
// Streams of one context: plain, made from a StreamConfig, running host functions, and a
// created event beside them.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Stream,
    ConfiguredStream,
    HostFnStream,
    CreatedEvent,
}

const STREAMS: Group<St> = Group {
    name: "streams",
    nodes: &[
        St::Stream,
        St::ConfiguredStream,
        St::HostFnStream,
        St::CreatedEvent,
    ],
    borrows: |_| &[],
    stops_mid_way: true,
    kernel_endings: false,
    program: |acl, run, order| {
        let device = acl.set_device(0)?;
        let ctx = device.create_context()?;
        streams_level(&ctx, run, order)
    },
};

fn streams_level(ctx: &Context<'_>, run: &Run<'_>, order: &[St]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return run.end();
    };
    match node {
        St::Stream => {
            let stream = ctx.create_stream()?;
            slow(run, &stream)?;
            streams_level(ctx, run, rest)
        }
        St::ConfiguredStream => {
            let config = StreamConfig::new()
                .priority(7)
                .fast_launch()
                .fast_sync()
                .stop_on_failure();
            let stream = ctx.create_stream_with(config)?;
            slow(run, &stream)?;
            streams_level(ctx, run, rest)
        }
        St::HostFnStream => {
            let _stream = host_fn_stream(run, ctx)?;
            streams_level(ctx, run, rest)
        }
        St::CreatedEvent => {
            let _event = ctx.create_event()?;
            streams_level(ctx, run, rest)
        }
    }
}

#[test]
fn streams_in_every_order() {
    group_test("streams_in_every_order", &STREAMS);
}
