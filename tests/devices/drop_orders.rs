//! Issue 23: a program that drops its values in the order Rust chooses never leaks.
//!
//! Each group below is a handful of handles that can live together, each created with work
//! still pending (a slow simulated kernel ahead of records, copies, host functions,
//! callbacks, pipeline frames and model executions). Every declaration order of the group's
//! handles is run (all permutations, less those the borrow checker refuses: a handle
//! declared before one it borrows), and each order is ended three ways: the end of its
//! scope, `?` on an error while the work is pending, and a panic that unwinds
//! (`catch_unwind`). `?` and the panic also stop the program mid-way, after each distinct
//! partial declaration (the handles after that point never exist), and, in the groups whose
//! pipelines execute models, inside the last frame's kernel closure once it has issued the
//! model's execution (`Slot::submit` is left half-way, the slot unsettled).
//!
//! A case passes if, once Rust has dropped everything, no runtime object is left
//! (`aclsimLiveObjectCount`, read just before the `Acl` drops), the `Acl`'s own drop
//! finalized the runtime, nothing reached the drop-error handler, no closure launched as a
//! host function or callback is left unfreed, and the simulator's checker found nothing (its
//! P2 leak report at `aclFinalize` included).
//! Each case also checks that it tested what it means to: all the work it issued was still
//! pending when it ended (a lower bound on each task's end, from its kernel's duration).
//!
//! How an order becomes a program: a group's program is a recursive function whose frames
//! each declare one handle as a local, in the order's sequence, and hand references to the
//! frames below; the innermost frame issues the work that needs several handles and ends
//! the program. So the handles are dropped as the locals of nested scopes are, last declared
//! first, on return, on `?` and while a panic unwinds. A handle that needs another only to
//! be created, not borrowed (`ModelIo`), is declared where its order puts it, empty, and
//! assigned in the innermost frame (`let io; ... io = model.create_io()`), as Rust allows.
//!
//! The runtime is process-wide, and a case that leaks can leave it initialized for good: each
//! group runs in a child process of its own (`support::child`), which prints its summary.

use crate::support;

use std::cell::Cell;
use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{
    Acl, CallbackMode, Context, DefaultContext, Device, DeviceBuffer, Dynamic, Error, HostBuffer,
    HostFnStream, MallocPolicy, Model, ModelIo, ModelSource, Pipeline, PipelineConfig,
    ReportThread, Result, Set, Static, Stream, StreamConfig, Subscribed,
};
use support::DropErrors;
use support::sim::{Session, Sim};

/// The message of the planned panic, and of the planned error.
const PLANNED_PANIC: &str = "drop_orders: the planned panic";
const PLANNED_ERROR: &str = "drop_orders: the planned error";

/// A slow kernel ahead of each handle's work: still pending when the program ends (checked).
const KERNEL: Duration = Duration::from_millis(30);
/// A model's execution time per batch item (a fixed model's execution is one item; the
/// dynamic model runs batches of 2).
const MODEL_ITEM_TIME: Duration = Duration::from_millis(10);
/// A pipeline frame's simulated kernel, as long as one item of a model: a frame takes at least
/// this long, and the frames of a pipeline run one after the other.
const FRAME_KERNEL: Duration = MODEL_ITEM_TIME;

/// Model shape: 2 rows of 8 features in, 2 rows of 4 scores out.
const ROWS: usize = 2;
const FEATURES: usize = 8;
const CLASSES: usize = 4;
/// Elements of a pipeline frame (f32), the models' sizes.
const FRAME_IN: usize = ROWS * FEATURES;
const FRAME_OUT: usize = ROWS * CLASSES;
/// Slots (and frames in flight) of the pipelines that run models.
const MODEL_SLOTS: usize = 3;

/// How a program ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// Its scope ends: `Ok(())`.
    ScopeEnd,
    /// `?` on an error while the work is pending.
    QuestionMark,
    /// A panic while the work is pending, caught by `catch_unwind` above the program.
    Panic,
    /// `?` inside the kernel closure of the last pipeline frame, after it issued the frame's
    /// model execution: the error leaves `Slot::submit` half-way (the slot unsettled) and the
    /// program by `?` (groups with `kernel_endings`).
    QuestionMarkInKernel,
    /// A panic there, unwinding through `Slot::submit` and the program.
    PanicInKernel,
}

const ENDINGS: [Ending; 3] = [Ending::ScopeEnd, Ending::QuestionMark, Ending::Panic];
const KERNEL_ENDINGS: [Ending; 2] = [Ending::QuestionMarkInKernel, Ending::PanicInKernel];

/// The model files of a child process.
struct ModelFiles {
    fixed: PathBuf,
    dynamic: PathBuf,
    /// The fixed model's file, as bytes (`ModelSource::bytes`).
    text: String,
}

impl ModelFiles {
    fn write() -> ModelFiles {
        let dir = support::scratch_dir("drop_orders_models");
        let model = |gears: &[u64]| {
            SimModel::new(
                SimDtype::F32,
                &[ROWS, FEATURES],
                SimDtype::F32,
                &[ROWS, CLASSES],
            )
            .batch_gears(gears)
            .time_per_item(MODEL_ITEM_TIME)
            .matmul(FEATURES, CLASSES, &[0.25; FEATURES * CLASSES])
        };
        let (fixed, dynamic) = (dir.join("fixed.model"), dir.join("dynamic.model"));
        model(&[]).write(&fixed).expect("write the model");
        model(&[1, 2]).write(&dynamic).expect("write the model");
        ModelFiles {
            fixed,
            dynamic,
            text: model(&[]).to_text(),
        }
    }
}

/// What a program gets besides its `Acl`.
struct Run<'s> {
    sim: &'s Sim,
    ending: Ending,
    /// Cloned into every host function and callback: back to one reference once they have
    /// all been run or freed.
    token: &'s Arc<()>,
    models: &'s ModelFiles,
    /// Live runtime objects once every handle but the `Acl` is dropped.
    live: Cell<Option<usize>>,
    /// When the first work was issued, and the earliest time by which all the work issued
    /// so far could be done (a lower bound: the time it was issued plus how long it runs).
    first_issued: Cell<Option<Instant>>,
    done_no_earlier: Cell<Option<Instant>>,
    /// At the end: whether every piece of work was still pending (`None`: none was
    /// issued), and how long after the first was issued the end came.
    at_end: Cell<Option<(Option<bool>, Duration)>>,
}

impl Run<'_> {
    /// Work issued at `issued` (read before the call that issued it) that runs at least
    /// `lasts`.
    fn issued(&self, issued: Instant, lasts: Duration) {
        if self.first_issued.get().is_none() {
            self.first_issued.set(Some(issued));
        }
        let done = issued + lasts;
        if self.done_no_earlier.get().is_none_or(|t| done < t) {
            self.done_no_earlier.set(Some(done));
        }
    }

    /// The end of the program, in the innermost frame, with every handle of the order
    /// declared and its work pending. (An ending in a kernel closure has happened before
    /// this point: reaching it is a failure of the case, `Ok` where an error was due.)
    fn end(&self) -> Result<()> {
        match self.ending {
            Ending::QuestionMarkInKernel | Ending::PanicInKernel => Ok(()),
            Ending::ScopeEnd | Ending::QuestionMark | Ending::Panic => self.stop(),
        }
    }

    /// In the kernel closure of the last pipeline frame, once it issued its execution: the
    /// end for the endings in a kernel, nothing for the others.
    fn end_in_kernel(&self) -> Result<()> {
        match self.ending {
            Ending::QuestionMarkInKernel | Ending::PanicInKernel => self.stop(),
            Ending::ScopeEnd | Ending::QuestionMark | Ending::Panic => Ok(()),
        }
    }

    fn stop(&self) -> Result<()> {
        let now = Instant::now();
        let pending = self.done_no_earlier.get().map(|t| now < t);
        let span = self.first_issued.get().map_or(Duration::ZERO, |t| now - t);
        self.at_end.set(Some((pending, span)));
        match self.ending {
            Ending::ScopeEnd => {}
            Ending::QuestionMark | Ending::QuestionMarkInKernel => planned_error()?,
            Ending::Panic | Ending::PanicInKernel => panic!("{PLANNED_PANIC}"),
        }
        // What the program would have gone on with, had it not stopped.
        Ok(())
    }
}

fn planned_error() -> Result<()> {
    Err(Error::InvalidArgument(PLANNED_ERROR))
}

/// Reads the live-object count when dropped: declared right after the `Acl`, it drops
/// after every other handle and before the `Acl`.
struct LiveProbe<'r, 's>(&'r Run<'s>);

impl Drop for LiveProbe<'_, '_> {
    fn drop(&mut self) {
        self.0.live.set(Some(self.0.sim.live_objects()));
    }
}

/// A group's program: the handles declared in `order`, below the group's fixed parents.
type Program<N> = fn(&Acl, &Run<'_>, &[N]) -> Result<()>;

struct Group<N: 'static> {
    name: &'static str,
    nodes: &'static [N],
    /// The handles a handle borrows, which must be declared before it (else it does not
    /// compile).
    borrows: fn(N) -> &'static [N],
    /// Whether the program can stop after any of its first handles (`?` and the panic are
    /// then also run after each partial declaration).
    stops_mid_way: bool,
    /// Whether its program ends in the last pipeline frame's kernel closure for the endings
    /// in a kernel (`Run::end_in_kernel`).
    kernel_endings: bool,
    program: Program<N>,
}

/// The whole program of one case: the `Acl` (taken from the session) is its first local.
fn root<N>(acl: Acl, run: &Run<'_>, program: Program<N>, order: &[N]) -> Result<()> {
    let _probe = LiveProbe(run);
    program(&acl, run, order)
}

/// Every permutation of `nodes` (how many), and those in which each handle comes after the
/// handles it borrows.
fn declaration_orders<N: Copy + PartialEq>(
    nodes: &[N],
    borrows: fn(N) -> &'static [N],
) -> (usize, Vec<Vec<N>>) {
    fn permute<N: Copy>(prefix: &mut Vec<N>, rest: &mut Vec<N>, out: &mut Vec<Vec<N>>) {
        if rest.is_empty() {
            out.push(prefix.clone());
        }
        for i in 0..rest.len() {
            let node = rest.remove(i);
            prefix.push(node);
            permute(prefix, rest, out);
            prefix.pop();
            rest.insert(i, node);
        }
    }
    let mut all = Vec::new();
    permute(&mut Vec::new(), &mut nodes.to_vec(), &mut all);
    let permutations = all.len();
    all.retain(|order| {
        order
            .iter()
            .enumerate()
            .all(|(i, node)| borrows(*node).iter().all(|b| order[..i].contains(b)))
    });
    (permutations, all)
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".into())
}

/// One failing case: what went wrong, and whether the runtime was left initialized (no
/// further case can run in this process).
struct Failure {
    what: String,
    runtime_kept: bool,
}

/// Runs the program of `group` that declares `order` (all of the group's handles, or the
/// first of them when it stops mid-way) and ends with `ending`; checks that it left nothing.
/// Returns how long after its first work was issued it ended.
fn run_case<N: Copy>(
    group: &Group<N>,
    order: &[N],
    ending: Ending,
    models: &ModelFiles,
) -> std::result::Result<Duration, Failure> {
    let complete = order.len() == group.nodes.len();
    let mut session = Session::start();
    let reports = DropErrors::capture();
    let acl = session.acl.take().expect("the session's Acl");
    let token = Arc::new(());
    let mut problems = Vec::new();
    let (live, at_end) = {
        let run = Run {
            sim: &session.sim,
            ending,
            token: &token,
            models,
            live: Cell::new(None),
            first_issued: Cell::new(None),
            done_no_earlier: Cell::new(None),
            at_end: Cell::new(None),
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| root(acl, &run, group.program, order)));
        match (ending, outcome) {
            (Ending::ScopeEnd, Ok(Ok(()))) => {}
            (
                Ending::QuestionMark | Ending::QuestionMarkInKernel,
                Ok(Err(Error::InvalidArgument(PLANNED_ERROR))),
            ) => {}
            (Ending::Panic | Ending::PanicInKernel, Err(payload))
                if panic_text(payload.as_ref()) == PLANNED_PANIC => {}
            (_, Ok(result)) => problems.push(format!("the program returned {result:?}")),
            (_, Err(payload)) => problems.push(format!(
                "the program panicked: {}",
                panic_text(payload.as_ref())
            )),
        }
        (run.live.get(), run.at_end.get())
    };
    // Not library failures: the case would not test what it means to. On a loaded machine
    // a few cases finish their work before the program ends: counted, and the group fails
    // only if they are more than a tenth (`run_group`).
    let span = match at_end {
        Some((Some(true), span)) => span,
        Some((Some(false), span)) => {
            NOT_PENDING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            span
        }
        // A program stopped after its first handles may have issued nothing yet.
        Some((None, span)) if !complete => span,
        Some((None, _)) => {
            problems.push("the program issued no work".into());
            Duration::ZERO
        }
        None => Duration::ZERO,
    };
    if live != Some(0) {
        problems.push(format!(
            "{live:?} runtime objects live once every handle but the Acl was dropped"
        ));
    }
    let reported = reports.take();
    if !reported.is_empty() {
        problems.push(format!("drop-error reports: {reported:?}"));
    }
    let runtime_kept = session.sim.runtime_initialized();
    if runtime_kept {
        problems.push("the Acl's drop did not finalize the runtime".into());
    }
    let closures = Arc::strong_count(&token) - 1;
    if closures != 0 {
        problems.push(format!("{closures} launched closures were never freed"));
    }
    drop(reports);
    // The Acl was dropped by the program: this only collects the findings.
    let findings = session.finish();
    if !findings.is_empty() {
        problems.push(format!("checker findings: {findings:?}"));
    }
    if problems.is_empty() {
        Ok(span)
    } else {
        Err(Failure {
            what: problems.join("; "),
            runtime_kept,
        })
    }
}

/// The distinct proper prefixes of `orders`, shortest first: where a program that stops
/// mid-way may stop.
fn partial_declarations<N: Copy + PartialEq>(orders: &[Vec<N>]) -> Vec<Vec<N>> {
    let mut prefixes: Vec<Vec<N>> = Vec::new();
    let longest = orders.iter().map(Vec::len).max().unwrap_or(0);
    for len in 1..longest {
        for order in orders {
            let prefix = &order[..len];
            if !prefixes.iter().any(|p| p == prefix) {
                prefixes.push(prefix.to_vec());
            }
        }
    }
    prefixes
}

/// Runs every case of `group` in this process and prints its summary: each declaration
/// order that compiles, ended each way; `?` and the panic also after each partial
/// declaration (the handles after it never exist).
fn run_group<N: Copy + Debug + PartialEq>(group: &Group<N>) {
    support::quiet_panics(&[PLANNED_PANIC]);
    let models = ModelFiles::write();
    let (permutations, orders) = declaration_orders(group.nodes, group.borrows);
    let partial = if group.stops_mid_way {
        partial_declarations(&orders)
    } else {
        Vec::new()
    };
    println!(
        "drop_orders: {}: handles {:?}: {} declaration orders compile, of {} ({} declare a \
         handle before one it borrows); {} distinct partial declarations",
        group.name,
        group.nodes,
        orders.len(),
        permutations,
        permutations - orders.len(),
        partial.len()
    );
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    let mut longest = Duration::ZERO;
    let kernel_endings = if group.kernel_endings {
        &KERNEL_ENDINGS[..]
    } else {
        &[]
    };
    'endings: for &ending in ENDINGS.iter().chain(kernel_endings) {
        let (mut run, mut clean) = (0, 0);
        let stops_mid_way = match ending {
            Ending::QuestionMark | Ending::Panic => &partial[..],
            _ => &[][..],
        };
        for order in orders.iter().chain(stops_mid_way) {
            run += 1;
            match run_case(group, order, ending, &models) {
                Ok(span) => {
                    clean += 1;
                    longest = longest.max(span);
                }
                Err(failure) => {
                    failures.push(format!("{ending:?} {order:?}: {}", failure.what));
                    if failure.runtime_kept {
                        failures.push(
                            "the runtime stays initialized: the group's remaining cases \
                             cannot run in this process"
                                .into(),
                        );
                        counts.push((ending, run, clean));
                        break 'endings;
                    }
                }
            }
        }
        counts.push((ending, run, clean));
    }
    for (ending, run, clean) in &counts {
        let what = match ending {
            Ending::QuestionMark | Ending::Panic => format!(
                "{} complete orders + {} partial declarations",
                orders.len(),
                partial.len()
            ),
            Ending::ScopeEnd => format!("{} complete orders", orders.len()),
            Ending::QuestionMarkInKernel | Ending::PanicInKernel => format!(
                "{} complete orders, ended in the last frame's kernel closure",
                orders.len()
            ),
        };
        println!(
            "drop_orders: {}: {:<20} {run:>3} cases run, {clean:>3} clean ({what})",
            group.name,
            format!("{ending:?}"),
        );
    }
    println!(
        "drop_orders: {}: {} cases in {:.1} s; each ended with all the work it had issued \
         pending, at most {:.1} ms after the first was issued",
        group.name,
        counts.iter().map(|c| c.1).sum::<usize>(),
        started.elapsed().as_secs_f64(),
        longest.as_secs_f64() * 1000.0
    );
    for failure in &failures {
        println!("drop_orders: {}: FAIL {failure}", group.name);
    }
    let total = counts.iter().map(|c| c.1).sum::<usize>();
    let not_pending = NOT_PENDING.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "drop_orders: {}: {not_pending} of {total} cases had their work done before the end",
        group.name
    );
    assert!(
        not_pending * 10 <= total,
        "{}: {not_pending} of {total} cases ended with no work pending: they would not test \
         drop orders with work in flight (the machine is too loaded for the kernel times)",
        group.name
    );
    assert!(
        failures.is_empty(),
        "{}: {} failing cases",
        group.name,
        failures.len()
    );
}

const CHILD: &str = "ASCEND_TYPESTATE_DROP_ORDERS_CHILD";

/// Cases of this process's group whose work was done before the program ended.
static NOT_PENDING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The test `test` of this binary runs `group` in a child process and shows its summary.
fn group_test<N: Copy + Debug + PartialEq>(test: &str, group: &Group<N>) {
    if std::env::var_os(CHILD).is_some() {
        run_group(group);
        return;
    }
    let (status, out, err) = support::child::in_child(test, CHILD, Duration::from_secs(180));
    // (The first line of the child's output follows libtest's `test ... ` on its line.)
    for line in out
        .lines()
        .filter_map(|l| l.find("drop_orders:").map(|at| &l[at..]))
    {
        println!("{line}");
    }
    assert!(
        status.is_some_and(|s| s.success()),
        "{}: the child process failed ({status:?}; its summary is above):\n{err}",
        group.name
    );
}

/// Unwraps a handle the order declared earlier (`borrows` guarantees it).
fn declared<T>(handle: Option<T>) -> T {
    handle.expect("declared earlier: the order respects the borrows")
}

/// A slow kernel on `stream`: its later tasks stay pending for `KERNEL`.
fn slow(run: &Run<'_>, stream: &Stream<'_>) -> Result<()> {
    // Binds the stream's context on this thread (D6), as the raw launch below needs.
    stream.is_complete()?;
    let issued = Instant::now();
    run.sim
        .sleep_kernel(stream.as_raw(), KERNEL.as_micros() as u64);
    run.issued(issued, KERNEL);
    Ok(())
}

/// A stream with a slow kernel and three host functions behind it.
fn host_fn_stream<'c>(run: &Run<'_>, ctx: &'c Context<'c>) -> Result<HostFnStream<'c>> {
    let stream = ctx.create_stream()?.with_host_functions();
    slow(run, &stream)?;
    for _ in 0..3 {
        let token = Arc::clone(run.token);
        stream.launch(move || {
            std::thread::sleep(Duration::from_millis(1));
            drop(token);
        })?;
    }
    Ok(stream)
}

/// A stream subscribed to `report`, with a slow kernel and three callbacks behind it.
fn subscribed<'r, 'c>(
    run: &Run<'_>,
    ctx: &'c Context<'c>,
    report: &'r ReportThread<'r>,
) -> Result<Subscribed<'r, 'c>> {
    let stream = report.subscribe(ctx.create_stream()?)?;
    slow(run, &stream)?;
    for mode in [
        CallbackMode::Blocking,
        CallbackMode::NonBlocking,
        CallbackMode::Blocking,
    ] {
        let token = Arc::clone(run.token);
        stream.launch(mode, move || drop(token))?;
    }
    Ok(stream)
}

fn infer(x: f32) -> f32 {
    x * 2.0 + 1.0
}

/// A pipeline with a frame in flight in each of its `slots`.
fn pipeline_in_flight<'c>(
    run: &Run<'_>,
    ctx: &'c Context<'c>,
    slots: usize,
) -> Result<Pipeline<'c, f32, f32>> {
    let mut pipeline =
        ctx.create_pipeline::<f32, f32>(PipelineConfig::new(FRAME_IN, FRAME_OUT).slots(slots))?;
    let issued = Instant::now();
    for _ in 0..slots {
        let mut slot = pipeline.next_slot()?;
        slot.input_mut().fill(1.0);
        slot.submit(|launch| launch.simulated_map(FRAME_KERNEL, infer))?;
    }
    // One after the other on the compute stream.
    run.issued(issued, FRAME_KERNEL * slots as u32);
    Ok(pipeline)
}

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
// The case of issue 23, written out: create a pipeline, load a model, submit a frame that
// executes it, return; in both declaration orders. The model declared after the pipeline
// drops first, its execution pending: its unload waits until the pipeline proves the frame
// done.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Issue {
    Pipeline,
    Model,
}

const ISSUE_23: Group<Issue> = Group {
    name: "issue 23: a pipeline and the model it executes",
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
