//! Join events (E5, E9, S11): a stream's thread creating, reusing and reclaiming joins
//! (`JoinTarget::join_after`, `synchronized`, `orphan_all` before an abort) while another
//! thread synchronises the device (`JoinState::synchronize_device`, which moves the
//! watermark and destroys the parked joins it covers), and the context's end. The library's
//! own `JoinTarget`, `Joins` and `JoinState`, on a model context whose runtime is a device
//! model: each stream a queue of record, wait and reset tasks, run by a synchronisation (a
//! device synchronisation runs what was issued before it began, in two steps a thread can
//! come between), discarded by an abort. The model asserts what the runtime would not
//! forgive: an event recorded again while a task still refers to it or its flag is set
//! (E1, E4), destroyed while a task refers to it, destroyed twice, or never destroyed. Not
//! modelled: failing calls (the fault sweeps cover them), stop-on-failure contexts (S6).

use std::ffi::c_void;

use loom::sync::{Arc, Mutex};
use loom::thread;

use super::check;
use crate::result::CallError;
use crate::sys::bindings::{aclrtEvent, aclrtStream};
use crate::typed::join::{JoinTarget, Joins};
use crate::typed::join_state::{Finished, JoinCalls, JoinHost, JoinState};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Record,
    Wait,
    Reset,
}

#[derive(Clone, Copy, Debug)]
struct Task {
    op: Op,
    event: usize,
}

#[derive(Debug, Default)]
struct EventState {
    destroyed: bool,
    /// Recorded and not reset (a wait passes).
    flag: bool,
    /// Tasks issued that refer to it, not yet run or discarded.
    pending: usize,
}

/// Streams 0 (joined from) and 1 (the joining stream, whose list is modelled).
#[derive(Debug, Default)]
struct Device {
    issued: [Vec<Task>; 2],
    /// How many of each stream's issued tasks ran or were discarded.
    done: [usize; 2],
    events: Vec<EventState>,
}

fn event(index: usize) -> aclrtEvent {
    std::ptr::without_provenance_mut::<c_void>(index + 1)
}

fn index_of(event: aclrtEvent) -> usize {
    event.addr() - 1
}

fn stream(index: usize) -> aclrtStream {
    std::ptr::without_provenance_mut::<c_void>(index + 1)
}

const FROM: usize = 0;
const TO: usize = 1;

impl Device {
    fn issue(&mut self, on: aclrtStream, op: Op, event: aclrtEvent) {
        let event = index_of(event);
        let state = &mut self.events[event];
        assert!(!state.destroyed, "{op:?} of a destroyed event");
        if op == Op::Record {
            assert_eq!(
                state.pending, 0,
                "recorded again while a task refers to it (E1)"
            );
            assert!(!state.flag, "recorded again before its reset ran (E4)");
        }
        state.pending += 1;
        self.issued[on.addr() - 1].push(Task { op, event });
    }

    /// Runs stream `s` until `until` of its tasks are done; a wait first runs the other
    /// stream up to the record it waits for.
    fn run(&mut self, s: usize, until: usize) {
        while self.done[s] < until {
            let task = self.issued[s][self.done[s]];
            if task.op == Op::Wait {
                let other = 1 - s;
                while !self.events[task.event].flag {
                    assert!(
                        self.done[other] < self.issued[other].len(),
                        "a wait on an event never recorded"
                    );
                    self.run(other, self.done[other] + 1);
                }
            }
            let state = &mut self.events[task.event];
            match task.op {
                Op::Record => state.flag = true,
                Op::Reset => state.flag = false,
                Op::Wait => {}
            }
            state.pending -= 1;
            self.done[s] += 1;
        }
    }

    /// `aclrtStreamAbort`: every task not yet run on `s` is discarded.
    fn abort(&mut self, s: usize) {
        for task in &self.issued[s][self.done[s]..] {
            self.events[task.event].pending -= 1;
        }
        self.done[s] = self.issued[s].len();
    }
}

/// The runtime of the model context.
#[derive(Debug, Default)]
struct Runtime {
    device: Mutex<Device>,
}

impl Runtime {
    fn device(&self) -> loom::sync::MutexGuard<'_, Device> {
        self.device.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `aclrtSynchronizeDevice`, in two steps: what was issued when it began is done when it
    /// returns.
    fn synchronize_device(&self) -> Result<(), CallError> {
        let target = self.device().issued.each_ref().map(Vec::len);
        let mut device = self.device();
        for (s, until) in target.into_iter().enumerate() {
            device.run(s, until);
        }
        Ok(())
    }
}

impl JoinCalls for Runtime {
    unsafe fn create_event_with_flag(&self, _: u32) -> Result<aclrtEvent, CallError> {
        let mut device = self.device();
        device.events.push(EventState::default());
        Ok(event(device.events.len() - 1))
    }

    unsafe fn destroy_event(&self, e: aclrtEvent) -> Result<(), CallError> {
        let mut device = self.device();
        let state = &mut device.events[index_of(e)];
        assert!(!state.destroyed, "destroyed twice");
        assert_eq!(state.pending, 0, "destroyed while a task refers to it (E9)");
        state.destroyed = true;
        Ok(())
    }

    unsafe fn record_event(&self, e: aclrtEvent, s: aclrtStream) -> Result<(), CallError> {
        self.device().issue(s, Op::Record, e);
        Ok(())
    }

    unsafe fn reset_event(&self, e: aclrtEvent, s: aclrtStream) -> Result<(), CallError> {
        self.device().issue(s, Op::Reset, e);
        Ok(())
    }

    unsafe fn stream_wait_event(&self, s: aclrtStream, e: aclrtEvent) -> Result<(), CallError> {
        self.device().issue(s, Op::Wait, e);
        Ok(())
    }

    unsafe fn synchronize_stream(&self, s: aclrtStream) -> Result<(), CallError> {
        let mut device = self.device();
        let until = device.issued[s.addr() - 1].len();
        device.run(s.addr() - 1, until);
        Ok(())
    }

    unsafe fn stream_query(&self, s: aclrtStream) -> Result<bool, CallError> {
        let device = self.device();
        let s = s.addr() - 1;
        Ok(device.done[s] == device.issued[s].len())
    }
}

/// A context of the model: the library's `JoinState` on the model's runtime.
struct ModelContext {
    runtime: Runtime,
    joins: JoinState,
}

// SAFETY: the events in `joins` are numbers of the model, not pointers; everything else is
// behind loom's primitives.
unsafe impl Send for ModelContext {}
// SAFETY: as above.
unsafe impl Sync for ModelContext {}

impl JoinHost for ModelContext {
    type Calls = Runtime;

    fn api(&self) -> &Runtime {
        &self.runtime
    }

    fn id(&self) -> u64 {
        1
    }

    fn join_capacity(&self) -> u32 {
        crate::typed::context::DEFAULT_JOIN_CAPACITY
    }

    fn may_stop(&self) -> bool {
        false
    }

    fn stopped_by(&self, error: &crate::typed::error::Error) -> bool {
        error.is_stop() && self.may_stop()
    }

    fn join_state(&self) -> &JoinState {
        &self.joins
    }

    fn adopt(&self) {
        panic!("a join waited on and never reset: no fault is injected here");
    }
}

impl ModelContext {
    fn new() -> Arc<ModelContext> {
        Arc::new(ModelContext {
            runtime: Runtime::default(),
            joins: JoinState::new(),
        })
    }

    /// `Context::synchronize_device`.
    fn synchronize_device(&self) {
        self.joins
            .synchronize_device(
                || self.runtime.synchronize_device(),
                // SAFETY: a join event the state has shown done.
                |e| unsafe { self.runtime.destroy_event(e) },
            )
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// The context's end, once every stream is synchronised and released: every parked
    /// join is destroyed, and every event created was destroyed exactly once.
    fn end(&self) {
        self.runtime
            .synchronize_device()
            .unwrap_or_else(|e| panic!("{e}"));
        self.joins
            // SAFETY: every task is done (above).
            .try_destroy_parked(Finished::All, |e| unsafe { self.runtime.destroy_event(e) })
            .unwrap_or_else(|e| panic!("{e}"));
        let device = self.runtime.device();
        for (i, state) in device.events.iter().enumerate() {
            assert!(state.destroyed, "join event {i} never destroyed");
        }
    }
}

/// The device-synchronising thread.
fn device_thread(ctx: &Arc<ModelContext>) -> thread::JoinHandle<()> {
    let ctx = Arc::clone(ctx);
    thread::spawn(move || ctx.synchronize_device())
}

fn join(target: &JoinTarget<'_, ModelContext>) {
    target
        .join_after(stream(FROM))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Two joins, a synchronisation of the joining stream, a third join, then the stream's
/// release, while another thread synchronises the device: a join is recorded again only
/// once its record, wait and reset have all run (the device's watermark, or the stream's
/// synchronisation, showed it), a parked or pooled join is destroyed only once no task
/// refers to it, and every join is destroyed once.
#[test]
fn e5_e9_a_join_is_reused_only_once_its_tasks_ran() {
    check(4, || {
        let ctx = ModelContext::new();
        let device = device_thread(&ctx);
        let joins = Joins::new(&*ctx);
        let target = JoinTarget {
            ctx: &*ctx,
            raw: stream(TO),
            joins: &joins,
        };
        join(&target);
        join(&target);
        // `Stream::synchronize`.
        // SAFETY: the model's stream.
        unsafe { ctx.runtime.synchronize_stream(stream(TO)) }.unwrap_or_else(|e| panic!("{e}"));
        target.synchronized();
        join(&target);
        // `Stream::release`: synchronised, its joins destroyed, the parked ones done.
        // SAFETY: as above.
        unsafe { ctx.runtime.synchronize_stream(stream(TO)) }.unwrap_or_else(|e| panic!("{e}"));
        target.release_all();
        ctx.joins.destroy_parked(Finished::Done, |e| {
            // SAFETY: a join known done.
            unsafe { ctx.runtime.destroy_event(e) }
        });
        device.join().unwrap_or_else(|_| panic!("device thread"));
        ctx.end();
    });
}

/// Two joins, then an abort of the joining stream (`Stream::abort`: its joins parked first,
/// then the stream's tasks discarded), a third join, while another thread synchronises the
/// device: a parked join is destroyed only once its record on the other stream has run
/// (its wait and reset may be discarded: it is never recorded again), and every join is
/// destroyed once.
#[test]
fn e9_s11_the_joins_of_an_aborted_stream_wait_for_the_device() {
    check(4, || {
        let ctx = ModelContext::new();
        let device = device_thread(&ctx);
        let joins = Joins::new(&*ctx);
        let target = JoinTarget {
            ctx: &*ctx,
            raw: stream(TO),
            joins: &joins,
        };
        join(&target);
        join(&target);
        target.orphan_all();
        ctx.runtime.device().abort(TO);
        join(&target);
        // The stream destroyed without a synchronisation (S8): its joins parked.
        target.orphan_all();
        device.join().unwrap_or_else(|_| panic!("device thread"));
        ctx.end();
    });
}
