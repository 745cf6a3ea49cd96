//! A program that drops its values in the order Rust chooses never leaks.
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
//!
//! This module is the harness: groups, orders, endings, the run of a case and of a group in
//! its child process, and the handles' helpers. The groups are in `drop_orders_runtime`
//! (devices, contexts, streams), `drop_orders_events` (events, callbacks, report threads),
//! `drop_orders_memory` (memory, async scopes, pipelines) and `drop_orders_models` (models,
//! model sources, a pipeline and its model).

use crate::support;

use std::cell::Cell;
use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{
    Acl, CallbackMode, Context, Error, HostFnStream, Pipeline, PipelineConfig, ReportThread,
    Result, Stream, Subscribed,
};
use support::DropErrors;
use support::sim::{Session, Sim};

/// The message of the planned panic, and of the planned error.
pub(crate) const PLANNED_PANIC: &str = "drop_orders: the planned panic";

pub(crate) const PLANNED_ERROR: &str = "drop_orders: the planned error";

/// A slow kernel ahead of each handle's work: still pending when the program ends (checked).
pub(crate) const KERNEL: Duration = Duration::from_millis(30);

/// A model's execution time per batch item (a fixed model's execution is one item; the
/// dynamic model runs batches of 2).
pub(crate) const MODEL_ITEM_TIME: Duration = Duration::from_millis(10);

/// A pipeline frame's simulated kernel, as long as one item of a model: a frame takes at least
/// this long, and the frames of a pipeline run one after the other.
pub(crate) const FRAME_KERNEL: Duration = MODEL_ITEM_TIME;

/// Model shape: 2 rows of 8 features in, 2 rows of 4 scores out.
pub(crate) const ROWS: usize = 2;

pub(crate) const FEATURES: usize = 8;

pub(crate) const CLASSES: usize = 4;

/// Elements of a pipeline frame (f32), the models' sizes.
pub(crate) const FRAME_IN: usize = ROWS * FEATURES;

pub(crate) const FRAME_OUT: usize = ROWS * CLASSES;

/// Slots (and frames in flight) of the pipelines that run models.
pub(crate) const MODEL_SLOTS: usize = 3;

/// How a program ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
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

pub(crate) const ENDINGS: [Ending; 3] = [Ending::ScopeEnd, Ending::QuestionMark, Ending::Panic];

pub(crate) const KERNEL_ENDINGS: [Ending; 2] =
    [Ending::QuestionMarkInKernel, Ending::PanicInKernel];

/// The model files of a child process.
pub(crate) struct ModelFiles {
    pub(crate) fixed: PathBuf,
    pub(crate) dynamic: PathBuf,
    /// The fixed model's file, as bytes (`ModelSource::bytes`).
    pub(crate) text: String,
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
pub(crate) struct Run<'s> {
    sim: &'s Sim,
    ending: Ending,
    /// Cloned into every host function and callback: back to one reference once they have
    /// all been run or freed.
    token: &'s Arc<()>,
    pub(crate) models: &'s ModelFiles,
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
    pub(crate) fn issued(&self, issued: Instant, lasts: Duration) {
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
    pub(crate) fn end(&self) -> Result<()> {
        match self.ending {
            Ending::QuestionMarkInKernel | Ending::PanicInKernel => Ok(()),
            Ending::ScopeEnd | Ending::QuestionMark | Ending::Panic => self.stop(),
        }
    }

    /// In the kernel closure of the last pipeline frame, once it issued its execution: the
    /// end for the endings in a kernel, nothing for the others.
    pub(crate) fn end_in_kernel(&self) -> Result<()> {
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

pub(crate) fn planned_error() -> Result<()> {
    Err(Error::InvalidArgument(PLANNED_ERROR))
}

/// Reads the live-object count when dropped: declared right after the `Acl`, it drops
/// after every other handle and before the `Acl`.
pub(crate) struct LiveProbe<'r, 's>(&'r Run<'s>);

impl Drop for LiveProbe<'_, '_> {
    fn drop(&mut self) {
        self.0.live.set(Some(self.0.sim.live_objects()));
    }
}

/// A group's program: the handles declared in `order`, below the group's fixed parents.
pub(crate) type Program<N> = fn(&Acl, &Run<'_>, &[N]) -> Result<()>;

pub(crate) struct Group<N: 'static> {
    pub(crate) name: &'static str,
    pub(crate) nodes: &'static [N],
    /// The handles a handle borrows, which must be declared before it (else it does not
    /// compile).
    pub(crate) borrows: fn(N) -> &'static [N],
    /// Whether the program can stop after any of its first handles (`?` and the panic are
    /// then also run after each partial declaration).
    pub(crate) stops_mid_way: bool,
    /// Whether its program ends in the last pipeline frame's kernel closure for the endings
    /// in a kernel (`Run::end_in_kernel`).
    pub(crate) kernel_endings: bool,
    pub(crate) program: Program<N>,
}

/// The whole program of one case: the `Acl` (taken from the session) is its first local.
pub(crate) fn root<N>(acl: Acl, run: &Run<'_>, program: Program<N>, order: &[N]) -> Result<()> {
    let _probe = LiveProbe(run);
    program(&acl, run, order)
}

/// Every permutation of `nodes` (how many), and those in which each handle comes after the
/// handles it borrows.
pub(crate) fn declaration_orders<N: Copy + PartialEq>(
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

pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".into())
}

/// One failing case: what went wrong, and whether the runtime was left initialized (no
/// further case can run in this process).
pub(crate) struct Failure {
    what: String,
    runtime_kept: bool,
}

/// Runs the program of `group` that declares `order` (all of the group's handles, or the
/// first of them when it stops mid-way) and ends with `ending`; checks that it left nothing.
/// Returns how long after its first work was issued it ended.
pub(crate) fn run_case<N: Copy>(
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
pub(crate) fn partial_declarations<N: Copy + PartialEq>(orders: &[Vec<N>]) -> Vec<Vec<N>> {
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
pub(crate) fn run_group<N: Copy + Debug + PartialEq>(group: &Group<N>) {
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

pub(crate) const CHILD: &str = "ASCEND_TYPESTATE_DROP_ORDERS_CHILD";

/// Cases of this process's group whose work was done before the program ended.
pub(crate) static NOT_PENDING: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// The test `test` of this binary runs `group` in a child process and shows its summary.
pub(crate) fn group_test<N: Copy + Debug + PartialEq>(test: &str, group: &Group<N>) {
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
pub(crate) fn declared<T>(handle: Option<T>) -> T {
    handle.expect("declared earlier: the order respects the borrows")
}

/// A slow kernel on `stream`: its later tasks stay pending for `KERNEL`.
pub(crate) fn slow(run: &Run<'_>, stream: &Stream<'_>) -> Result<()> {
    // Binds the stream's context on this thread (D6), as the raw launch below needs.
    stream.is_complete()?;
    let issued = Instant::now();
    run.sim
        .sleep_kernel(stream.as_raw(), KERNEL.as_micros() as u64);
    run.issued(issued, KERNEL);
    Ok(())
}

/// A stream with a slow kernel and three host functions behind it.
pub(crate) fn host_fn_stream<'c>(run: &Run<'_>, ctx: &'c Context<'c>) -> Result<HostFnStream<'c>> {
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
pub(crate) fn subscribed<'r, 'c>(
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

pub(crate) fn infer(x: f32) -> f32 {
    x * 2.0 + 1.0
}

/// A pipeline with a frame in flight in each of its `slots`.
pub(crate) fn pipeline_in_flight<'c>(
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
