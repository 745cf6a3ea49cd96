//! The simulator's extension API, for tests of programs built on this crate: the protocol
//! checker's findings, the live-object count, fault injection and call counts. Available
//! when the loaded library is the CPU simulator built from `sim/` ([`Acl::simulator`] is
//! `None` on the vendor runtime).
//!
//! The top layer: it may import the typed API and the layers below it; only `src/lib.rs`
//! names it, nothing else in the crate depends on it.
//!
//! ```no_run
//! # use ascend_typestate::Acl;
//! let acl = Acl::init()?;
//! if let Some(sim) = acl.simulator() {
//!     sim.clear_findings();
//!     // ... run the code under test ...
//!     for finding in sim.findings() {
//!         eprintln!("[{}] {}", finding.rule, finding.message);
//!     }
//! }
//! # Ok::<(), ascend_typestate::Error>(())
//! ```

use std::ffi::{CString, c_char};

use crate::typed::error::{Error, Result};
use crate::typed::runtime::Acl;
use std::ffi::c_void;
use std::marker::PhantomData;

use bytemuck::Pod;

use crate::sys::bindings::{aclError, aclrtStream};
use crate::sys::loader::Api;
use crate::typed::handle::report_drop_error;
use crate::typed::memory::{AsyncScope, Location, MemoryMut, PendingDevice, Source};
use crate::typed::stream::Stream;

/// The longest simulated kernel: 2176 s, the longest operator execution timeout CANN
/// documents (P5). A longer one could never complete (nor fail by a timeout when none is
/// set): the simulator refuses it, and so does [`AsyncScope::simulated_map`] before calling
/// it.
pub const MAX_KERNEL_DURATION: std::time::Duration = std::time::Duration::from_secs(2176);

/// [`MAX_KERNEL_DURATION`] in microseconds, what the simulator is given.
const MAX_KERNEL_MICROS: u64 = 2_176_000_000;
static_assertions::const_assert_eq!(MAX_KERNEL_MICROS, MAX_KERNEL_DURATION.as_micros() as u64);

/// [`Error::InvalidArgument`] for a kernel longer than [`MAX_KERNEL_DURATION`].
#[cold]
#[inline(never)]
fn too_long() -> Error {
    Error::InvalidArgument(
        "a simulated kernel longer than 2176 s (the longest operator execution timeout, P5) \
         could never complete",
    )
}

/// One finding of the simulator's protocol checker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The rule ID of `docs/protocol.md` (`"E4"`, `"M2"`, ...).
    pub rule: String,
    /// What happened, the handles involved and what to do.
    pub message: String,
}

/// Access to the simulator's checker (see the [module docs](self)).
///
/// Everything it reads or changes is process-wide: findings, injected faults, call counts
/// and quietness are shared by every thread, and by every test of a test binary that runs
/// on the shared runtime ([`Acl::shared`]). A test that injects faults, counts calls or
/// clears findings for itself runs in a test file of its own.
///
/// It stays usable after its `Acl` is finalized (the simulator's extension API works
/// without an initialised runtime; see `sim/include/aclsim.h`), hence `'static`.
#[derive(Clone, Copy)]
pub struct Simulator<'a> {
    table: SimulatorTable,
    _acl: PhantomData<&'a Acl>,
}

impl std::fmt::Debug for Simulator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("api_version", &self.api_version())
            .finish_non_exhaustive()
    }
}

impl Acl {
    /// The simulator's extension API, when the loaded runtime is the simulator.
    pub fn simulator(&self) -> Option<Simulator<'static>> {
        SimulatorTable::of(self.api_static()).map(|table| Simulator {
            table,
            _acl: PhantomData,
        })
    }
}

impl Simulator<'_> {
    /// Every finding made since the last [`clear_findings`](Self::clear_findings), in order.
    pub fn findings(&self) -> Vec<Finding> {
        // SAFETY: no arguments.
        let count = unsafe { (self.table.aclsimFindingCount)() };
        let mut out = Vec::with_capacity(count);
        for index in 0..count {
            let mut rule = [0u8; 16];
            let mut message = vec![0u8; 4096];
            // SAFETY: both buffers are writable for the capacities passed.
            let code = unsafe {
                (self.table.aclsimGetFinding)(
                    index,
                    rule.as_mut_ptr().cast::<c_char>(),
                    rule.len(),
                    message.as_mut_ptr().cast::<c_char>(),
                    message.len(),
                )
            };
            if code != 0 {
                // Cleared concurrently: what was read so far is all there is.
                break;
            }
            out.push(Finding {
                rule: c_text(&rule),
                message: c_text(&message),
            });
        }
        out
    }

    /// The version of the simulator's extension API (`aclsimApiVersion`).
    pub fn api_version(&self) -> u32 {
        // SAFETY: no arguments.
        unsafe { (self.table.aclsimApiVersion)() }
    }

    /// Forgets every finding.
    pub fn clear_findings(&self) {
        // SAFETY: no arguments.
        unsafe { (self.table.aclsimClearFindings)() }
    }

    /// Live runtime objects (created contexts, streams, events, allocations, subscriptions).
    pub fn live_objects(&self) -> usize {
        // SAFETY: no arguments.
        unsafe { (self.table.aclsimLiveObjectCount)() }
    }

    /// Fault injection (`aclsimInjectFaultAt`): after the next `skip` calls of the runtime
    /// function named `call` (e.g. `"aclrtRecordEvent"`), the `times` calls after them return
    /// `code` and do nothing else. Every call of `call` counts toward `skip`. Disarmed by
    /// [`clear_faults`](Self::clear_faults) and by `aclFinalize`.
    ///
    /// Errors: the simulator's code ([`Error::Runtime`]: 100001 when the runtime is not
    /// initialized, 100000 for a zero `code` or `times`, or a name that can never fire),
    /// [`Error::InvalidArgument`] for a name containing a NUL byte, [`Error::Unsupported`]
    /// for a simulator build without it.
    ///
    /// ```no_run
    /// # use ascend_typestate::Acl;
    /// let acl = Acl::init()?;
    /// if let Some(sim) = acl.simulator() {
    ///     // The second stream creation fails with ACL_ERROR_RT_INTERNAL_ERROR.
    ///     sim.inject_fault("aclrtCreateStream", 507000, 1, 1)?;
    /// }
    /// # Ok::<(), ascend_typestate::Error>(())
    /// ```
    pub fn inject_fault(&self, call: &str, code: i32, skip: u32, times: u32) -> Result<()> {
        const SYMBOL: &str = "aclsimInjectFaultAt";
        let inject = self
            .table
            .aclsimInjectFaultAt
            .ok_or(Error::Unsupported { symbol: SYMBOL })?;
        let name = CString::new(call)
            .map_err(|_| Error::InvalidArgument("a function name contains a NUL byte"))?;
        // SAFETY: a NUL-terminated string that outlives the call.
        let result = unsafe { inject(name.as_ptr(), code, skip, times) };
        crate::sys::codes::check(result).map_err(|code| Error::Runtime {
            call: SYMBOL,
            code,
            message: None,
        })
    }

    /// Disarms every injected fault (`aclsimClearFaults`); nothing on a simulator build
    /// without it.
    pub fn clear_faults(&self) {
        if let Some(clear) = self.table.aclsimClearFaults {
            // SAFETY: no arguments.
            unsafe { clear() }
        }
    }

    /// How many times the runtime function named `call` was called since the last
    /// [`reset_call_counts`](Self::reset_call_counts) or process start, failing calls
    /// included (`aclsimCallCount`). 0 for an unknown name, a name containing a NUL byte, or
    /// a simulator build without call counts.
    pub fn call_count(&self, call: &str) -> u64 {
        let (Some(count), Ok(name)) = (self.table.aclsimCallCount, CString::new(call)) else {
            return 0;
        };
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { count(name.as_ptr()) }
    }

    /// Whether findings are also printed to stderr (`aclsimSetQuiet`): `Some(true)` silences
    /// them, `Some(false)` prints them, `None` follows `ACLSIM_QUIET` again (the default).
    /// They are recorded either way, for [`findings`](Self::findings). For a test that
    /// provokes a finding on purpose and asserts it, so that passing tests print nothing.
    /// Process-wide. Nothing on a simulator build without it.
    pub fn set_quiet(&self, quiet: Option<bool>) {
        if let Some(set) = self.table.aclsimSetQuiet {
            // SAFETY: takes an int, -1, 0 or 1 here.
            unsafe { set(quiet.map_or(-1, i32::from)) };
        }
    }

    /// Sets every call count to 0 (`aclsimResetCallCounts`).
    pub fn reset_call_counts(&self) {
        if let Some(reset) = self.table.aclsimResetCallCounts {
            // SAFETY: no arguments.
            unsafe { reset() }
        }
    }
}

fn c_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

impl<'scope, 'env> AsyncScope<'scope, 'env> {
    /// A synthetic kernel, on the simulator only (`aclsimLaunchKernel`): after `duration`,
    /// `output[i] = f(input[i])` for each element of `input`, run by `stream` in order with its
    /// other tasks. Both must be device memory of this context's device; `input` may be the
    /// [`Pending`](crate::typed::memory::Pending) result of an earlier copy of the scope. The returned [`Pending`](crate::typed::memory::Pending) is
    /// `output`, for later copies.
    ///
    /// `f` is a plain function (it captures nothing), applied element by element to device
    /// memory the way a kernel would: no Rust reference to device memory is ever formed.
    /// It runs on the simulator's thread like a host callback: the crate's calls return
    /// [`Error::InsideCallback`] there (C8). If it panics, the output is left partly written
    /// and the panic goes to the [drop-error handler](crate::set_drop_error_handler) as
    /// [`Error::CallbackPanicked`]. On the vendor runtime this is [`Error::Unsupported`].
    /// A `duration` beyond [`MAX_KERNEL_DURATION`] is [`Error::InvalidArgument`], before the
    /// simulator is called.
    pub fn simulated_map<T, D, S>(
        &'scope self,
        stream: &'scope Stream<'_>,
        duration: std::time::Duration,
        input: S,
        output: &'scope mut D,
        f: fn(T) -> T,
    ) -> Result<PendingDevice<'scope, T>>
    where
        T: Pod,
        D: MemoryMut<T> + ?Sized,
        S: Source<'scope, T>,
    {
        // Not `ok_or(Error::..)`, which would build and drop an `Error` per launch.
        let Some(launch_kernel) = SimulatorTable::launch_kernel_of(self.ctx.api()) else {
            return Err(Error::Unsupported {
                symbol: "aclsimLaunchKernel",
            });
        };
        if duration > MAX_KERNEL_DURATION {
            return Err(too_long());
        }
        if S::LOCATION != Location::Device || D::LOCATION != Location::Device {
            return Err(Error::InvalidArgument(
                "a kernel reads and writes device memory",
            ));
        }
        if input.len() > output.len() {
            return Err(Error::InvalidArgument(
                "the kernel's input is longer than its output",
            ));
        }
        self.ctx.check_device(output.device_id())?;
        self.ctx.check_device(input.device_id())?;
        self.use_stream(stream)?;
        self.after_writer(&input, stream)?;
        let out_ptr = output.as_mut_ptr();
        let written = self.written_by(stream, output);
        let job = Box::new(MapJob::<T> {
            input: input.as_ptr().cast(),
            output: out_ptr.cast(),
            len: input.len(),
            f,
        });
        // An empty view may point one past its buffer: name only non-empty buffers.
        let all = [input.as_ptr().cast_mut(), out_ptr];
        let buffers: &[*mut c_void] = if input.is_empty() { &[] } else { &all };
        let user_data = Box::into_raw(job).cast::<c_void>();
        let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        // SAFETY: `stream` is live and its context current; both buffers are device memory
        // borrowed until the scope synchronises `stream`; `run_map::<T>` matches the job's
        // type and frees it on its only run.
        let code = unsafe {
            launch_kernel(
                stream.as_raw(),
                micros,
                Some(run_map::<T>),
                user_data,
                buffers.as_ptr(),
                buffers.len(),
            )
        };
        if let Err(code) = crate::sys::codes::check(code) {
            // SAFETY: not enqueued, so the job is still ours alone.
            drop(unsafe { Box::from_raw(user_data.cast::<MapJob<T>>()) });
            return Err(Error::Runtime {
                call: "aclsimLaunchKernel",
                code,
                message: crate::result::RuntimeMessage::recent(self.ctx.api(), code),
            });
        }
        Ok(PendingDevice(written))
    }
}

impl<I: Pod, O: Pod> crate::typed::pipeline::Launch<'_, '_, I, O> {
    /// The frame's kernel, synthetic, on the simulator only (`aclsimLaunchKernel`): after
    /// `duration`, `output[i] = f(input[i])` for the first `min(input_len, output_len)`
    /// elements of the slot's device buffers, on the compute stream. Once per frame (a second
    /// call is [`Error::InvalidArgument`]); no allocation: the job is kept in the pipeline.
    ///
    /// As for [`AsyncScope::simulated_map`]: `f` runs on the simulator's thread (C8), a panic
    /// in it is reported as [`Error::CallbackPanicked`]; on the vendor runtime this is
    /// [`Error::Unsupported`]. A `duration` beyond [`MAX_KERNEL_DURATION`] is
    /// [`Error::InvalidArgument`], before the simulator is called (the frame may then launch
    /// its kernel).
    #[inline]
    pub fn simulated_map(&self, duration: std::time::Duration, f: fn(I) -> O) -> Result<()> {
        // Not `ok_or(Error::..)`, which would build and drop an `Error` per launch.
        let Some(launch_kernel) = SimulatorTable::launch_kernel_of(self.api()) else {
            return Err(Error::Unsupported {
                symbol: "aclsimLaunchKernel",
            });
        };
        // One compare on the value the launch needs anyway (the pipeline's per-frame path).
        let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        if micros > MAX_KERNEL_MICROS {
            return Err(too_long());
        }
        if self.launched.replace(true) {
            return Err(Error::InvalidArgument(
                "one simulated kernel per pipeline frame",
            ));
        }
        // The closure may have made another context current (D6).
        if let Err(e) = self.stream().bind() {
            self.launched.set(false);
            return Err(e);
        }
        let job = self.job.as_ptr();
        // SAFETY: the slot's job, in the pipeline's own allocation: no kernel reads it now
        // (the slot's previous frame is proven done, and this is the frame's only launch), and
        // no Rust reference to it exists. Written through the raw pointer only.
        unsafe {
            job.write(crate::typed::pipeline::KernelJob {
                input: self.input_ptr().cast(),
                output: self.output_ptr().cast(),
                len: self.input_len().min(self.output_len()),
                f,
                panicked: false,
            })
        };
        let buffers = [self.input_ptr().cast_mut(), self.output_ptr()];
        // SAFETY: the stream is live and its context current (bound by `submit`); both
        // buffers are the slot's device memory, which the pipeline hands to nothing else until
        // the frame is proven done (M3); `run_slot_map::<I, O>` matches the job's type and
        // only reads it.
        let code = unsafe {
            launch_kernel(
                self.raw_stream(),
                micros,
                Some(run_slot_map::<I, O>),
                job.cast::<c_void>(),
                buffers.as_ptr(),
                buffers.len(),
            )
        };
        if code != 0 {
            return Err(self.kernel_refused(code));
        }
        Ok(())
    }

    /// The runtime refused the frame's kernel: the frame may launch one again.
    #[cold]
    #[inline(never)]
    fn kernel_refused(&self, code: i32) -> Error {
        self.launched.set(false);
        let code = crate::AclError::from_code(code);
        Error::Runtime {
            call: "aclsimLaunchKernel",
            code,
            message: crate::result::RuntimeMessage::recent(self.api(), code),
        }
    }
}

/// The simulator calls this once, on the stream's worker, when the stream reaches the task.
unsafe extern "C" fn run_slot_map<I: Pod, O: Pod>(
    user_data: *mut c_void,
    _b: *const *mut c_void,
    _n: usize,
) {
    let job = user_data.cast::<crate::typed::pipeline::KernelJob<I, O>>();
    // SAFETY: `user_data` is the slot's `KernelJob<I, O>`, written before the launch and not
    // again before the frame is proven done; copied out, not referenced.
    let crate::typed::pipeline::KernelJob {
        input,
        output,
        len,
        f,
        ..
    } = unsafe { job.read() };
    if run_elementwise(input, output, len, f) {
        // SAFETY: as above; the host reads the flag only once the frame is proven done (the
        // runtime's synchronisation orders this write before it).
        unsafe { (*job).panicked = true };
    }
}

/// A synthetic kernel's work: `output[i] = f(input[i])`.
struct MapJob<T> {
    input: *const T,
    output: *mut T,
    len: usize,
    f: fn(T) -> T,
}

/// The simulator calls this once, on the stream's worker, when the stream reaches the task.
unsafe extern "C" fn run_map<T: Pod>(user_data: *mut c_void, _b: *const *mut c_void, _n: usize) {
    // SAFETY: `user_data` is the `MapJob<T>` boxed by `simulated_map`, run once.
    let job = unsafe { Box::from_raw(user_data.cast::<MapJob<T>>()) };
    // A panic is reported by `run_elementwise`; the scope's caller sees it there.
    let _ = run_elementwise(job.input, job.output, job.len, job.f);
}

/// `output[i] = f(input[i])` for `i < len`, on the simulator's thread. Returns whether `f`
/// panicked (the output is then incomplete; the panic is reported).
///
/// Both ranges are device memory of at least `len` elements that no one else touches until
/// the task that runs this is proven done (an async scope's borrow, or a pipeline slot, M3).
fn run_elementwise<I: Pod, O: Pod>(
    input: *const I,
    output: *mut O,
    len: usize,
    f: fn(I) -> O,
) -> bool {
    // The function runs on the runtime's own thread, like a callback: C8 for every entry
    // point of the crate it might reach through a `static`.
    let previous = crate::typed::handle::enter_callback();
    let run = || {
        for i in 0..len {
            // SAFETY: see above: both ranges are valid for `len` elements and used by this
            // task alone; unaligned access keeps any `Pod` valid.
            let from = unsafe { input.add(i) };
            // SAFETY: as above.
            let to = unsafe { output.add(i) };
            // SAFETY: as above.
            let value = unsafe { from.read_unaligned() };
            // SAFETY: as above.
            unsafe { to.write_unaligned(f(value)) };
        }
    };
    // Never unwind into the simulator's C ABI.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
    let panicked = outcome.is_err();
    if let Err(panic) = outcome {
        let first = crate::typed::callback::panic_message(panic.as_ref());
        // Not dropped: a payload whose own `Drop` panics would unwind into C (abort).
        std::mem::forget(panic);
        // Reported, never lost (the output is then partly written); still marked as a
        // callback, so that the handler cannot reach the runtime from this thread (C8).
        report_drop_error(
            "a simulated kernel's function (it panicked; its output is incomplete)",
            Err(Error::CallbackPanicked {
                count: 1,
                first: first.into(),
            }),
        );
    }
    crate::typed::handle::leave_callback(previous);
    panicked
}

/// A synthetic kernel body of the simulator (`aclsimKernelFn`).
type SimKernelFn = unsafe extern "C" fn(*mut c_void, *const *mut c_void, usize);

/// `aclsimLaunchKernel`.
pub(crate) type LaunchKernelFn = unsafe extern "C" fn(
    aclrtStream,
    u64,
    Option<SimKernelFn>,
    *mut c_void,
    *const *mut c_void,
    usize,
) -> aclError;

/// The simulator's extension API (`sim/include/aclsim.h`), resolved when the loaded library
/// is the simulator. The vendor runtime has none of these symbols.
#[allow(non_snake_case)]
#[derive(Clone, Copy)]
pub(crate) struct SimulatorTable {
    /// `aclsimApiVersion`.
    pub aclsimApiVersion: unsafe extern "C" fn() -> u32,
    /// `aclsimLaunchKernel`.
    pub aclsimLaunchKernel: LaunchKernelFn,
    /// `aclsimFindingCount`.
    pub aclsimFindingCount: unsafe extern "C" fn() -> usize,
    /// `aclsimGetFinding`.
    pub aclsimGetFinding:
        unsafe extern "C" fn(usize, *mut c_char, usize, *mut c_char, usize) -> aclError,
    /// `aclsimClearFindings`.
    pub aclsimClearFindings: unsafe extern "C" fn(),
    /// `aclsimLiveObjectCount`.
    pub aclsimLiveObjectCount: unsafe extern "C" fn() -> usize,
    /// `aclsimInjectFaultAt` (`None` in simulator builds that predate it).
    pub aclsimInjectFaultAt:
        Option<unsafe extern "C" fn(*const c_char, aclError, u32, u32) -> aclError>,
    /// `aclsimClearFaults` (`None` in simulator builds that predate it).
    pub aclsimClearFaults: Option<unsafe extern "C" fn()>,
    /// `aclsimCallCount` (`None` in simulator builds that predate it).
    pub aclsimCallCount: Option<unsafe extern "C" fn(*const c_char) -> u64>,
    /// `aclsimResetCallCounts` (`None` in simulator builds that predate it).
    pub aclsimResetCallCounts: Option<unsafe extern "C" fn()>,
    /// `aclsimSetQuiet` (`None` in simulator builds that predate it).
    pub aclsimSetQuiet: Option<unsafe extern "C" fn(i32) -> i32>,
}

impl SimulatorTable {
    /// The simulator's extension API in the library `api` was loaded from, if it is the
    /// simulator (the vendor runtime has none of these symbols).
    pub(crate) fn of(api: &Api) -> Option<SimulatorTable> {
        // SAFETY: a library exporting the `aclsim*` names is the simulator, whose symbols
        // have the prototypes of sim/include/aclsim.h; the library is never unloaded.
        unsafe { SimulatorTable::resolve(api.library()) }
    }

    /// `aclsimLaunchKernel` of the library `api` was loaded from, if it is the simulator:
    /// resolved once for the process's first runtime library and kept (per-launch paths must
    /// not look symbols up, a `dlsym` each, nor copy the whole table).
    #[inline]
    pub(crate) fn launch_kernel_of(api: &Api) -> Option<LaunchKernelFn> {
        static CACHE: std::sync::OnceLock<(usize, Option<LaunchKernelFn>)> =
            std::sync::OnceLock::new();
        let key = std::ptr::from_ref(api.library()) as usize;
        let (cached_key, launch) =
            CACHE.get_or_init(|| (key, SimulatorTable::of(api).map(|t| t.aclsimLaunchKernel)));
        if *cached_key == key {
            *launch
        } else {
            SimulatorTable::of(api).map(|t| t.aclsimLaunchKernel)
        }
    }

    /// # Safety
    /// If `library` exports these names, they have the prototypes of `aclsim.h`.
    unsafe fn resolve(library: &libloading::Library) -> Option<SimulatorTable> {
        macro_rules! get {
            ($name:ident) => {
                // SAFETY: the caller's contract; the table lives beside the library.
                *unsafe { library.get(concat!(stringify!($name), "\0").as_bytes()) }.ok()?
            };
        }
        // Newer extensions: a simulator without them is still recognised.
        macro_rules! optional {
            ($name:ident) => {
                // SAFETY: as above.
                unsafe { library.get(concat!(stringify!($name), "\0").as_bytes()) }
                    .ok()
                    .map(|symbol| *symbol)
            };
        }
        Some(SimulatorTable {
            aclsimApiVersion: get!(aclsimApiVersion),
            aclsimLaunchKernel: get!(aclsimLaunchKernel),
            aclsimFindingCount: get!(aclsimFindingCount),
            aclsimGetFinding: get!(aclsimGetFinding),
            aclsimClearFindings: get!(aclsimClearFindings),
            aclsimLiveObjectCount: get!(aclsimLiveObjectCount),
            aclsimInjectFaultAt: optional!(aclsimInjectFaultAt),
            aclsimClearFaults: optional!(aclsimClearFaults),
            aclsimCallCount: optional!(aclsimCallCount),
            aclsimResetCallCounts: optional!(aclsimResetCallCounts),
            aclsimSetQuiet: optional!(aclsimSetQuiet),
        })
    }
}

mod model;
pub use model::{SimDtype, SimModel};
