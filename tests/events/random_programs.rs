//! Random legal programs through the typed API, run on the simulator (S1, S2, E2, E3, E4,
//! E5, D4).
//!
//! A program has 2-5 streams and 1-3 events in one context, and up to 40 operations:
//! kernels of 0-300 µs whose body appends the kernel's id to a log, records, wait scopes
//! (1-3 streams wait on one recorded event with `also_wait`, optionally issue kernels, then
//! reset; the event is recorded again later), and host synchronisations (stream, event,
//! device). Illegal steps (waiting on an event that is not recorded, recording one that is)
//! are dropped by `legalize`, so a shrunk failure prints a program the typed API accepts.
//! The property runs twice: on the programs as generated, and with `legalize` adding a host
//! synchronisation of the resetting stream before each re-record (the workaround that was
//! needed before the typed API ordered re-records and later waits after the previous reset;
//! kept as a second shape of program). `re_record_while_previous_reset_pending` holds the
//! minimal programs of that bug.
//!
//! The model computes happens-before from stream order (S1) and record→wait edges (E2, E3).
//! The properties:
//! * every kernel runs exactly once, after every kernel the model orders before it;
//! * after a host synchronisation, every kernel the model says is complete is in the log
//!   (stream: S2, event: E2, device: D4);
//! * zero checker findings, and zero live runtime objects once every handle is released
//!   (checked before `aclFinalize`, because the simulator counts nothing once finalized;
//!   a leak at finalize is also a P2 finding).

use crate::support;

use std::collections::BTreeSet;
use std::ffi::c_void;
use std::fmt::Display;
use std::sync::{Arc, Mutex};

use ascend_typestate::{Event, Recorded, Reset, Stream};
use proptest::collection::vec;
use proptest::prelude::*;
use support::sim::Session;

/// One operation. Indices are streams and events of the program.
#[derive(Clone, Debug)]
enum Op {
    /// A kernel of `micros` µs on `stream`.
    Kernel { stream: usize, micros: u16 },
    /// `event.record(stream)` (the event is *Created* or *Reset*).
    Record { event: usize, stream: usize },
    /// `event.wait(streams[0], |w| { w.also_wait(streams[1..]); body kernels; w.reset() })`.
    /// `body` kernels are `(stream, micros)` on waiting streams.
    Wait {
        event: usize,
        streams: Vec<usize>,
        body: Vec<(usize, u16)>,
    },
    /// `stream.synchronize()` (S2).
    SyncStream(usize),
    /// `event.synchronize()` (E2; the event is *Recorded*).
    SyncEvent(usize),
    /// `ctx.synchronize_device()` (D4).
    SyncDevice,
}

#[derive(Clone, Debug)]
struct Program {
    streams: usize,
    events: usize,
    ops: Vec<Op>,
}

impl Program {
    /// Keeps the operations that are legal in the typed API at their point in the program:
    /// records of recordable events, waits on and synchronisations of recorded events;
    /// dedupes the waiting streams and maps body kernels onto them.
    ///
    /// With `sync_before_re_record` (the workaround for the bug shown by
    /// `re_record_while_previous_reset_pending`), a record of an event whose last reset may
    /// still be pending is preceded by a synchronisation of the resetting stream.
    fn legalize(
        streams: usize,
        events: usize,
        raw: Vec<Op>,
        sync_before_re_record: bool,
    ) -> Program {
        let mut recorded = vec![false; events];
        // Per event: the stream of its last reset, unless a host sync has covered it since.
        let mut pending_reset: Vec<Option<usize>> = vec![None; events];
        let mut ops = Vec::new();
        for op in raw {
            match op {
                Op::Record { event, .. } if recorded[event] => continue,
                Op::Record { event, .. } => {
                    recorded[event] = true;
                    if let Some(stream) = pending_reset[event].take()
                        && sync_before_re_record
                    {
                        ops.push(Op::SyncStream(stream));
                        for p in &mut pending_reset {
                            if *p == Some(stream) {
                                *p = None;
                            }
                        }
                    }
                }
                Op::Wait { event, .. } | Op::SyncEvent(event) if !recorded[event] => continue,
                Op::SyncStream(stream) => {
                    for p in &mut pending_reset {
                        if *p == Some(stream) {
                            *p = None;
                        }
                    }
                }
                Op::SyncDevice => pending_reset.fill(None),
                Op::Wait {
                    event,
                    streams: waiters,
                    body,
                } => {
                    recorded[event] = false;
                    let mut unique = Vec::new();
                    for s in waiters {
                        if !unique.contains(&s) {
                            unique.push(s);
                        }
                    }
                    pending_reset[event] = Some(unique[0]);
                    let body = body
                        .into_iter()
                        .map(|(i, micros)| (unique[i % unique.len()], micros))
                        .collect();
                    ops.push(Op::Wait {
                        event,
                        streams: unique,
                        body,
                    });
                    continue;
                }
                _ => {}
            }
            ops.push(op);
        }
        Program {
            streams,
            events,
            ops,
        }
    }
}

fn op(streams: usize, events: usize) -> impl Strategy<Value = Op> {
    let micros = 0..=300u16;
    prop_oneof![
        5 => (0..streams, micros.clone()).prop_map(|(stream, micros)| Op::Kernel { stream, micros }),
        3 => (0..events, 0..streams).prop_map(|(event, stream)| Op::Record { event, stream }),
        3 => (
            0..events,
            vec(0..streams, 1..=3),
            vec((0..3usize, micros), 0..=2),
        )
            .prop_map(|(event, streams, body)| Op::Wait { event, streams, body }),
        1 => (0..streams).prop_map(Op::SyncStream),
        1 => (0..events).prop_map(Op::SyncEvent),
        1 => Just(Op::SyncDevice),
    ]
}

fn program(sync_before_re_record: bool) -> impl Strategy<Value = Program> {
    (2..=5usize, 1..=3usize).prop_flat_map(move |(streams, events)| {
        vec(op(streams, events), 1..=40)
            .prop_map(move |raw| Program::legalize(streams, events, raw, sync_before_re_record))
    })
}

/// What a kernel body gets as `userData`: its id and the shared log.
struct KernelTag {
    id: u32,
    log: Arc<Mutex<Vec<u32>>>,
}

/// The kernel body: appends its id to the log (runs on the stream's worker thread).
unsafe extern "C" fn append_id(user_data: *mut c_void, _buffers: *const *mut c_void, _n: usize) {
    // SAFETY: `user_data` is a `KernelTag` boxed in `Run::tags`, which outlives the session.
    let tag = unsafe { &*(user_data as *const KernelTag) };
    tag.log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(tag.id);
}

/// Happens-before of the program issued so far.
struct Model {
    /// Per stream: the kernels ordered before the next task issued on it (S1, E3).
    frontier: Vec<BTreeSet<u32>>,
    /// Per event: the kernels its last record captured (E2).
    captured: Vec<BTreeSet<u32>>,
    /// Per kernel: the kernels ordered before it.
    before: Vec<BTreeSet<u32>>,
}

/// One case: the log, the kernel tags (alive until the case ends) and the model.
struct Run<'a> {
    session: &'a Session,
    log: Arc<Mutex<Vec<u32>>>,
    #[allow(
        clippy::vec_box,
        reason = "kernels hold pointers to the tags: their addresses must not move"
    )]
    tags: Vec<Box<KernelTag>>,
    model: Model,
}

impl Run<'_> {
    fn kernel(&mut self, stream: &Stream<'_>, index: usize, micros: u16) {
        let id = u32::try_from(self.model.before.len()).expect("few kernels");
        let frontier = &mut self.model.frontier[index];
        self.model.before.push(frontier.clone());
        frontier.insert(id);
        let tag = Box::new(KernelTag {
            id,
            log: Arc::clone(&self.log),
        });
        let user_data = std::ptr::from_ref::<KernelTag>(&tag).cast_mut().cast();
        self.tags.push(tag);
        self.session
            .sim
            .body_kernel(stream.as_raw(), u64::from(micros), append_id, user_data);
    }

    fn logged(&self) -> Vec<u32> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// After a host synchronisation: every kernel in `done` is in the log.
    fn check_done(&self, done: &BTreeSet<u32>, step: usize, what: &str) -> Result<(), String> {
        let logged: BTreeSet<u32> = self.logged().into_iter().collect();
        let missing: Vec<_> = done.difference(&logged).collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "op {step} ({what}): kernels {missing:?} not run after the synchronisation"
            ))
        }
    }

    /// At the end: each kernel ran once, after every kernel ordered before it.
    fn check_order(&self) -> Result<(), String> {
        let log = self.logged();
        let kernels = self.model.before.len();
        let mut position = vec![None; kernels];
        for (at, &id) in log.iter().enumerate() {
            let slot = &mut position[id as usize];
            if slot.is_some() {
                return Err(format!("kernel {id} ran twice; log {log:?}"));
            }
            *slot = Some(at);
        }
        for (id, before) in self.model.before.iter().enumerate() {
            let Some(at) = position[id] else {
                return Err(format!("kernel {id} never ran; log {log:?}"));
            };
            for &earlier in before {
                if position[earlier as usize].is_none_or(|p| p > at) {
                    return Err(format!(
                        "kernel {earlier} must run before kernel {id}; log {log:?}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// An event between transitions.
enum Ev<'a> {
    /// *Created* or *Reset*: can be recorded.
    Idle(Event<'a, Reset>),
    Recorded(Event<'a, Recorded>),
}

fn ok<T, E: Display>(result: Result<T, E>, step: usize, what: &str) -> Result<T, String> {
    result.map_err(|e| format!("op {step} ({what}): {e}"))
}

/// Issues the program, checking after every host synchronisation, then releases
/// everything in reverse order (D3).
fn execute(run: &mut Run<'_>, program: &Program) -> Result<(), String> {
    let device = ok(run.session.acl().set_device(0), 0, "set_device")?;
    let ctx = ok(device.create_context(), 0, "create_context")?;
    let streams = (0..program.streams)
        .map(|_| ok(ctx.create_stream(), 0, "create_stream"))
        .collect::<Result<Vec<_>, _>>()?;
    let mut events = (0..program.events)
        .map(|_| ok(ctx.create_event(), 0, "create_event").map(|e| Some(Ev::Idle(e.into()))))
        .collect::<Result<Vec<_>, _>>()?;

    for (step, op) in program.ops.iter().enumerate() {
        match op {
            &Op::Kernel { stream, micros } => run.kernel(&streams[stream], stream, micros),
            &Op::Record { event, stream } => {
                let Some(Ev::Idle(idle)) = events[event].take() else {
                    unreachable!("legalize keeps records of recordable events")
                };
                let recorded = ok(idle.record(&streams[stream]), step, "record")?;
                run.model.captured[event] = run.model.frontier[stream].clone();
                events[event] = Some(Ev::Recorded(recorded));
            }
            Op::Wait {
                event,
                streams: waiters,
                body,
            } => {
                let Some(Ev::Recorded(recorded)) = events[*event].take() else {
                    unreachable!("legalize keeps waits on recorded events")
                };
                let captured = run.model.captured[*event].clone();
                for &w in waiters {
                    run.model.frontier[w].extend(captured.iter().copied());
                }
                let streams = &streams;
                let reset = recorded.wait(&streams[waiters[0]], |mut waited| {
                    for &w in &waiters[1..] {
                        waited.also_wait(&streams[w])?;
                    }
                    for &(s, micros) in body {
                        run.kernel(&streams[s], s, micros);
                    }
                    waited.reset()
                });
                let reset = ok(reset, step, "wait scope")?;
                events[*event] = Some(Ev::Idle(reset));
            }
            &Op::SyncStream(stream) => {
                ok(streams[stream].synchronize(), step, "stream synchronize")?;
                run.check_done(&run.model.frontier[stream], step, "stream synchronize")?;
            }
            &Op::SyncEvent(event) => {
                let Some(Ev::Recorded(recorded)) = &events[event] else {
                    unreachable!("legalize keeps synchronisations of recorded events")
                };
                ok(recorded.synchronize(), step, "event synchronize")?;
                run.check_done(&run.model.captured[event], step, "event synchronize")?;
            }
            Op::SyncDevice => {
                ok(ctx.synchronize_device(), step, "device synchronize")?;
                let all = (0..run.model.before.len() as u32).collect();
                run.check_done(&all, step, "device synchronize")?;
            }
        }
    }

    let end = program.ops.len();
    ok(ctx.synchronize_device(), end, "final device synchronize")?;
    run.check_order()?;
    for event in events.into_iter().flatten() {
        match event {
            Ev::Idle(e) => ok(e.destroy(), end, "destroy event")?,
            Ev::Recorded(e) => ok(e.destroy(), end, "destroy event")?,
        }
    }
    for stream in streams {
        ok(stream.destroy(), end, "destroy stream")?;
    }
    ok(ctx.destroy(), end, "destroy context")?;
    ok(device.reset(), end, "reset device")?;
    Ok(())
}

fn run_case(program: &Program) -> Result<(), String> {
    let session = Session::start();
    let mut run = Run {
        session: &session,
        log: Arc::new(Mutex::new(Vec::new())),
        tags: Vec::new(),
        model: Model {
            frontier: vec![BTreeSet::new(); program.streams],
            captured: vec![BTreeSet::new(); program.events],
            before: Vec::new(),
        },
    };
    let outcome = execute(&mut run, program);
    // Every handle is gone (on error too: their `Drop` synchronised), so no kernel should
    // still refer to a tag.
    let tags = std::mem::take(&mut run.tags);
    if outcome.is_err() {
        // Unless a `Drop` failed to synchronise: then a kernel may still run; keep its tag.
        std::mem::forget(tags);
        return outcome;
    }
    let live = session.sim.live_objects();
    let findings = session.finish();
    drop(tags);
    if !findings.is_empty() {
        return Err(format!("checker findings: {findings:#?}"));
    }
    if live != 0 {
        return Err(format!("{live} live runtime object(s) after release"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 32,
        // A failure prints its shrunk program; the directed tests below keep the known ones.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_legal_programs_with_host_sync_before_re_record(program in program(true)) {
        run_case(&program).map_err(TestCaseError::fail)?;
    }

    /// The programs as generated: re-records right after the reset was issued (E1, E4, E5).
    #[test]
    fn random_legal_programs_keep_happens_before(program in program(false)) {
        run_case(&program).map_err(TestCaseError::fail)?;
    }
}

/// The bug the property found, fixed by joining re-records and later waits after the
/// previous reset (minimal programs, with long kernels so that the race was always lost). The simulator's events are hardware flags: a record sets the flag, a wait
/// passes while it is set, a reset clears it. The typed API lets an event be recorded again
/// as soon as its reset is *issued*, but nothing orders the new record, nor the new waits,
/// after that reset on the device:
/// 1. the new record can execute before the previous scope's waits ran, and release them
///    early (kernel 1 runs before kernel 0);
/// 2. a new wait can run before the previous reset executed, see the flag of the previous
///    record still set, and pass before the new record (kernel 2 runs before kernel 1).
#[test]
fn re_record_while_previous_reset_pending() {
    let early_record = Program {
        streams: 3,
        events: 1,
        ops: vec![
            Op::Kernel {
                stream: 0,
                micros: 5_000,
            },
            Op::Record {
                event: 0,
                stream: 0,
            },
            Op::Wait {
                event: 0,
                streams: vec![1],
                body: vec![(1, 0)],
            },
            Op::Record {
                event: 0,
                stream: 2,
            },
        ],
    };
    let stale_flag = Program {
        streams: 4,
        events: 1,
        ops: vec![
            Op::Record {
                event: 0,
                stream: 0,
            },
            Op::Wait {
                event: 0,
                streams: vec![1],
                body: vec![(1, 5_000)],
            },
            Op::Kernel {
                stream: 2,
                micros: 2_000,
            },
            Op::Record {
                event: 0,
                stream: 2,
            },
            Op::Wait {
                event: 0,
                streams: vec![3],
                body: vec![(3, 0)],
            },
        ],
    };
    let early = run_case(&early_record);
    let stale = run_case(&stale_flag);
    assert!(
        early.is_ok() && stale.is_ok(),
        "early record: {early:?}\nstale flag: {stale:?}"
    );
}
