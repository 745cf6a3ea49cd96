//! The error model.

use std::fmt;

use crate::result::RuntimeMessage;
use std::path::PathBuf;

use crate::typed::dtype::DataType;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

macro_rules! acl_error_codes {
    ($( $(#[$meta:meta])* $variant:ident = $code:literal, $c_name:literal, $desc:literal; )*) => {
        /// A non-zero `aclError` returned by the runtime.
        ///
        /// Each named variant is one code of `protocol.md` ("Error codes"); a code the crate
        /// does not know is kept, unchanged, in [`AclError::Unknown`], so that nothing the
        /// runtime says is lost.
        ///
        /// ```
        /// use ascend_typestate::AclError;
        /// let e = AclError::from_code(107003);
        /// assert_eq!(e, AclError::RtStreamContext);
        /// assert_eq!(e.c_name(), "ACL_ERROR_RT_STREAM_CONTEXT");
        /// assert_eq!(AclError::from_code(123).code(), 123);
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum AclError {
            $(
                #[doc = concat!("`", $c_name, "` (", stringify!($code), "): ", $desc, ".")]
                $(#[$meta])*
                $variant,
            )*
            /// A code that is not in `protocol.md`'s list, carried intact.
            Unknown(i32),
        }

        impl AclError {
            /// Every named variant, in the order of `protocol.md`.
            pub const ALL: &'static [AclError] = &[$(AclError::$variant),*];

            /// The error for a raw non-zero code. `0` (`ACL_SUCCESS`) is not an error and
            /// maps to `Unknown(0)`; use [`AclError::check`] to turn a raw return value into a `Result`.
            pub const fn from_code(code: i32) -> Self {
                match code {
                    $($code => AclError::$variant,)*
                    other => AclError::Unknown(other),
                }
            }

            /// The numeric `aclError` value.
            pub const fn code(self) -> i32 {
                match self {
                    $(AclError::$variant => $code,)*
                    AclError::Unknown(code) => code,
                }
            }

            /// The C macro name, e.g. `"ACL_ERROR_RT_STREAM_CONTEXT"`; `"unknown"` for
            /// [`AclError::Unknown`].
            pub const fn c_name(self) -> &'static str {
                match self {
                    $(AclError::$variant => $c_name,)*
                    AclError::Unknown(_) => "unknown",
                }
            }

            /// One line of English saying what the code means.
            pub const fn description(self) -> &'static str {
                match self {
                    $(AclError::$variant => $desc,)*
                    AclError::Unknown(_) => "an error code this crate does not know",
                }
            }
        }
    };
}

acl_error_codes! {
    InvalidParam = 100000, "ACL_ERROR_INVALID_PARAM", "an argument is invalid";
    Uninitialize = 100001, "ACL_ERROR_UNINITIALIZE", "aclInit has not been called (P1)";
    RepeatInitialize = 100002, "ACL_ERROR_REPEAT_INITIALIZE", "aclInit was called twice (P2)";
    RepeatSubscribe = 100033, "ACL_ERROR_REPEAT_SUBSCRIBE", "the subscription already exists";
    RepeatFinalize = 100037, "ACL_ERROR_REPEAT_FINALIZE", "aclFinalize was called twice (P2)";
    InvalidModelId = 100011, "ACL_ERROR_INVALID_MODEL_ID", "the model id is invalid (not loaded, or unloaded)";
    DeserializeModel = 100012, "ACL_ERROR_DESERIALIZE_MODEL", "the model could not be deserialized";
    ParseModel = 100013, "ACL_ERROR_PARSE_MODEL", "the model could not be parsed (not a model for this runtime or SoC)";
    ReadModelFailure = 100014, "ACL_ERROR_READ_MODEL_FAILURE", "the model file could not be read";
    ModelSizeInvalid = 100015, "ACL_ERROR_MODEL_SIZE_INVALID", "the model size is invalid";
    ModelMissingAttr = 100016, "ACL_ERROR_MODEL_MISSING_ATTR", "the model lacks an attribute";
    ModelInputNotMatch = 100017, "ACL_ERROR_MODEL_INPUT_NOT_MATCH", "the input dataset does not match the model (MD10)";
    ModelOutputNotMatch = 100018, "ACL_ERROR_MODEL_OUTPUT_NOT_MATCH", "the output dataset does not match the model (MD10)";
    ModelNotDynamic = 100019, "ACL_ERROR_MODEL_NOT_DYNAMIC", "the model has no dynamic batch or size (MD11)";
    ResourceNotMatch = 200004, "ACL_ERROR_RESOURCE_NOT_MATCH", "a resource does not match";
    RtModelContext = 107004, "ACL_ERROR_RT_MODEL_CONTEXT", "the model is used outside the context it was loaded in (MD1)";
    RtStreamModel = 107005, "ACL_ERROR_RT_STREAM_MODEL", "the stream does not suit the model";
    RtModelRunning = 107037, "ACL_ERROR_RT_MODEL_RUNNING", "the model has an execution pending (MD7)";
    RtNoModelResource = 207010, "ACL_ERROR_RT_NO_MODEL_RESOURCE", "out of model resources";
    RtModelExecute = 507011, "ACL_ERROR_RT_MODEL_EXECUTE", "the model execution failed";
    BadAlloc = 200000, "ACL_ERROR_BAD_ALLOC", "memory allocation failed";
    ApiNotSupport = 200001, "ACL_ERROR_API_NOT_SUPPORT", "the API is not supported";
    InvalidResourceHandle = 200005, "ACL_ERROR_INVALID_RESOURCE_HANDLE", "a resource handle is invalid";
    FeatureUnsupported = 200006, "ACL_ERROR_FEATURE_UNSUPPORTED", "the feature is not supported";
    InternalError = 500000, "ACL_ERROR_INTERNAL_ERROR", "internal error";
    Failure = 500001, "ACL_ERROR_FAILURE", "the operation failed";
    RtParamInvalid = 107000, "ACL_ERROR_RT_PARAM_INVALID", "a runtime parameter is invalid";
    RtInvalidDeviceId = 107001, "ACL_ERROR_RT_INVALID_DEVICEID", "the device id is invalid (D1)";
    RtContextNull = 107002, "ACL_ERROR_RT_CONTEXT_NULL", "no current context on this thread, or the default context was destroyed (D2, D5)";
    RtStreamContext = 107003, "ACL_ERROR_RT_STREAM_CONTEXT", "the stream is not in the calling thread's current context (D6)";
    RtStreamSubscribe = 107011, "ACL_ERROR_RT_STREAM_SUBSCRIBE", "the stream is already subscribed, or not subscribed (C2, C9)";
    RtThreadSubscribe = 107012, "ACL_ERROR_RT_THREAD_SUBSCRIBE", "the thread is not subscribed, or subscribed on another device (C3, C6, C9)";
    RtStreamNoCbReg = 107015, "ACL_ERROR_RT_STREAM_NO_CB_REG", "no thread is subscribed to the stream (C5)";
    RtWaitTimeout = 107019, "ACL_ERROR_RT_WAIT_TIMEOUT", "a wait timed out (P3)";
    RtTaskTimeout = 107020, "ACL_ERROR_RT_TASK_TIMEOUT", "a task ran longer than the operator execution timeout (P5)";
    RtStreamAbort = 107023, "ACL_ERROR_RT_STREAM_ABORT", "the stream's context stopped after a failed task (S6: stop on failure)";
    RtFeatureNotSupport = 207000, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT", "the feature is not supported, e.g. waiting on an event without ACL_EVENT_SYNC (E7)";
    RtMemoryAllocation = 207001, "ACL_ERROR_RT_MEMORY_ALLOCATION", "device memory allocation failed";
    RtNoDevice = 207004, "ACL_ERROR_RT_NO_DEVICE", "no device is available";
    RtNoEventResource = 207007, "ACL_ERROR_RT_NO_EVENT_RESOURCE", "out of event resources (E4)";
    RtNoStreamResource = 207008, "ACL_ERROR_RT_NO_STREAM_RESOURCE", "out of stream resources";
    RtInternalError = 507000, "ACL_ERROR_RT_INTERNAL_ERROR", "runtime internal error, e.g. elapsed time of an incomplete event (E8)";
    RtStreamNotComplete = 507004, "ACL_ERROR_RT_STREAM_NOT_COMPLETE", "the stream's tasks are not complete";
    RtEventNotComplete = 507006, "ACL_ERROR_RT_EVENT_NOT_COMPLETE", "the event is not complete";
    RtContextReleaseError = 507007, "ACL_ERROR_RT_CONTEXT_RELEASE_ERROR", "releasing the context or device failed, e.g. resetting a device that is not set (D5)";
    RtReportTimeout = 507012, "ACL_ERROR_RT_REPORT_TIMEOUT", "aclrtProcessReport timed out with no callback to run (C6)";
    RtStreamSyncTimeout = 507046, "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT", "stream synchronization timed out (S3)";
    RtEventSyncTimeout = 507047, "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT", "event synchronization timed out (E6)";
}

impl fmt::Display for AclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.c_name(),
            self.code(),
            self.description()
        )
    }
}

impl std::error::Error for AclError {}

impl AclError {
    /// Turns a raw `aclError` into a `Result`: `0` is success, anything else an [`AclError`].
    ///
    /// ```
    /// use ascend_typestate::AclError;
    /// assert_eq!(AclError::check(0), Ok(()));
    /// assert_eq!(AclError::check(100001), Err(AclError::Uninitialize));
    /// ```
    #[inline(always)]
    pub const fn check(code: i32) -> Result<(), AclError> {
        check(code)
    }
}

/// [`AclError::check`], for this crate's own callers.
#[inline(always)]
pub(crate) const fn check(code: i32) -> Result<(), AclError> {
    if code == 0 {
        Ok(())
    } else {
        Err(AclError::from_code(code))
    }
}

/// One place the loader looked for the runtime library, and why it did not use it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriedPath {
    /// The path or bare library name that was tried.
    pub path: PathBuf,
    /// Where this candidate came from (e.g. `"ASCEND_ACL_LIB"`, `"$ASCEND_HOME_PATH"`).
    pub source: &'static str,
    /// Why it was not used: "does not exist", a pre-check's reason (see
    /// [the loader's pre-checks](crate::sys::loader#pre-checks)), or what the dynamic loader
    /// answered.
    pub reason: String,
}

/// The runtime library could not be loaded; nothing was called.
///
/// `Display` and `Debug` print the same short, multi-line message (what was tried, the first
/// reason, and how to fix it), so that `main() -> Result<(), Error>` reads well:
///
/// ```
/// use ascend_typestate::{LoadError, TriedPath};
/// let e = LoadError::NotFound {
///     tried: vec![TriedPath {
///         path: "libascendcl.so".into(),
///         source: "system loader",
///         reason: "libascendcl.so: cannot open shared object file".into(),
///     }],
/// };
/// let shown = format!("{e:?}");
/// assert!(shown.lines().count() > 3);
/// assert!(shown.contains("ASCEND_ACL_LIB") && shown.contains("ascendcl-sim"));
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// No candidate could be opened. `tried` lists every candidate, in search order.
    #[error("{}", format_not_found(.tried))]
    NotFound {
        /// Every candidate, in search order, with the loader's answer.
        tried: Vec<TriedPath>,
    },
    /// The library was opened but lacks a symbol this crate requires.
    #[error(
        "cannot use {library} as the AscendCL runtime: it lacks the required symbol \
         `{symbol}` ({reason})\n{FIX}"
    )]
    MissingSymbol {
        /// The library that was opened.
        library: PathBuf,
        /// The missing symbol.
        symbol: &'static str,
        /// What `dlsym` answered.
        reason: String,
    },
    /// The process-wide runtime was already loaded from another library.
    #[error(
        "the AscendCL runtime is already loaded from {loaded}; this process cannot switch \
         to {requested} (the library stays loaded for the life of the process)"
    )]
    AlreadyLoaded {
        /// The library in use.
        loaded: PathBuf,
        /// The library that was asked for.
        requested: PathBuf,
    },
    /// Strict loading ([`LoadOptions::strict`](crate::sys::loader::LoadOptions::strict))
    /// was given a path that is not absolute: a relative path depends on the working
    /// directory and a bare name on the system loader's search, so neither names one file.
    #[error(
        "strict loading needs an absolute path to the runtime library, got `{}`",
        .path.display()
    )]
    NotAbsolute {
        /// The path given.
        path: PathBuf,
    },
    /// Strict loading opened the requested file, but the runtime's functions are defined
    /// in another file (the requested one is a stub or forwards to another library).
    #[error(
        "strict loading: {requested} was opened, but `{symbol}` is defined in {resolved}: \
         the runtime's functions must all come from the file asked for"
    )]
    ResolvedElsewhere {
        /// The file asked for (after resolving links).
        requested: PathBuf,
        /// A function defined elsewhere (`aclInit` when the file is not the one loaded).
        symbol: &'static str,
        /// Where it is defined.
        resolved: PathBuf,
    },
}

/// Debug prints the readable message: it is what `main() -> Result<(), Error>` shows.
impl fmt::Debug for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The ways out of a failed load, shared by the messages above.
const FIX: &str = "to fix it:
  - on an Ascend machine: `source /usr/local/Ascend/ascend-toolkit/set_env.sh`, or set
    ASCEND_ACL_LIB=/absolute/path/to/libascendcl.so
  - without an NPU, use the simulator: add `ascendcl-sim` to [dev-dependencies], and tests,
    examples and benches load it; for any other program set ASCEND_ACL_LIB to the absolute
    path of <target>/<profile>/deps/libascendcl.so (built by `cargo test`)";

/// Whether the loader's answer only says the file is absent (the common, dull case).
fn is_absent(t: &TriedPath) -> bool {
    t.reason == "does not exist"
}

fn format_not_found(tried: &[TriedPath]) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("cannot load the AscendCL runtime library (libascendcl.so)\n");
    // The first answer that says more than "absent" is usually the cause (a library that
    // exists but lacks a dependency, or has the wrong architecture).
    let first = tried.iter().find(|t| !is_absent(t)).or(tried.first());
    match (tried, first) {
        ([only], _) if only.source == "ASCEND_ACL_LIB" => {
            let _ = writeln!(
                out,
                "  ASCEND_ACL_LIB={} was not loaded: {}\n  \
                 (an explicit choice is never replaced by another library: correct or unset it)",
                only.path.display(),
                only.reason
            );
        }
        ([only], _) if only.source == "caller" || only.source == "strict" => {
            let _ = write!(
                out,
                "  the program asked for {} [{}]: {}\n  \
                 (the program's own choice: ASCEND_ACL_LIB and the search order are not used)",
                only.path.display(),
                only.source,
                only.reason
            );
            return out;
        }
        (_, Some(first)) => {
            let _ = writeln!(
                out,
                "  first reason: {} [{}]: {}",
                first.path.display(),
                first.source,
                first.reason
            );
            let _ = writeln!(out, "  tried, in order:");
            for t in tried {
                let _ = writeln!(out, "    {} [{}]: {}", t.path.display(), t.source, t.reason);
            }
        }
        (_, None) => {
            let _ = writeln!(out, "  no candidate to try");
        }
    }
    out.push_str(FIX);
    out
}

/// Every failure of this crate.
///
/// ```
/// use ascend_typestate::{AclError, Error};
/// let e = Error::Runtime { call: "aclrtRecordEvent", code: AclError::RtStreamContext, message: None };
/// assert_eq!(e.code(), Some(AclError::RtStreamContext));
/// assert!(e.to_string().starts_with("aclrtRecordEvent failed: ACL_ERROR_RT_STREAM_CONTEXT (107003)"));
/// ```
///
/// Three kinds of failure are kept apart, because a user reacts to each differently:
///
/// * [`AclError`]: a code returned by the runtime (`aclError`). Every code listed in
///   `protocol.md` is a named variant carrying its C name, numeric value and a one-line
///   description; any other code is carried intact in [`AclError::Unknown`].
/// * [`LoadError`]: the runtime library could not be loaded (not found, or a required symbol
///   missing). Nothing was called.
/// * The other variants of [`Error`]: conditions this crate detects itself, before a call
///   reaches the runtime (an optional symbol the loaded runtime lacks, a second live
///   [`Acl`](crate::Acl), ...).
///
/// `Debug` shows the variant and its fields, except for [`Error::Load`], whose `Debug` is
/// the readable multi-line message of [`LoadError`] (what `main` prints).
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A runtime call returned a non-zero code.
    #[error("{call} failed: {code}{}", RuntimeMessage::suffix(message))]
    Runtime {
        /// The C function that failed.
        call: &'static str,
        /// What it returned.
        code: AclError,
        /// The runtime's own explanation (`aclGetRecentErrMsg`), when it kept one: read on
        /// the failing thread right after the failure (so
        /// [`Acl::recent_error_message`](crate::Acl::recent_error_message) finds it taken).
        message: Option<RuntimeMessage>,
    },
    /// The runtime library could not be loaded (boxed: it is rare and large, and keeping
    /// `Error` small keeps every `Result` of the hot path small).
    #[error(transparent)]
    Load(Box<LoadError>),
    /// The loaded runtime lacks an optional (newer) function.
    #[error("the loaded runtime does not provide `{symbol}` (a newer AscendCL function)")]
    Unsupported {
        /// The missing symbol.
        symbol: &'static str,
    },
    /// `Acl::init` while another `Acl` is alive in this process, or [`Acl::shared`] while
    /// an owned one is (P2).
    ///
    /// [`Acl::shared`]: crate::Acl::shared
    #[error(
        "the runtime is already initialised in this process (P2): a process uses either \
         one owned `Acl` at a time (`Acl::init`) or the shared one (`Acl::shared()`, for \
         parallel tests and threads), not both"
    )]
    AlreadyInitialized,
    /// A value was rejected before any runtime call (the message says which and why).
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// A context cannot be destroyed while handles created in it are alive, nor a device
    /// reset while contexts created on it are. Borrows make this impossible in safe code
    /// unless a handle was leaked (`mem::forget`); the context or device is then kept (leaked
    /// too) rather than destroyed under it (D3).
    #[error(
        "{count} handle(s) created in it are still alive (leaked?); not destroying it \
         (D3: a parent is released only after everything created in it)"
    )]
    LiveChildren {
        /// How many are alive: streams, events, buffers and report threads of a context;
        /// contexts of a device.
        count: usize,
    },
    /// More report threads than the runtime allows per process (C4: 1024 on Atlas 200/500
    /// A2; 32 or fewer is recommended).
    #[error("too many report threads: the limit is {limit} per process (C4: the runtime's limit)")]
    TooManyReportThreads {
        /// The limit.
        limit: usize,
    },
    /// Host callbacks panicked (caught at the FFI boundary, never unwound into C).
    #[error("{count} host callback(s) panicked; first: {first}")]
    CallbackPanicked {
        /// How many panicked since the last report.
        count: usize,
        /// The first panic's message.
        first: Box<str>,
    },
    /// A runtime call from inside a host callback (C8: it could deadlock the runtime).
    #[error(
        "runtime call from inside a host callback (C8: a callback must not synchronise, \
         allocate, free or launch; it could deadlock the runtime)"
    )]
    InsideCallback,
    /// The report thread is not running callbacks: it could not be started, or its loop
    /// ended (also used to count `aclrtProcessReport` failures beyond those kept).
    #[error("the report thread has stopped: {0}")]
    ReportThreadStopped(String),
    /// The report thread's `aclrtProcessReport` kept failing while callbacks waited: they
    /// cannot run (C6), so `unsubscribe` stopped waiting for them. The subscription is
    /// given back; try again once the runtime recovers.
    #[error(
        "aclrtProcessReport failed {failures} times in a row: {pending} callback(s) cannot run \
         (C6: callbacks run only when their report thread processes them)"
    )]
    ReportThreadFailing {
        /// Failures in a row seen while waiting.
        failures: usize,
        /// Callbacks still waiting to run.
        pending: usize,
    },
    /// A handle used with one of another context of the same device: a stream with an event
    /// or an async scope, a pending result in a scope. The typed API keeps each event and
    /// scope to the streams of its own context, so one binding serves every call (D6) and
    /// every task can be ordered (E5, E9, M1).
    #[error("context mismatch: {what} belongs to another context of the same device")]
    ContextMismatch {
        /// What was checked.
        what: &'static str,
    },
    /// The default context of this device is held by another [`Device`](crate::Device)
    /// value (one at a time: [`Device::into_default_context`](crate::Device::into_default_context)).
    #[error(
        "the default context of device {device} is already held by another Device value \
         (release_default_context or reset it first), or by one that was leaked or whose \
         reset failed and was dropped"
    )]
    DefaultContextInUse {
        /// The device id.
        device: i32,
    },
    /// Work that must be complete is not yet: e.g. [`Event::reset_completed`] on an event
    /// whose record is still pending (synchronise it first).
    ///
    /// [`Event::reset_completed`]: crate::Event::reset_completed
    #[error(
        "{what} is not complete yet: synchronise it first (E10: only a completed record \
         may be reset and recorded again)"
    )]
    NotComplete {
        /// What was checked.
        what: &'static str,
    },
    /// Two handles belong to different devices where one device is required.
    #[error("device mismatch: {what} belongs to device {found}, expected device {expected}")]
    DeviceMismatch {
        /// What was checked.
        what: &'static str,
        /// The device required.
        expected: i32,
        /// The device found.
        found: i32,
    },
    /// A model cannot be unloaded, or executed on another stream or synchronously, while
    /// executions of it are pending on a stream (MD7, MD8): wait for the frames that use it
    /// ([`Pipeline::next_slot`](crate::Pipeline::next_slot),
    /// [`Pipeline::wait_all`](crate::Pipeline::wait_all)) first. A model *dropped* in this
    /// state is unloaded once its pipeline proves them done, never under them.
    #[error(
        "{pending} execution(s) of the model are pending on a stream (MD7, MD8): wait for them first"
    )]
    ModelInUse {
        /// Executions issued and not yet proven done.
        pending: usize,
    },
    /// A buffer's size does not match the model's description of that input or output
    /// (MD10): sizes come from the description.
    #[error("model I/O size mismatch (MD10): the model describes {expected} bytes, found {found}")]
    ModelSizeMismatch {
        /// The size in the description, in bytes.
        expected: usize,
        /// The size given, in bytes.
        found: usize,
    },
    /// An asynchronous execution ([`AsyncScope::execute`](crate::AsyncScope::execute)) was
    /// given another number of data inputs or outputs than the model has (MD10): one buffer
    /// per tensor, in the model's order (a dynamic model's batch input excluded).
    #[error(
        "the model has {expected} data {what}; {found} were given (MD10: one buffer per tensor)"
    )]
    ModelTensorCount {
        /// `"inputs"` or `"outputs"`.
        what: &'static str,
        /// The model's count.
        expected: u32,
        /// The count given.
        found: u32,
    },
    /// A batch size that is not one of the model's compiled gears (MD11).
    #[error("batch {batch} is not one of the model's gears (MD11: the gears it was compiled with)")]
    NotAGear {
        /// The batch asked for.
        batch: u64,
    },
    /// A model loaded as the wrong kind: one with dynamic batch gears must be loaded with
    /// [`Context::load_dynamic_model`](crate::Context::load_dynamic_model) (every execution
    /// names a gear, MD11), one with fixed shapes with
    /// [`Context::load_model`](crate::Context::load_model). Models with dynamic image sizes
    /// or dimensions (no batch gears) are not supported.
    #[error("{0}")]
    WrongModelKind(&'static str),
    /// A host view of device memory exists only in device run mode (on the board itself,
    /// where host and device memory are one); in host run mode, copy it.
    #[error("device memory can be read in place only in device run mode (on the board); copy it")]
    NotInDeviceRunMode,
    /// A query of the model's description gave its failure answer, its only way of failing
    /// (0 for a count or a size, `ACL_DT_UNDEFINED` / `ACL_FORMAT_UNDEFINED` for an element
    /// type or a layout): the query failed, or the model has something this crate does not
    /// run (no inputs or outputs, a tensor whose size is known only at execution, MD10, or
    /// one without an element type, MD13). Either way the model is not loaded.
    #[error(
        "`{call}` answered {}, its failure answer: the query failed, or the model has no such tensors, one of unknown size (MD10) or one without a type (MD13)",
        failure_answer(call)
    )]
    UnreadableDescription {
        /// The query that gave it.
        call: &'static str,
    },
    /// A model's input or output read or written as another element type than its
    /// description's (MD13): the bytes would be reinterpreted (an `i32` output read as `f32`
    /// gives plausible garbage), so the access is refused before anything runs. Use the
    /// [`Element`](crate::Element) type of [`TensorDesc::data_type`](crate::TensorDesc::data_type).
    #[error(
        "model element type mismatch (MD13): {tensor} of the model is {expected}, accessed as {found}"
    )]
    ModelTypeMismatch {
        /// Which tensor.
        tensor: ModelTensor,
        /// Its type in the model's description.
        expected: DataType,
        /// The element type it was read or written as.
        found: DataType,
    },
    /// A model file that cannot be what the runtime reads: not found, not a regular file
    /// (a FIFO or device would block or never end, a directory is no model), or unreadable.
    /// Checked before the runtime is called.
    #[error("model file {}: {why}", .path.display())]
    ModelFile {
        /// The path given.
        path: Box<std::path::Path>,
        /// What is wrong with it.
        why: ModelFileProblem,
    },
    /// The configuration file given to
    /// [`InitOptions::config`](crate::InitOptions::config) cannot be what `aclInit` reads:
    /// not found, not a regular file (a FIFO or device would block the runtime's reader or
    /// never end, a directory is no configuration), or unreadable. Checked right before
    /// `aclInit`, which is then not called.
    #[error("configuration file {}: {why}", .path.display())]
    ConfigFile {
        /// The path given.
        path: Box<std::path::Path>,
        /// What is wrong with it.
        why: ModelFileProblem,
    },
}

/// What description query `call` answers when it fails ([`Error::UnreadableDescription`]).
fn failure_answer(call: &str) -> &'static str {
    if call.ends_with("DataType") {
        "ACL_DT_UNDEFINED"
    } else if call.ends_with("Format") {
        "ACL_FORMAT_UNDEFINED"
    } else {
        "0"
    }
}

/// One input or output of a model, by its index in the model's order
/// ([`Model::inputs`](crate::Model::inputs), [`Model::outputs`](crate::Model::outputs)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelTensor {
    /// Input `n`.
    Input(u32),
    /// Output `n`.
    Output(u32),
}

impl ModelTensor {
    /// Input `index` (saturated at `u32::MAX`, far beyond any model).
    pub(crate) fn input(index: usize) -> ModelTensor {
        ModelTensor::Input(u32::try_from(index).unwrap_or(u32::MAX))
    }

    /// Output `index` (saturated likewise).
    pub(crate) fn output(index: usize) -> ModelTensor {
        ModelTensor::Output(u32::try_from(index).unwrap_or(u32::MAX))
    }
}

impl fmt::Display for ModelTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelTensor::Input(n) => write!(f, "input {n}"),
            ModelTensor::Output(n) => write!(f, "output {n}"),
        }
    }
}

/// What is wrong with a file the runtime would read: a model ([`Error::ModelFile`]) or the
/// configuration ([`Error::ConfigFile`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ModelFileProblem {
    /// Nothing at that path.
    #[error("no such file")]
    NotFound,
    /// The process may not read it.
    #[error("permission denied")]
    PermissionDenied,
    /// Its metadata cannot be read (another I/O error).
    #[error("cannot be read")]
    Unreadable,
    /// A directory.
    #[error("a directory, not a file")]
    Directory,
    /// A FIFO, socket or device: the runtime would block reading it or never reach its end.
    #[error("not a regular file (a FIFO, socket or device): the runtime would block reading it")]
    NotRegularFile,
    /// The path contains a NUL byte, which the C API cannot take.
    #[error("the path contains a NUL byte")]
    NulByte,
    /// A regular file of size 0: empty, or one whose size says nothing of what it yields
    /// (`/proc`), which the runtime would read without end.
    #[error("an empty file (size 0), not a model")]
    Empty,
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Runtime {
                call,
                code,
                message,
            } => {
                let mut d = f.debug_struct("Runtime");
                d.field("call", call).field("code", code);
                if let Some(message) = message {
                    d.field("message", message);
                }
                d.finish()
            }
            Error::Load(e) => fmt::Debug::fmt(e, f),
            Error::Unsupported { symbol } => f
                .debug_struct("Unsupported")
                .field("symbol", symbol)
                .finish(),
            Error::AlreadyInitialized => f.write_str("AlreadyInitialized"),
            Error::InvalidArgument(what) => f.debug_tuple("InvalidArgument").field(what).finish(),
            Error::LiveChildren { count } => f
                .debug_struct("LiveChildren")
                .field("count", count)
                .finish(),
            Error::TooManyReportThreads { limit } => f
                .debug_struct("TooManyReportThreads")
                .field("limit", limit)
                .finish(),
            Error::CallbackPanicked { count, first } => f
                .debug_struct("CallbackPanicked")
                .field("count", count)
                .field("first", first)
                .finish(),
            Error::InsideCallback => f.write_str("InsideCallback"),
            Error::ReportThreadStopped(why) => {
                f.debug_tuple("ReportThreadStopped").field(why).finish()
            }
            Error::ReportThreadFailing { failures, pending } => f
                .debug_struct("ReportThreadFailing")
                .field("failures", failures)
                .field("pending", pending)
                .finish(),
            Error::ContextMismatch { what } => f
                .debug_struct("ContextMismatch")
                .field("what", what)
                .finish(),
            Error::NotComplete { what } => {
                f.debug_struct("NotComplete").field("what", what).finish()
            }
            Error::DefaultContextInUse { device } => f
                .debug_struct("DefaultContextInUse")
                .field("device", device)
                .finish(),
            Error::DeviceMismatch {
                what,
                expected,
                found,
            } => f
                .debug_struct("DeviceMismatch")
                .field("what", what)
                .field("expected", expected)
                .field("found", found)
                .finish(),
            Error::ModelInUse { pending } => f
                .debug_struct("ModelInUse")
                .field("pending", pending)
                .finish(),
            Error::ModelTensorCount {
                what,
                expected,
                found,
            } => f
                .debug_struct("ModelTensorCount")
                .field("what", what)
                .field("expected", expected)
                .field("found", found)
                .finish(),
            Error::ModelSizeMismatch { expected, found } => f
                .debug_struct("ModelSizeMismatch")
                .field("expected", expected)
                .field("found", found)
                .finish(),
            Error::NotAGear { batch } => f.debug_struct("NotAGear").field("batch", batch).finish(),
            Error::WrongModelKind(why) => f.debug_tuple("WrongModelKind").field(why).finish(),
            Error::NotInDeviceRunMode => f.write_str("NotInDeviceRunMode"),
            Error::UnreadableDescription { call } => f
                .debug_struct("UnreadableDescription")
                .field("call", call)
                .finish(),
            Error::ModelTypeMismatch {
                tensor,
                expected,
                found,
            } => f
                .debug_struct("ModelTypeMismatch")
                .field("tensor", tensor)
                .field("expected", expected)
                .field("found", found)
                .finish(),
            Error::ModelFile { path, why } => f
                .debug_struct("ModelFile")
                .field("path", path)
                .field("why", why)
                .finish(),
            Error::ConfigFile { path, why } => f
                .debug_struct("ConfigFile")
                .field("path", path)
                .field("why", why)
                .finish(),
        }
    }
}

impl From<crate::result::CallError> for Error {
    #[inline]
    fn from(e: crate::result::CallError) -> Error {
        match e {
            crate::result::CallError::Failed { call, code, .. } => runtime_error(e, call, code),
            crate::result::CallError::Unsupported { symbol } => Error::Unsupported { symbol },
            crate::result::CallError::InsideCallback { .. } => Error::InsideCallback,
        }
    }
}

/// [`Error::Runtime`] from a raw failure, with the runtime's explanation kept beside it;
/// out of line, off the usual path.
#[cold]
#[inline(never)]
fn runtime_error(e: crate::result::CallError, call: &'static str, code: AclError) -> Error {
    Error::Runtime {
        call,
        code,
        message: e.take_message(),
    }
}

impl From<LoadError> for Error {
    fn from(e: LoadError) -> Error {
        Error::Load(Box::new(e))
    }
}

impl Error {
    /// The call met a context stopped after a failed task (S6, 107023): no reset can ever be
    /// issued there, and the runtime lets an event be destroyed unreset (E4).
    pub(crate) fn is_stop(&self) -> bool {
        self.code() == Some(AclError::RtStreamAbort)
    }

    /// The runtime code, if this error came from the runtime.
    pub fn code(&self) -> Option<AclError> {
        match self {
            Error::Runtime { code, .. } => Some(*code),
            _ => None,
        }
    }
}
