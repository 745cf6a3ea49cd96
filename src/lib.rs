//! # ascend-typestate
//!
//! Typestate bindings to the AscendCL runtime (`libascendcl.so`, the NPU runtime of Atlas
//! 200/500 A2 boards) in which the call-order rules of the runtime are checked by the
//! compiler. The rules and their IDs (P1.., D1.., S1.., E1.., C1.., M1..) are those of
//! `docs/protocol.md`; every item below says which it enforces.
//!
//! ```no_run
//! use ascend_typestate::Acl;
//!
//! let acl = Acl::init()?;                       // P1: nothing runs without it
//! let device = acl.set_device(0)?;              // D1
//! let ctx = device.create_context()?;           // D2
//! let (producer, consumer) = (ctx.create_stream()?, ctx.create_stream()?);
//! let event = ctx.create_event()?;              // Created
//! let event = event.record(&producer)?;         // Recorded (E2)
//! let event = event.wait(&consumer, |waited| {  // consumer waits for producer (E3)
//!     waited.reset()                            // E4: leave it out and it does not compile
//! })?;                                          // Reset
//! consumer.synchronize()?;                      // S2
//! event.destroy()?;                             // D3: events and streams,
//! producer.destroy()?;
//! consumer.destroy()?;
//! ctx.destroy()?;                               //     then contexts,
//! device.reset()?;                              //     then the device,
//! acl.finalize()?;                              //     then finalize (P2)
//! # Ok::<(), ascend_typestate::Error>(())
//! ```
//!
//! ## Layers
//!
//! Each layer uses only the ones below it, as in `cudarc` (`tests/repository/layers.rs`
//! checks the imports, and that no two files import each other but a module and its child):
//!
//! * [`sys`] (`src/sys/`): the C declarations (bindgen output, checked in), the runtime's
//!   error codes ([`AclError`]) and the function table, loaded at run time with `libloading`
//!   ([`sys::loader`] documents the search order; its failures are [`LoadError`]).
//! * [`result`] (`src/result/`, one file per area): one method per C function on
//!   [`sys::loader::Api`], returning [`result::CallError`]; the calls that change runtime
//!   state are `unsafe`.
//! * The typestate API (`src/typed/`, a private module re-exported at the crate root; one
//!   file or folder per handle: `runtime`, `device`, `context`, `stream`, `event/`,
//!   `memory/`, `callback/`, `host_fn`, `model/`, `pipeline/`, with what they share in
//!   `handle` and the errors in `error`): [`Acl`] → [`Device`] → [`Context`] → [`Stream`] /
//!   [`Event`] / buffers, callbacks, host functions, models and pipelines.
//! * [`simulator`] (`src/simulator/`): what only the CPU simulator offers (checker
//!   findings, fault injection, a simulated kernel); it may use every layer, and nothing
//!   else in the crate depends on it.
//!
//! ## How rules are enforced
//!
//! * **Ownership and borrows** order creation and destruction (D3): a [`Stream`] borrows its
//!   [`Context`], which borrows its [`Device`], which borrows the [`Acl`]; destroying a parent
//!   consumes it, so it does not compile while a child lives.
//! * **Marker states** decide which methods exist: an [`Event`] is [`Created`], [`Recorded`]
//!   or [`Reset`] (E1: there is no `wait` on an event that was never recorded); a [`Device`]
//!   is [`Set`], [`DefaultContext`] (it lends its default context: set the device, create
//!   streams) or [`Reset`] (set it again to recover), each transition by value (D1, D3, D5).
//! * **A branded scope** ([`Event::wait`]) must return the [`ResetDone`] proof that only
//!   [`Waited::reset`] creates (E4); a panic or early error in the scope still resets.
//!   [`Event::wait_and_reset`] issues the wait and its reset together, for the usual case
//!   where nothing needs to happen between them.
//! * **Typed run-time errors** where the type system would cost users too much: a stream
//!   of another device or context ([`Error::DeviceMismatch`], [`Error::ContextMismatch`]),
//!   a second live [`Acl`] ([`Error::AlreadyInitialized`]).
//! * **Binding on each call** (D6): see [`Context`].
//! * **Scopes that synchronise before they return** for asynchronous memory work (M1, M2):
//!   [`Context::async_scope`] borrows every buffer for the whole scope, like
//!   [`std::thread::scope`]; a copy's kind comes from the buffer types ([`AsyncScope`]).
//! * **A subscription type** for host callbacks (C1-C9): only [`Subscribed`] has `launch`, and
//!   callbacks are `FnOnce() + Send + 'static` closures whose panics stop at the FFI boundary
//!   ([`ReportThread`]). Host-function subscription (C12) has the same shape: a
//!   [`HostFuncThread`] of the crate's, and a [`HostFuncSubscribed`] stream that is given
//!   back only once unsubscribed.
//! * **Ordering the runtime's event flag** (E1, E5): a record or wait that could overtake an
//!   earlier reset, or a read of memory another stream is still writing, is joined after it
//!   with an internal event ([`Event`], [`AsyncScope::copy`]).
//!
//! ## Testing without an NPU
//!
//! Add the simulator, a drop-in `libascendcl.so` with a protocol checker, as a
//! dev-dependency; nothing else:
//!
//! ```toml
//! [dev-dependencies]
//! ascendcl-sim = "0.1"
//! ```
//!
//! Cargo builds it into `target/<profile>/deps/`, where the loader's development fallback
//! finds it (last, after any installed runtime; [`sys::loader`]): every test, example and
//! bench of the crate then runs on it, in debug and release, from `cargo` or run directly,
//! with no environment variable. [`Acl::simulator`] tells a test it runs on the simulator
//! and gives its checker's findings (`Simulator::findings`), fault injection and call
//! counts ([`simulator`]).
//!
//! ## One runtime per process, and its lifecycle
//!
//! The runtime is process-wide (P2): one `aclInit`, one `aclFinalize`. Two ways to hold it:
//!
//! * **Owned**: [`Acl::init`] returns the token; [`Acl::finalize`] (or its `Drop`) runs
//!   `aclFinalize` once everything borrowed from it is gone, which the borrow checker
//!   proves. A second `Acl::init` while one lives is [`Error::AlreadyInitialized`].
//! * **Shared**: [`Acl::shared`] returns a `&'static Acl`, initialised by the first call
//!   and never finalized: `aclFinalize` does not run, the process's exit ends the runtime.
//!   This is what parallel `#[test]`s of one test binary use (cargo runs them on several
//!   threads of one process; each calls `Acl::shared()?`), and what an application that
//!   keeps its handles in statics, structs or `std::thread::spawn`ed threads uses: handles
//!   borrowed from a `&'static Acl` are `'static`.
//!
//! A process uses one or the other: while either exists, the other is
//! [`Error::AlreadyInitialized`].
//!
//! Never finalizing is a deliberate deviation from P2 (`docs/protocol.md`: `aclFinalize`
//! before the process exits), made for test processes, which end when the harness exits.
//! A deployment on a board owns its `Acl` in `main` and finalizes it before returning.
//!
//! What parallel tests on the shared runtime also share, because it is process-wide in the
//! runtime or in the simulator: the simulator's findings, injected faults
//! (`Simulator::inject_fault`), call counts, the drop-error handler
//! ([`set_drop_error_handler`]), the operator execution timeout, and each device, whose
//! [`Context::synchronize_device`] waits for every test's work on it. The simulator's leak
//! report and its trace (`ACLSIM_TRACE`) are written at `aclFinalize`, which the shared
//! runtime never runs. A test that needs any of these for itself (fault injection, counting
//! calls, a handler, leak checks) uses the owned `Acl` in a test file of its own (its own
//! process).
//!
//! The library itself, once loaded, stays loaded for the life of the process either way.
//!
//! ## Long-lived handles (the embedded pattern)
//!
//! A program that creates its runtime objects once at start-up and keeps them for its whole
//! life builds on [`Acl::shared`]: the device goes in a `static`, and every handle borrowed
//! from it is `'static`. A stream that is kept for the program's life can be made `'static`
//! too (`Box::leak`; it is then never destroyed, which D3 allows), and the events recorded
//! on it are `'static` as well: a worker's struct holds its stream and its events side by
//! side, and re-records them in place ([`Event::reset_completed`], E10). Every compile-time
//! rule still holds; what the borrows order at teardown is simply never torn down.
//!
//! ```no_run
//! use std::sync::OnceLock;
//! use ascend_typestate::{Acl, DefaultContext, Device, Event, Recorded, Result, Stream};
//!
//! static DEVICE: OnceLock<Device<'static, DefaultContext>> = OnceLock::new();
//!
//! struct Worker {
//!     stream: &'static Stream<'static>,
//!     frame_done: Event<'static, Recorded>,
//! }
//!
//! fn main() -> Result<()> {
//!     let device = Acl::shared()?.set_device(0)?.into_default_context()?;
//!     let device = DEVICE.get_or_init(|| device);
//!     let worker = std::thread::spawn(move || -> Result<()> {
//!         let stream: &'static Stream<'static> = Box::leak(Box::new(device.create_stream()?));
//!         let frame_done = device.create_event()?.record(stream)?;
//!         let mut worker = Worker { stream, frame_done };
//!         loop {
//!             // ... the frame's work on `worker.stream` ...
//!             worker.frame_done.synchronize()?;
//!             let done = worker.frame_done.reset_completed(worker.stream)?;
//!             worker.frame_done = done.record(worker.stream)?;
//!         }
//!     });
//!     worker.join().expect("the worker panicked")
//! }
//! ```
//!
//! A stream is `Send` but not `Sync`, so the worker's struct (which borrows its stream)
//! stays on the thread that made it. `tests/shared_runtime.rs` runs this pattern.
//!
//! ## Pipelines
//!
//! A double-buffered inference loop (host-to-device copy, kernel, device-to-host copy for each
//! frame, on two streams joined by events) is a [`Pipeline`]: created once with
//! [`Context::create_pipeline`], it owns its two streams and, for each slot, four buffers and
//! two events. [`Pipeline::next_slot`] hands out the oldest slot once its previous frame is
//! **proven done** (its completion event synchronised, M3); through the [`Slot`] the host
//! reads that frame's output and writes the next input; [`Slot::submit`] consumes the guard
//! and issues the frame, the kernel given a [`Launch`] (the compute stream and the slot's
//! device buffers). While one frame is copied back, the next is computed: nothing drains.
//! A [`JpegPipeline`] starts each frame from a JPEG file instead ([`Slot::load_jpeg`]):
//! the media engine decodes and resizes it on the compute stream into the picture the
//! kernel reads (DV6-DV11).
//!
//! ```no_run
//! use ascend_typestate::{Acl, DefaultContext, Device, Pipeline, PipelineConfig, Result};
//!
//! fn infer(x: f32) -> f32 { x * 2.0 + 1.0 }
//!
//! /// The application's worker: everything its loop uses, created once.
//! struct Worker {
//!     pipeline: Pipeline<'static, f32, f32>,
//! }
//!
//! fn main() -> Result<()> {
//!     let device: &'static Device<'static, DefaultContext> =
//!         Box::leak(Box::new(Acl::shared()?.set_device(0)?.into_default_context()?));
//!     let mut worker = Worker {
//!         pipeline: device.create_pipeline(PipelineConfig::new(1024, 1024).slots(2))?,
//!     };
//!     std::thread::spawn(move || -> Result<()> {
//!         for _ in 0..1000 {
//!             let mut slot = worker.pipeline.next_slot()?;   // its previous frame is done
//!             if let Some((frame, output)) = slot.output() {
//!                 println!("frame {frame}: {}", output[0]);
//!             }
//!             slot.input_mut().fill(1.0);
//!             slot.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, infer))?;
//!         }
//!         worker.pipeline.wait_all()?;                       // the last frames
//!         worker.pipeline.destroy()
//!     })
//!     .join()
//!     .expect("the worker panicked")
//! }
//! ```
//!
//! A worker that ends with its owner needs no `'static` at all: [`std::thread::scope`] joins
//! it before the scope returns, so the pipeline may borrow an owned [`Acl`] and everything
//! is torn down in order, errors returned, the runtime finalized:
//!
//! ```no_run
//! use ascend_typestate::{Acl, PipelineConfig, Result};
//!
//! fn main() -> Result<()> {
//!     let acl = Acl::init()?;
//!     let device = acl.set_device(0)?.into_default_context()?;
//!     let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(1024, 1024))?;
//!     let frames = std::thread::scope(|s| {
//!         let worker = s.spawn(|| -> Result<u64> {
//!             for _ in 0..1000 {
//!                 let mut slot = pipeline.next_slot()?;
//!                 slot.input_mut().fill(1.0);
//!                 slot.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, |x| x))?;
//!             }
//!             pipeline.wait_all()?;
//!             Ok(pipeline.submitted())
//!         });
//!         worker.join().expect("the worker panicked")
//!     })?;
//!     println!("{frames} frames");
//!     pipeline.destroy()?;   // after the worker: it borrowed the pipeline
//!     device.reset()?;
//!     acl.finalize()?;
//!     Ok(())
//! }
//! ```
//!
//! What does not compile: writing a submitted frame's input or reading its output (the guard
//! is consumed), holding two slots at once, destroying the pipeline while a slot is held,
//! keeping what the kernel was lent (`ui-tests/fail/*pipeline*`). What cannot happen at run
//! time: the state of each slot lives in the pipeline, so a forgotten guard, a kernel that
//! fails or panics half-way, or an injected runtime failure leaves the slot *unsettled*, and
//! both streams are synchronised before its buffers are handed out again; forgetting the
//! pipeline leaks its buffers rather than freeing them under running tasks
//! (`tests/pipelines/frames.rs`). The steady state creates no runtime object and allocates
//! nothing (`tests/steady_state.rs`), and runs within 1.02 of the raw program's host
//! instructions (`docs/benchmarks.md`).
//!
//! ## Models
//!
//! A compiled model (`.om`, made with ATC; on the simulator, its own text format written by
//! [`simulator::SimModel`]) is a [`Model`] bound to the context it was loaded in (MD1):
//! [`Context::load_model`] for fixed shapes, [`Context::load_dynamic_model`] for dynamic batch
//! gears, from a file, from a file with work and weight memory allocated at start-up
//! ([`ModelSource::file_with_memory`]: the model owns it until unloaded, MD2) or from bytes
//! ([`ModelSource::bytes`], MD3). Synchronous execution runs on a [`ModelIo`] (device memory
//! for every input and output, sized from the description: MD5, MD9, MD10). Asynchronous
//! execution is a pipeline frame's kernel ([`Launch::execute`]: the model's inputs one after
//! the other in the slot's input, its outputs in the slot's output), whose buffers come back
//! only once the frame is proven done (MD6); or, for any model on a stream of your choice,
//! composed with copies, kernels and events, [`AsyncScope::execute`], which borrows the model
//! and one device buffer per input and output until the scope has synchronised the stream
//! (M1). Element types come from the description too (MD13):
//! every read or write of model memory names an [`Element`] type, checked against the
//! tensor's [`DataType`] before anything runs, so an `int32` output is never read as `f32`
//! garbage ([`Error::ModelTypeMismatch`]); `float16` models use [`F16`]:
//!
//! ```no_run
//! use ascend_typestate::{Acl, DataType, PipelineConfig, Result};
//!
//! fn main() -> Result<()> {
//!     let acl = Acl::init()?;
//!     let device = acl.set_device(0)?.into_default_context()?;
//!     let mut model = device.load_model("resnet50.om")?;
//!     let (input, output) = (&model.inputs()[0], &model.outputs()[0]);
//!     assert_eq!(output.data_type(), DataType::Float); // f32 scores (MD13)
//!     let config = PipelineConfig::new(input.byte_len() / 4, output.byte_len() / 4);
//!     // <f32, f32>: checked against the model's types at the first frame that executes it;
//!     // an int32 or float16 model is `Error::ModelTypeMismatch` there, before it runs.
//!     let mut pipeline = device.create_pipeline::<f32, f32>(config)?;
//!     for _ in 0..100 {
//!         let mut slot = pipeline.next_slot()?;
//!         if let Some((frame, scores)) = slot.output() {
//!             println!("frame {frame}: {} scores", scores.len());
//!         }
//!         slot.input_mut().fill(0.5);                  // the next image
//!         slot.submit(|launch| launch.execute(&mut model))?;
//!     }
//!     pipeline.wait_all()?;
//!     pipeline.destroy()?;
//!     model.unload()?;
//!     Ok(())
//! }
//! ```
//!
//! A model with several inputs and outputs of any types, fed by a kernel on another stream:
//!
//! ```no_run
//! # use ascend_typestate::{Acl, MallocPolicy, Result};
//! # fn main() -> Result<()> {
//! # let acl = Acl::init()?;
//! # let ctx = acl.set_device(0)?.into_default_context()?;
//! let mut model = ctx.load_model("detector.om")?;       // in: image f32, im_info f32
//! let (pre, infer) = (ctx.create_stream()?, ctx.create_stream()?); // out: boxes f32, count i32
//! let (image, info) = (vec![0.5f32; 3 * 640 * 640], [640.0f32, 640.0, 1.0, 1.0]);
//! let mut d_image = ctx.alloc::<f32>(image.len(), MallocPolicy::HugeFirst)?;
//! let mut d_info = ctx.alloc::<f32>(info.len(), MallocPolicy::HugeFirst)?;
//! let mut d_boxes = ctx.alloc::<f32>(100 * 6, MallocPolicy::HugeFirst)?;
//! let mut d_count = ctx.alloc::<i32>(1, MallocPolicy::HugeFirst)?;
//! let (mut boxes, mut count) = (vec![0.0f32; 100 * 6], [0i32]);
//! ctx.async_scope(|scope| {
//!     let image = scope.copy(&pre, &mut d_image, &image[..])?;   // on `pre`
//!     let info = scope.copy(&pre, &mut d_info, &info[..])?;
//!     // On `infer`, after the copies (a join): types and sizes checked first (MD10, MD13).
//!     let run = scope.execute(&infer, &mut model, [image.into(), info.into()],
//!                             [(&mut d_boxes).into(), (&mut d_count).into()])?;
//!     scope.copy(&infer, &mut boxes[..], run.output::<f32>(0)?)?;
//!     scope.copy(&infer, &mut count[..], run.output::<i32>(1)?)?;
//!     Ok(())
//! })?;                                  // synchronised: `boxes` and `count` are complete (M1)
//! # Ok(())
//! # }
//! ```
//!
//! What does not compile: a model outliving its context, freeing its work memory, reading
//! its description after unloading it, sharing it between threads, executing a
//! dynamic-batch model without naming a gear, executing a model in a pipeline of
//! non-[`Element`] types, giving a scoped execution host memory, or unloading, executing
//! again or reading the outputs of a model inside the scope that executes it
//! (`ui-tests/fail/md*`, `ui-tests/fail/m1_model_*`). What is a typed error:
//! unloading a model, or executing it synchronously or on another stream, while a pipeline
//! frame that executes it is not yet proven done ([`Error::ModelInUse`], MD7, MD8); a batch
//! that is not a gear ([`Error::NotAGear`]); sizes that differ from the description
//! ([`Error::ModelSizeMismatch`]); element types that differ from it
//! ([`Error::ModelTypeMismatch`]: [`ModelIo::write_input`], [`ModelIo::read_output`],
//! [`ModelIo::output_view`], [`Launch::execute`]) or undefined in it
//! ([`Error::UnreadableDescription`] at load). A model dropped while executions are pending is
//! kept loaded, with its memory, and reported. On the board (device run mode),
//! [`ModelIo::output_view`] reads an output in place, as the official samples do.
//! The model functions are looked up on first use in the runtime library, else in
//! `libacl_mdl.so` beside it (newer CANN); if absent, only the model API answers
//! [`Error::Unsupported`] naming the function (`tests/loading/library_stubs.rs`).
//!
//! ## What soundness rests on
//!
//! A safe program cannot cause a data race, a crash, a protocol violation the simulator's
//! checker would flag, or a hang on events. That rests on these choices, each tested (the
//! tests of every area try to break them with safe code, `tests/README.md`):
//!
//! * **Not on `Drop` running**: `Drop` is only a fallback for the explicit, fallible
//!   `destroy`/`finalize` methods, and its errors go to the
//!   [drop-error handler](set_drop_error_handler). A leaked (`mem::forget`) handle keeps its
//!   parents alive ([`Error::LiveChildren`]) instead of being released under them
//!   (`tests/devices/leaked_children.rs`, `tests/callbacks/forget.rs`).
//! * **Not on a runtime call succeeding**: every clean-up step is tried again while the
//!   runtime fails it (four tries: two transient failures in a row and a stream's one-time
//!   asynchronous error), each failure reported; a handle whose release still fails is kept,
//!   counted in its parent (D3), never released under work that may still use it, and a
//!   waited event is never destroyed unreset (E4). Every error is returned or reported
//!   (`tests/simulator/fault_sweep.rs`, `tests/simulator/fault_sweep_features.rs`: every
//!   call of realistic programs failing once, and twice in a row;
//!   `tests/devices/drop_orders.rs`: every declaration order with work in flight, ended by
//!   scope, `?` and panic).
//! * **`?` works anywhere**: each method's usual form returns the `'static` [`Error`] (into
//!   `Box<dyn Error>` or `anyhow`), the handle going to its `Drop` fallback on failure; its
//!   `try_` form gives the handle back ([`Failed`]) for a caller who wants to retry:
//!   `destroy`/`try_destroy`, `record`/`try_record`, `wait`/`try_wait`, `reset`/`try_reset`,
//!   and so on.
//! * **Not on a wait timing out**: typed waits never time out. [`Acl::init`] sets the op
//!   wait timeout to 0 (P3a in `docs/protocol.md`): a stream wait that ends by timeout
//!   orders nothing and leaves a stale event flag behind, which no typed guarantee could
//!   survive (`tests/events/wait_timeout_env.rs`: a runtime whose default timeout is armed).
//!   Hangs are bounded on the host instead ([`Stream::synchronize_with`],
//!   [`Event::synchronize_with`]), where a timeout orders nothing and breaks nothing.
//! * **On the library staying loaded**: the runtime library, once loaded, is never
//!   unloaded ([`sys::loader::Api`]); its threads run until the process ends
//!   (`tests/loading/unload.rs`).
//! * **On the raw layer being `unsafe`**: every [`result`] call that creates, changes or
//!   releases runtime state is `unsafe`, so safe code cannot initialise, arm a timeout or
//!   create objects behind the typed API's back, with or without a live [`Acl`]
//!   (`ui-tests/fail/*_is_unsafe.rs`). Its safe calls are queries the runtime allows from
//!   any thread, callbacks included, each listed with its source in `docs/protocol.md`
//!   ("C8 and the raw layer"); the one that reads a model file refuses inside callbacks
//!   (`tests/callbacks/raw_queries.rs`).
//! * **On code run by the runtime being marked**: host callbacks and simulated kernels get
//!   [`Error::InsideCallback`] from every entry point of the crate on the thread that runs
//!   them (C8; `tests/callbacks/c8_every_entry_point.rs`). A thread they start is not
//!   marked: a blocking callback that waits for such a thread to synchronise its own stream
//!   deadlocks, as any host code that waits for work queued behind itself does.
//! * **On the loaded library being a real AscendCL runtime** (or the simulator): loading
//!   trusts it, as any FFI crate must ([`sys::loader`]).
//!
//! ## Cost
//!
//! Handles are the raw handle plus what the checks need (sizes pinned below); states are
//! zero-sized. A typed call is the C call through the function table, preceded by the run-time
//! checks above: pointer and thread-local compares, 11 to 21 instructions per runtime call
//! in loops that keep their handles in local variables, with every failure path out of line.
//! Moving an event between `Option` slots each cycle costs about 24 per call, and a join
//! between streams (E5) about 70 beyond its three runtime calls. Measured with callgrind against the
//! same programs written with raw calls (`scripts/callgrind.sh`, checked in CI against a
//! budget of added instructions per cycle), the same regardless of how many threads share a
//! context or how many callbacks are in flight.
//! `docs/benchmarks.md` has the numbers and where each instruction goes.
#![warn(missing_debug_implementations)]
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(
    clippy::undocumented_unsafe_blocks,
    clippy::multiple_unsafe_ops_per_block
)]

// The typed API: a private module, one public path per item (the re-exports below).
mod typed;

// The layers below it, and the simulator's extensions: public modules of their own.
pub mod result;
pub mod simulator;
pub mod sys;

pub use sys::codes::AclError;
pub use sys::loader::error::{LoadError, TriedPath};
pub use typed::callback::{
    CallbackMode, DEFAULT_CALLBACK_CAPACITY, HostFuncSubscribed, HostFuncThread,
    MAX_CALLBACK_CAPACITY, MAX_REPORT_THREADS, ReportThread, Subscribed,
};
pub use typed::context::{Context, DEFAULT_JOIN_CAPACITY, MemoryInfo, MemoryKind};
pub use typed::device::{DefaultContext, Device, DeviceCapability, DeviceState, Set, SetState};
pub use typed::dtype::{BF16, DataType, Element, F16, Format};
pub use typed::error::{Error, ModelFileProblem, ModelTensor, Result};
pub use typed::event::{
    Created, Event, EventState, Recordable, Recorded, Reset, ResetDone, WaitError, Waited,
};
pub use typed::handle::{DropErrorHandler, Failed, Timeout, set_drop_error_handler};
pub use typed::host_fn::HostFnStream;
pub use typed::media::{
    ChannelMode, DecodesJpeg, FrameLayout, FrameSource, JpegBuffer, JpegHeader, JpegSampling,
    Jpegd, JpegdVpc, MediaBuffer, MediaChannel, MediaFrame, MediaTasks, MediaV1, PendingFrame,
    PixelFormat, Resizes, Vpc,
};
pub use typed::memory::{
    AsyncScope, DeviceBuffer, DeviceSlice, DeviceSliceMut, HostBuffer, Location, MallocPolicy,
    Memory, MemoryMut, Pending, PendingDevice, PendingHost, Source,
};
pub use typed::model::{
    DYNAMIC_BATCH_INPUT, Dynamic, Executed, Model, ModelInput, ModelIo, ModelKind, ModelOutput,
    ModelSource, Static, TensorDesc,
};
pub use typed::pipeline::{
    FrameInput, JpegConfig, JpegPipeline, Jpegs, Launch, MAX_PIPELINE_SLOTS, Pipeline,
    PipelineConfig, Slot, Tensors,
};
pub use typed::runtime::{Acl, InitOptions, RuntimeLibrary};
pub use typed::stream::{Stream, StreamConfig};

/// Sizes and thread-safety, pinned: a change here is a deliberate API change.
mod assertions {
    use super::*;
    use static_assertions::{assert_eq_size, assert_impl_all, assert_not_impl_any};
    use std::ffi::c_void;

    type Raw = *mut c_void;

    // Zero-sized states.
    assert_eq_size!(Created, ());
    assert_eq_size!(Recorded, ());
    assert_eq_size!(Reset, ());
    assert_eq_size!(ResetDone<'static>, ());
    assert_eq_size!(Set, ());
    assert_eq_size!(Jpegd, ());
    assert_eq_size!(Vpc, ());
    assert_eq_size!(JpegdVpc, ());
    assert_eq_size!(MediaV1<'static>, ()); // the process-wide flag is the state (DV1)
    assert_eq_size!(DefaultContext, ());
    // Handles: the raw pointers they need, nothing more.
    assert_eq_size!(Acl, Raw); // the loaded library
    assert_eq_size!(Device<'static, Set>, [Raw; 4]); // library + id + live contexts + default context
    assert_eq_size!(Device<'static, Set>, Device<'static, Reset>);
    assert_eq_size!(Stream<'static>, [Raw; 9]); // stream + context (D6) + reset counts, id, last join (E5) + joins (E9)
    assert_eq_size!(Event<'static, Recorded>, [Raw; 3]); // event + context + last reset stream (E9)
    assert_eq_size!(Event<'static, Created>, Event<'static, Reset>);
    assert_eq_size!(Timeout, i32);
    assert_eq_size!(Error, [Raw; 4]);

    // Every public error type of the typed API is a `std::error::Error`.
    assert_impl_all!(Error: std::error::Error);
    assert_impl_all!(ModelFileProblem: std::error::Error);
    assert_impl_all!(Failed<()>: std::error::Error);
    assert_impl_all!(WaitError<'static>: std::error::Error);
    assert_impl_all!(Acl: Send, Sync);
    assert_impl_all!(Device<'static, Set>: Send, Sync);
    assert_impl_all!(Device<'static, DefaultContext>: Send, Sync);
    assert_impl_all!(Device<'static, Reset>: Send, Sync);
    assert_impl_all!(Context<'static>: Send, Sync);
    assert_impl_all!(Stream<'static>: Send);
    assert_not_impl_any!(Stream<'static>: Sync);
    assert_impl_all!(Event<'static, Recorded>: Send);
    assert_not_impl_any!(Event<'static, Recorded>: Sync);
    assert_impl_all!(Error: Send, Sync, std::error::Error);
    assert_impl_all!(DeviceBuffer<'static, f32>: Send, Sync);
    assert_impl_all!(HostBuffer<'static, f32>: Send, Sync);
    assert_impl_all!(MediaBuffer<'static>: Send, Sync);
    assert_impl_all!(MediaChannel<'static, JpegdVpc>: Send);
    assert_not_impl_any!(MediaChannel<'static, JpegdVpc>: Sync); // DV4: one thread
    assert_impl_all!(MediaFrame<'static>: Send);
    assert_not_impl_any!(MediaFrame<'static>: Sync);
    assert_not_impl_any!(MediaTasks<'static, 'static, JpegdVpc>: Send, Sync);
    assert_eq_size!(MediaChannel<'static, JpegdVpc>, [Raw; 4]); // context + description + created + configuration
    assert_eq_size!(MediaBuffer<'static>, [Raw; 3]); // pointer + length + context
    assert_not_impl_any!(AsyncScope<'static, 'static>: Send, Sync);
    assert_impl_all!(ReportThread<'static>: Send, Sync);
    assert_impl_all!(Subscribed<'static, 'static>: Send);
    assert_not_impl_any!(Subscribed<'static, 'static>: Sync);
    assert_impl_all!(HostFnStream<'static>: Send);
    assert_not_impl_any!(HostFnStream<'static>: Sync);
    assert_eq_size!(HostFnStream<'static>, [Raw; 10]); // stream + closures shared with the runtime
    assert_impl_all!(HostFuncThread<'static>: Send, Sync);
    assert_eq_size!(HostFuncThread<'static>, [Raw; 7]); // context + thread id + loop state + join handle (3) + stopped
    assert_impl_all!(HostFuncSubscribed<'static, 'static>: Send);
    assert_not_impl_any!(HostFuncSubscribed<'static, 'static>: Sync);
    assert_eq_size!(HostFuncSubscribed<'static, 'static>, [Raw; 10]); // stream + its thread
    assert_impl_all!(StreamConfig: Send, Sync, Copy);
    assert_eq_size!(DeviceBuffer<'static, f32>, [Raw; 3]); // pointer + length + context
    assert_impl_all!(Timeout: Send, Sync, Copy);
    assert_impl_all!(Pipeline<'static, f32, u8>: Send);
    assert_not_impl_any!(Pipeline<'static, f32, u8>: Sync);
    assert_impl_all!(Slot<'static, 'static, f32, u8>: Send);
    assert_not_impl_any!(Launch<'static, 'static, f32, u8>: Send, Sync);
    assert_impl_all!(PipelineConfig: Send, Sync, Copy);
    // DV4: a JPEG pipeline's channel serves one thread at a time: it moves, it is not shared.
    assert_impl_all!(JpegPipeline<'static, f32>: Send);
    assert_not_impl_any!(JpegPipeline<'static, f32>: Sync);
    assert_impl_all!(Slot<'static, 'static, u8, f32, Jpegs>: Send);
    assert_not_impl_any!(Slot<'static, 'static, u8, f32, Jpegs>: Sync);
    assert_impl_all!(JpegConfig: Send, Sync, Copy);
    // Context, two streams (9 words each), slots (2), jobs, next, submitted, configuration (4):
    // the tensor input stage shares nothing (`()`), so a tensor pipeline pays nothing for `S`.
    assert_eq_size!(Pipeline<'static, f32, u8>, [Raw; 28]);
    // MD8: a model moves to the thread that executes it, but is never shared between threads
    // (executing needs `&mut`, and the description's queries are not promised thread-safe).
    assert_impl_all!(Model<'static, Static>: Send);
    assert_not_impl_any!(Model<'static, Static>: Sync);
    assert_impl_all!(Model<'static, Dynamic>: Send);
    assert_not_impl_any!(Model<'static, Dynamic>: Sync);
    assert_impl_all!(ModelIo<'static>: Send);
    assert_not_impl_any!(ModelIo<'static>: Sync);
}
