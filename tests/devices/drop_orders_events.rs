//! A program that drops its values in the order Rust chooses never leaks. The
//! harness, and how a case runs and passes, are in `drop_orders`; this module's groups:
//! events in their states, host callbacks, report threads, host-function threads.

use std::fmt::Debug;

use ascend_typestate::{Context, Device, HostFuncThread, ReportThread, Result, Set, Stream};

use super::drop_orders::{Group, Run, declared, group_test, host_fn_stream, slow, subscribed};

// ---------------------------------------------------------------------------------------
// Events in their states, on the default context of a device, each behind the kernels of
// its streams: recorded; waited on by two streams and reset by the first (its reset joined
// after the other's wait, E5); and recorded again after a reset on another stream (an
// internal join event, E5).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    StreamA,
    StreamB,
    RecordedOnA,
    ResetAfterWaitsOnBAndA,
    RecordedAgainAfterResetOnB,
}

const EVENTS: Group<Ev> = Group {
    name: "events",
    nodes: &[
        Ev::StreamA,
        Ev::StreamB,
        Ev::RecordedOnA,
        Ev::ResetAfterWaitsOnBAndA,
        Ev::RecordedAgainAfterResetOnB,
    ],
    borrows: |node| match node {
        Ev::StreamA | Ev::StreamB => &[],
        Ev::RecordedOnA => &[Ev::StreamA],
        Ev::ResetAfterWaitsOnBAndA | Ev::RecordedAgainAfterResetOnB => &[Ev::StreamA, Ev::StreamB],
    },
    stops_mid_way: true,
    kernel_endings: false,
    program: |acl, run, order| {
        let device = acl.set_device(0)?.into_default_context()?;
        let env = EvEnv {
            ctx: &device,
            a: None,
            b: None,
        };
        events_level(env, run, order)
    },
};

struct EvEnv<'a> {
    ctx: &'a Context<'a>,
    a: Option<&'a Stream<'a>>,
    b: Option<&'a Stream<'a>>,
}

fn events_level(env: EvEnv<'_>, run: &Run<'_>, order: &[Ev]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return run.end();
    };
    match node {
        Ev::StreamA => {
            let a = env.ctx.create_stream()?;
            slow(run, &a)?;
            events_level(EvEnv { a: Some(&a), ..env }, run, rest)
        }
        Ev::StreamB => {
            let b = env.ctx.create_stream()?;
            slow(run, &b)?;
            events_level(EvEnv { b: Some(&b), ..env }, run, rest)
        }
        // Each stream's kernel, issued when it was created, is still ahead of these tasks.
        Ev::RecordedOnA => {
            let _event = env.ctx.create_event()?.record(declared(env.a))?;
            events_level(env, run, rest)
        }
        Ev::ResetAfterWaitsOnBAndA => {
            let (a, b) = (declared(env.a), declared(env.b));
            let _event = env.ctx.create_event()?.record(a)?.wait(b, |mut waited| {
                waited.also_wait(a)?;
                waited.reset()
            })?;
            events_level(env, run, rest)
        }
        Ev::RecordedAgainAfterResetOnB => {
            let (a, b) = (declared(env.a), declared(env.b));
            let _event = env
                .ctx
                .create_event()?
                .record(a)?
                .wait_and_reset(b)?
                .record(a)?;
            events_level(env, run, rest)
        }
    }
}

#[test]
fn events_in_every_order() {
    group_test("events_in_every_order", &EVENTS);
}

// ---------------------------------------------------------------------------------------
// Callbacks and host functions: a report thread with a subscribed stream whose callbacks
// wait behind a kernel, beside a host-function stream and a plain stream.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cb {
    ReportThread,
    Subscribed,
    HostFnStream,
    Stream,
}

const CALLBACKS: Group<Cb> = Group {
    name: "callbacks",
    nodes: &[
        Cb::ReportThread,
        Cb::Subscribed,
        Cb::HostFnStream,
        Cb::Stream,
    ],
    borrows: |node| match node {
        Cb::Subscribed => &[Cb::ReportThread],
        _ => &[],
    },
    stops_mid_way: true,
    kernel_endings: false,
    program: |acl, run, order| {
        let device = acl.set_device(0)?;
        let ctx = device.create_context()?;
        let env = CbEnv {
            ctx: &ctx,
            report: None,
        };
        callbacks_level(env, run, order)
    },
};

struct CbEnv<'a> {
    ctx: &'a Context<'a>,
    report: Option<&'a ReportThread<'a>>,
}

fn callbacks_level(env: CbEnv<'_>, run: &Run<'_>, order: &[Cb]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return run.end();
    };
    match node {
        Cb::ReportThread => {
            let report = ReportThread::spawn(env.ctx)?;
            callbacks_level(
                CbEnv {
                    report: Some(&report),
                    ..env
                },
                run,
                rest,
            )
        }
        Cb::Subscribed => {
            let _stream = subscribed(run, env.ctx, declared(env.report))?;
            callbacks_level(env, run, rest)
        }
        Cb::HostFnStream => {
            let _stream = host_fn_stream(run, env.ctx)?;
            callbacks_level(env, run, rest)
        }
        Cb::Stream => {
            let stream = env.ctx.create_stream()?;
            slow(run, &stream)?;
            callbacks_level(env, run, rest)
        }
    }
}

#[test]
fn callbacks_in_every_order() {
    group_test("callbacks_in_every_order", &CALLBACKS);
}

// Two report threads, one serving two subscribed streams, the other one.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rp {
    ReportThread1,
    ReportThread2,
    SubscribedA1,
    SubscribedB1,
    SubscribedC2,
}

const REPORT_THREADS: Group<Rp> = Group {
    name: "report threads",
    nodes: &[
        Rp::ReportThread1,
        Rp::ReportThread2,
        Rp::SubscribedA1,
        Rp::SubscribedB1,
        Rp::SubscribedC2,
    ],
    borrows: |node| match node {
        Rp::SubscribedA1 | Rp::SubscribedB1 => &[Rp::ReportThread1],
        Rp::SubscribedC2 => &[Rp::ReportThread2],
        Rp::ReportThread1 | Rp::ReportThread2 => &[],
    },
    stops_mid_way: true,
    kernel_endings: false,
    program: |acl, run, order| {
        let device = acl.set_device(0)?.into_default_context()?;
        let env = RpEnv {
            ctx: &device,
            first: None,
            second: None,
        };
        report_threads_level(env, run, order)
    },
};

struct RpEnv<'a> {
    ctx: &'a Context<'a>,
    first: Option<&'a ReportThread<'a>>,
    second: Option<&'a ReportThread<'a>>,
}

fn report_threads_level(env: RpEnv<'_>, run: &Run<'_>, order: &[Rp]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return run.end();
    };
    match node {
        Rp::ReportThread1 => {
            let report = ReportThread::spawn(env.ctx)?;
            report_threads_level(
                RpEnv {
                    first: Some(&report),
                    ..env
                },
                run,
                rest,
            )
        }
        Rp::ReportThread2 => {
            let report = ReportThread::spawn(env.ctx)?;
            report_threads_level(
                RpEnv {
                    second: Some(&report),
                    ..env
                },
                run,
                rest,
            )
        }
        Rp::SubscribedA1 | Rp::SubscribedB1 => {
            let _stream = subscribed(run, env.ctx, declared(env.first))?;
            report_threads_level(env, run, rest)
        }
        Rp::SubscribedC2 => {
            let _stream = subscribed(run, env.ctx, declared(env.second))?;
            report_threads_level(env, run, rest)
        }
    }
}

#[test]
fn report_threads_in_every_order() {
    group_test("report_threads_in_every_order", &REPORT_THREADS);
}

// ---------------------------------------------------------------------------------------
// Host-function threads (C12): one thread serving a stream of its own context and one of a
// second context of the device, each behind a kernel, beside a plain stream. The thread is
// dropped after the subscriptions that borrow it (stopped), the second context after its
// stream; the device and the first context are the parents.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hf {
    HostFuncThread,
    SubscribedA,
    SecondContext,
    SubscribedBOfTheSecondContext,
    Stream,
}

const HOST_FUNC_THREADS: Group<Hf> = Group {
    name: "host-function threads",
    nodes: &[
        Hf::HostFuncThread,
        Hf::SubscribedA,
        Hf::SecondContext,
        Hf::SubscribedBOfTheSecondContext,
        Hf::Stream,
    ],
    borrows: |node| match node {
        Hf::SubscribedA => &[Hf::HostFuncThread],
        Hf::SubscribedBOfTheSecondContext => &[Hf::HostFuncThread, Hf::SecondContext],
        Hf::HostFuncThread | Hf::SecondContext | Hf::Stream => &[],
    },
    stops_mid_way: true,
    kernel_endings: false,
    program: |acl, run, order| {
        let device = acl.set_device(0)?;
        let ctx = device.create_context()?;
        let env = HfEnv {
            device: &device,
            ctx: &ctx,
            host: None,
            second: None,
        };
        host_func_threads_level(env, run, order)
    },
};

struct HfEnv<'a> {
    device: &'a Device<'a, Set>,
    ctx: &'a Context<'a>,
    host: Option<&'a HostFuncThread<'a>>,
    second: Option<&'a Context<'a>>,
}

fn host_func_threads_level(env: HfEnv<'_>, run: &Run<'_>, order: &[Hf]) -> Result<()> {
    let Some((&node, rest)) = order.split_first() else {
        return run.end();
    };
    match node {
        Hf::HostFuncThread => {
            let host = HostFuncThread::spawn(env.ctx)?;
            host_func_threads_level(
                HfEnv {
                    host: Some(&host),
                    ..env
                },
                run,
                rest,
            )
        }
        Hf::SubscribedA => {
            let stream = declared(env.host).subscribe(env.ctx.create_stream()?)?;
            slow(run, &stream)?;
            host_func_threads_level(env, run, rest)
        }
        Hf::SecondContext => {
            let second = env.device.create_context()?;
            host_func_threads_level(
                HfEnv {
                    second: Some(&second),
                    ..env
                },
                run,
                rest,
            )
        }
        Hf::SubscribedBOfTheSecondContext => {
            let stream = declared(env.host).subscribe(declared(env.second).create_stream()?)?;
            slow(run, &stream)?;
            host_func_threads_level(env, run, rest)
        }
        Hf::Stream => {
            let stream = env.ctx.create_stream()?;
            slow(run, &stream)?;
            host_func_threads_level(env, run, rest)
        }
    }
}

#[test]
fn host_func_threads_in_every_order() {
    group_test("host_func_threads_in_every_order", &HOST_FUNC_THREADS);
}
