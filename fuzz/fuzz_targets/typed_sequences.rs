//! Arbitrary programs of safe typed-API operations, run on the simulator (loaded as the
//! runtime library, `libascendcl.so`, built beside this binary): up to 4 rounds, each on 2
//! or 3 new streams of one context, of up to 24 operations: create and destroy events,
//! record, wait scopes (one to three streams wait, then reset), `reset_completed`,
//! synchronisations (stream, event, device), asynchronous scopes of copies, memsets and
//! simulated kernels whose sources are earlier results on other streams (joins across
//! streams); between operations `set_join_capacity`; at a round's end its events are
//! dropped or destroyed, some streams aborted, the streams destroyed. Each event is held in
//! its state type (`Event<Reset>` or `Event<Recorded>`, an enum of slots): an operation the
//! state does not allow is skipped, as the types would refuse it.
//!
//! Asserts: no crash, panic, hang or sanitizer error; no error from the typed API but
//! `Error::JoinCapacity` (a capacity the program set) and `Error::NotComplete` from
//! `reset_completed` of a record still pending (E10); no drop error; no checker finding;
//! no live runtime object once the context is destroyed and the device reset.
#![no_main]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use arbitrary::Arbitrary;
use ascend_typestate::{
    Acl, Context, DeviceBuffer, Error, Event, InitOptions, MallocPolicy, PendingDevice, Recorded,
    Reset, Stream,
};
use libfuzzer_sys::fuzz_target;

const EVENTS: usize = 4;
const BUFFERS: usize = 4;
const LEN: usize = 64;

#[derive(Arbitrary, Debug)]
struct Program {
    rounds: Vec<Round>,
}

#[derive(Arbitrary, Debug)]
struct Round {
    three_streams: bool,
    ops: Vec<Op>,
    /// Bit i: abort stream i at the round's end.
    abort: u8,
    /// Bit i: destroy event i at the round's end (else it is dropped).
    destroy: u8,
}

#[derive(Arbitrary, Debug)]
enum Op {
    CreateEvent(u8),
    DestroyEvent(u8),
    Record {
        event: u8,
        stream: u8,
    },
    Wait {
        event: u8,
        streams: [u8; 3],
        also: u8,
    },
    ResetCompleted {
        event: u8,
        stream: u8,
    },
    SyncStream(u8),
    SyncEvent(u8),
    SyncDevice,
    SetJoinCapacity(u8),
    Scope(Vec<Task>),
}

/// One task of an asynchronous scope, on `stream`, writing buffer `dst` (each buffer at
/// most once per scope): from the host, from the result of an earlier task, or a memset.
#[derive(Arbitrary, Debug)]
struct Task {
    stream: u8,
    dst: u8,
    src: Src,
}

#[derive(Arbitrary, Debug)]
enum Src {
    Host,
    /// The result of the n-th earlier task (a copy from the host if there is none).
    Earlier(u8),
    /// A simulated kernel of `micros` µs reading the n-th earlier result.
    Kernel(u8, u8),
    Memset(u8),
}

/// An event between transitions.
enum Ev<'a> {
    /// Created or reset: may be recorded.
    Idle(Event<'a, Reset>),
    Recorded(Event<'a, Recorded>),
}

static DROP_ERRORS: AtomicUsize = AtomicUsize::new(0);

fn count_drop_error(what: &'static str, error: &Error) {
    eprintln!("drop error: {what}: {error}");
    DROP_ERRORS.fetch_add(1, Ordering::Relaxed);
}

/// A typed call's outcome: `Error::JoinCapacity` is the program's (it set the capacity);
/// any other error is a failure.
fn allowed<T>(what: &str, r: Result<T, Error>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(Error::JoinCapacity { .. }) => None,
        Err(e) => panic!("{what}: {e:?}"),
    }
}

fn double(x: u32) -> u32 {
    x.wrapping_mul(2)
}

fn scope(
    ctx: &Context<'_>,
    streams: &[Stream<'_>],
    bufs: &mut [DeviceBuffer<'_, u32>],
    tasks: &[Task],
) {
    let host = vec![7u32; LEN];
    let mut dsts: Vec<Option<&mut DeviceBuffer<'_, u32>>> = bufs.iter_mut().map(Some).collect();
    let r = ctx.async_scope(|scope| {
        let mut results: Vec<PendingDevice<'_, u32>> = Vec::new();
        for task in tasks.iter().take(8) {
            let Some(dst) = dsts[task.dst as usize % BUFFERS].take() else {
                continue;
            };
            let stream = &streams[task.stream as usize % streams.len()];
            let earlier =
                |n: u8| (!results.is_empty()).then(|| results[n as usize % results.len()]);
            let written = match task.src {
                Src::Memset(v) => {
                    scope.memset(stream, dst, v)?;
                    continue;
                }
                Src::Host => scope.copy(stream, dst, &host[..])?,
                Src::Earlier(n) => match earlier(n) {
                    Some(src) => scope.copy(stream, dst, src)?,
                    None => scope.copy(stream, dst, &host[..])?,
                },
                Src::Kernel(n, micros) => match earlier(n) {
                    Some(src) => {
                        let time = Duration::from_micros(micros.into());
                        scope.simulated_map(stream, time, src, dst, double)?
                    }
                    None => scope.copy(stream, dst, &host[..])?,
                },
            };
            results.push(written);
        }
        Ok(())
    });
    allowed("async scope", r);
}

/// One round's operations on its streams and event slots.
fn step<'s>(
    ctx: &'s Context<'_>,
    streams: &'s [Stream<'_>],
    events: &mut [Option<Ev<'s>>],
    bufs: &mut [DeviceBuffer<'_, u32>],
    op: &Op,
) {
    let stream = |i: u8| &streams[i as usize % streams.len()];
    match *op {
        Op::CreateEvent(e) => {
            let slot = &mut events[e as usize % EVENTS];
            if slot.is_none() {
                let created = ctx.create_event().expect("create_event");
                *slot = Some(Ev::Idle(created.into()));
            }
        }
        Op::DestroyEvent(e) => match events[e as usize % EVENTS].take() {
            Some(Ev::Idle(ev)) => ev.destroy().expect("destroy event"),
            Some(Ev::Recorded(ev)) => ev.destroy().expect("destroy event"),
            None => {}
        },
        Op::Record { event, stream: s } => {
            let slot = &mut events[event as usize % EVENTS];
            match slot.take() {
                Some(Ev::Idle(ev)) => {
                    *slot = allowed("record", ev.record(stream(s))).map(Ev::Recorded);
                }
                other => *slot = other,
            }
        }
        Op::Wait {
            event,
            streams: ws,
            also,
        } => {
            let slot = &mut events[event as usize % EVENTS];
            match slot.take() {
                Some(Ev::Recorded(ev)) => {
                    let first = stream(ws[0]);
                    let others: Vec<&Stream<'_>> = ws[1..=(also as usize % 3).min(2)]
                        .iter()
                        .map(|&i| stream(i))
                        .collect();
                    let r = ev.wait(first, |mut waited| {
                        for s in others {
                            if !std::ptr::eq(s, first) {
                                waited.also_wait(s)?;
                            }
                        }
                        waited.reset()
                    });
                    *slot = allowed("wait", r).map(Ev::Idle);
                }
                other => *slot = other,
            }
        }
        Op::ResetCompleted { event, stream: s } => {
            let slot = &mut events[event as usize % EVENTS];
            match slot.take() {
                Some(Ev::Recorded(ev)) => {
                    // E10: a record not complete yet is refused (and the event dropped).
                    *slot = match ev.reset_completed(stream(s)) {
                        Err(Error::NotComplete { .. }) => None,
                        r => allowed("reset_completed", r).map(Ev::Idle),
                    };
                }
                other => *slot = other,
            }
        }
        Op::SyncStream(s) => stream(s).synchronize().expect("stream synchronize"),
        Op::SyncEvent(e) => {
            if let Some(Ev::Recorded(ev)) = &events[e as usize % EVENTS] {
                ev.synchronize().expect("event synchronize");
            }
        }
        Op::SyncDevice => ctx.synchronize_device().expect("device synchronize"),
        Op::SetJoinCapacity(c) => ctx
            .set_join_capacity(u32::from(c % 8) + 1)
            .expect("set_join_capacity"),
        Op::Scope(ref tasks) => scope(ctx, streams, bufs, tasks),
    }
}

fn round(ctx: &Context<'_>, bufs: &mut [DeviceBuffer<'_, u32>], r: &Round) {
    let n = if r.three_streams { 3 } else { 2 };
    let mut streams: Vec<Stream<'_>> = (0..n)
        .map(|_| ctx.create_stream().expect("create_stream"))
        .collect();
    {
        let mut events: Vec<Option<Ev<'_>>> = (0..EVENTS).map(|_| None).collect();
        for op in r.ops.iter().take(24) {
            step(ctx, &streams, &mut events, bufs, op);
        }
        for (i, ev) in events.into_iter().enumerate() {
            let destroy = r.destroy & (1 << i) != 0;
            match ev {
                Some(Ev::Idle(ev)) if destroy => ev.destroy().expect("destroy event"),
                Some(Ev::Recorded(ev)) if destroy => ev.destroy().expect("destroy event"),
                _ => {}
            }
        }
    }
    for (i, s) in streams.iter_mut().enumerate() {
        if r.abort & (1 << i) != 0 {
            s.abort().expect("abort");
        }
    }
    for s in streams {
        s.destroy().expect("destroy stream");
    }
}

fn library() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("a directory");
    // cargo-fuzz builds the simulator's cdylib among the dependencies.
    dir.join("deps").join("libascendcl.so")
}

fuzz_target!(|program: Program| {
    ascend_typestate::set_drop_error_handler(count_drop_error);
    let acl = Acl::init_with(&InitOptions::default().library(library())).expect("aclInit");
    let sim = acl.simulator().expect("the simulator");
    sim.set_quiet(Some(true));
    sim.clear_findings();
    {
        let device = acl.set_device(0).expect("set_device");
        let ctx = device.create_context().expect("create_context");
        let mut bufs: Vec<DeviceBuffer<'_, u32>> = (0..BUFFERS)
            .map(|_| {
                ctx.alloc::<u32>(LEN, MallocPolicy::HugeFirst)
                    .expect("alloc")
            })
            .collect();
        for r in program.rounds.iter().take(4) {
            round(&ctx, &mut bufs, r);
        }
        drop(bufs);
        ctx.destroy().expect("destroy context");
        device.reset().expect("reset device");
    }
    let live = sim.live_objects();
    acl.finalize().expect("aclFinalize");
    let findings = sim.findings();
    assert!(findings.is_empty(), "checker findings: {findings:#?}");
    assert_eq!(live, 0, "live runtime objects after the teardown");
    assert_eq!(DROP_ERRORS.load(Ordering::Relaxed), 0, "drop errors");
});
