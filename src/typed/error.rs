//! The error model.

use std::fmt;

use crate::result::RuntimeMessage;
use crate::sys::codes::AclError;
use crate::sys::loader::error::LoadError;

use crate::typed::dtype::DataType;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

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
/// the readable multi-line message of [`LoadError`] (what `main` prints). A variant whose
/// message carries a hint (the rule broken, what to do instead) shows that message too, as
/// a `hint` field: `.expect()` and `{:?}` then say what `Display` says.
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
    /// The host-function thread is not running (C12): it could not be started, or its loop
    /// ended (also used to count `aclrtProcessHostFunc` failures beyond those kept).
    #[error("the host-function thread has stopped: {0}")]
    HostFuncThreadStopped(String),
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
    /// A callback launched while the subscription already holds as many in flight as it was
    /// created for (its slots, allocated at `subscribe`: no launch allocates one): the
    /// closure is dropped, not run. Wait for some to run, or subscribe with a larger
    /// capacity ([`ReportThread::subscribe_with_capacity`](crate::ReportThread::subscribe_with_capacity)).
    #[error(
        "{capacity} callbacks are already in flight on this stream, its subscription's capacity: wait for some to run, or subscribe with a larger capacity"
    )]
    CallbackCapacity {
        /// The subscription's capacity.
        capacity: u32,
    },
    /// A task had to be ordered after another stream's (a join event, E5) while the stream
    /// already has as many joins waiting for its synchronisation as its context allows, and
    /// a query did not find it idle. Nothing was issued. Synchronise the stream (or the
    /// device) more often, or raise the capacity
    /// ([`Context::set_join_capacity`](crate::Context::set_join_capacity)).
    #[error(
        "{capacity} join events already wait for this stream's synchronisation, its context's join capacity: synchronise the stream or the device, or raise the capacity with Context::set_join_capacity"
    )]
    JoinCapacity {
        /// The context's join capacity.
        capacity: u32,
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
    /// A JPEG that JPEGD does not decode (DV7), found in its header before any runtime call:
    /// not a JPEG, progressive, lossless, hierarchical or arithmetic-coded, other than 8-bit
    /// samples, a sampling other than 4:4:4, 4:2:2, 4:2:0, 4:4:0 or gray, or outside 32x32 to
    /// 16384x16384 pixels.
    #[error("unsupported JPEG (DV7): {0}")]
    UnsupportedJpeg(&'static str),
    /// A picture layout the media engine refuses (DV8, DV9): sizes, strides or a frame too
    /// small, found before any runtime call.
    #[error("picture layout: {0}")]
    PictureLayout(&'static str),
    /// The process's media API is taken (DV1): one [`MediaV1`](crate::MediaV1) at a time.
    #[error("the media API is taken (DV1): one media token per process; drop the other first")]
    MediaApiTaken,
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

/// An error's `Display` text, as a `Debug` field: what a variant that carries a hint (a rule
/// broken, what to do instead) shows beside its fields, so that `.expect()` and `{:?}` say it
/// too.
struct Hint<'a>(&'a Error);

impl fmt::Debug for Hint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0.to_string(), f)
    }
}

impl fmt::Debug for Error {
    // Over 100 lines: one arm per variant, each its fields and, where the Display form
    // explains what to do, that text as `hint`.
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
                .field("hint", &Hint(self))
                .finish(),
            Error::AlreadyInitialized => f
                .debug_struct("AlreadyInitialized")
                .field("hint", &Hint(self))
                .finish(),
            Error::InvalidArgument(what) => f.debug_tuple("InvalidArgument").field(what).finish(),
            Error::LiveChildren { count } => f
                .debug_struct("LiveChildren")
                .field("count", count)
                .field("hint", &Hint(self))
                .finish(),
            Error::TooManyReportThreads { limit } => f
                .debug_struct("TooManyReportThreads")
                .field("limit", limit)
                .field("hint", &Hint(self))
                .finish(),
            Error::CallbackPanicked { count, first } => f
                .debug_struct("CallbackPanicked")
                .field("count", count)
                .field("first", first)
                .finish(),
            Error::InsideCallback => f
                .debug_struct("InsideCallback")
                .field("hint", &Hint(self))
                .finish(),
            Error::ReportThreadStopped(why) => {
                f.debug_tuple("ReportThreadStopped").field(why).finish()
            }
            Error::ReportThreadFailing { failures, pending } => f
                .debug_struct("ReportThreadFailing")
                .field("failures", failures)
                .field("pending", pending)
                .field("hint", &Hint(self))
                .finish(),
            Error::HostFuncThreadStopped(why) => {
                f.debug_tuple("HostFuncThreadStopped").field(why).finish()
            }
            Error::ContextMismatch { what } => f
                .debug_struct("ContextMismatch")
                .field("what", what)
                .field("hint", &Hint(self))
                .finish(),
            Error::NotComplete { what } => f
                .debug_struct("NotComplete")
                .field("what", what)
                .field("hint", &Hint(self))
                .finish(),
            Error::DefaultContextInUse { device } => f
                .debug_struct("DefaultContextInUse")
                .field("device", device)
                .field("hint", &Hint(self))
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
                .field("hint", &Hint(self))
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
                .field("hint", &Hint(self))
                .finish(),
            Error::CallbackCapacity { capacity } => f
                .debug_struct("CallbackCapacity")
                .field("capacity", capacity)
                .field("hint", &Hint(self))
                .finish(),
            Error::JoinCapacity { capacity } => f
                .debug_struct("JoinCapacity")
                .field("capacity", capacity)
                .field("hint", &Hint(self))
                .finish(),
            Error::ModelSizeMismatch { expected, found } => f
                .debug_struct("ModelSizeMismatch")
                .field("expected", expected)
                .field("found", found)
                .field("hint", &Hint(self))
                .finish(),
            Error::NotAGear { batch } => f
                .debug_struct("NotAGear")
                .field("batch", batch)
                .field("hint", &Hint(self))
                .finish(),
            Error::WrongModelKind(why) => f.debug_tuple("WrongModelKind").field(why).finish(),
            Error::NotInDeviceRunMode => f
                .debug_struct("NotInDeviceRunMode")
                .field("hint", &Hint(self))
                .finish(),
            Error::UnreadableDescription { call } => f
                .debug_struct("UnreadableDescription")
                .field("call", call)
                .field("hint", &Hint(self))
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
                .field("hint", &Hint(self))
                .finish(),
            Error::ModelFile { path, why } => f
                .debug_struct("ModelFile")
                .field("path", path)
                .field("why", why)
                .field("hint", &Hint(self))
                .finish(),
            Error::ConfigFile { path, why } => f
                .debug_struct("ConfigFile")
                .field("path", path)
                .field("why", why)
                .field("hint", &Hint(self))
                .finish(),
            Error::UnsupportedJpeg(why) => f.debug_tuple("UnsupportedJpeg").field(why).finish(),
            Error::PictureLayout(why) => f.debug_tuple("PictureLayout").field(why).finish(),
            Error::MediaApiTaken => f
                .debug_struct("MediaApiTaken")
                .field("hint", &Hint(self))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The hint as `Debug` shows it: the `Display` text, quoted.
    fn hint_of(error: &Error) -> String {
        format!("hint: {:?}", error.to_string())
    }

    #[test]
    fn debug_of_not_in_device_run_mode_says_to_copy() {
        let error = Error::NotInDeviceRunMode;
        let shown = format!("{error:?}");
        assert!(shown.starts_with("NotInDeviceRunMode {"), "{shown}");
        assert!(shown.contains(&hint_of(&error)), "{shown}");
        assert!(shown.contains("copy it"), "{shown}");
    }

    #[test]
    fn debug_of_model_in_use_says_to_wait_for_the_executions() {
        let error = Error::ModelInUse { pending: 2 };
        let shown = format!("{error:?}");
        assert!(shown.starts_with("ModelInUse { pending: 2, "), "{shown}");
        assert!(shown.contains(&hint_of(&error)), "{shown}");
        assert!(shown.contains("wait for them first"), "{shown}");
    }

    #[test]
    fn debug_of_not_complete_says_to_synchronise_first() {
        let error = Error::NotComplete { what: "the event" };
        let shown = format!("{error:?}");
        assert!(
            shown.starts_with("NotComplete { what: \"the event\", "),
            "{shown}"
        );
        assert!(shown.contains(&hint_of(&error)), "{shown}");
        assert!(shown.contains("synchronise it first"), "{shown}");
    }

    /// Every variant with a hint in its message shows it in `Debug` too.
    #[test]
    fn every_hinted_variant_debugs_with_its_display_text() {
        let path: Box<std::path::Path> = std::path::Path::new("/tmp/x.om").into();
        let hinted = [
            Error::Unsupported { symbol: "aclrtX" },
            Error::LiveChildren { count: 1 },
            Error::TooManyReportThreads { limit: 1024 },
            Error::ReportThreadFailing {
                failures: 3,
                pending: 1,
            },
            Error::DefaultContextInUse { device: 0 },
            Error::NotComplete { what: "the event" },
            Error::ModelInUse { pending: 1 },
            Error::ModelSizeMismatch {
                expected: 8,
                found: 4,
            },
            Error::ModelTensorCount {
                what: "inputs",
                expected: 2,
                found: 1,
            },
            Error::NotAGear { batch: 3 },
            Error::NotInDeviceRunMode,
            Error::UnreadableDescription {
                call: "aclmdlGetNumInputs",
            },
            Error::ModelTypeMismatch {
                tensor: ModelTensor::Input(0),
                expected: DataType::Float,
                found: DataType::Int32,
            },
            Error::ModelFile {
                path: path.clone(),
                why: ModelFileProblem::NotRegularFile,
            },
            Error::ConfigFile {
                path,
                why: ModelFileProblem::Directory,
            },
        ];
        for error in &hinted {
            let shown = format!("{error:?}");
            assert!(shown.contains(&hint_of(error)), "{shown}");
        }
    }
}
