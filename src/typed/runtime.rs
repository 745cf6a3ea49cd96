//! The process token [`Acl`], timeouts, and what happens to errors no caller can receive.

use std::ffi::CString;
use std::fmt;
use std::marker::PhantomData;

use crate::sys::loader::{Api, LoadOptions, load_global};
use crate::sys::sync::{InitOnce, Initialised, sync_static};
use crate::typed::error::{Error, ModelFileProblem, Result};
use crate::typed::handle::{Failed, release_on_drop, report_all};
use crate::typed::lifecycle::{CleanupErrors, Lifecycle, RuntimeCalls};

sync_static! {
    /// The runtime of [`Acl::shared`], once initialised (never finalized), and the
    /// configuration file it was initialised with.
    static SHARED: InitOnce<(Acl, Option<CString>)> = InitOnce::new();
}
sync_static! {
    /// Whether an [`Acl`] is alive, and the lock initialisation and finalisation take (P2).
    static LIFECYCLE: Lifecycle = Lifecycle::new();
}

/// The runtime calls of a start or an end, with the options of the `Acl` being started.
struct Calls<'o> {
    options: &'o InitOptions,
}

impl RuntimeCalls for Calls<'_> {
    type Library = &'static Api;

    fn load(&self) -> Result<&'static Api> {
        Ok(load_global(&self.options.load)?)
    }

    fn check(&self) -> Result<()> {
        crate::typed::handle::refuse_inside_callback()?;
        if let Some(config) = &self.options.config {
            check_config(config)?;
        }
        Ok(())
    }

    fn init(&self, api: &'static Api) -> Result<()> {
        // SAFETY: no `Acl` is alive and the runtime is not initialised (the lifecycle checks
        // both under its lock), and every raw call that could initialise the runtime
        // elsewhere is `unsafe` with a contract excluding this (P2); the configuration is a
        // NUL-terminated string or null.
        unsafe { api.init(self.options.config.as_deref()) }.map_err(Error::from)
    }

    fn disarm(&self, api: &'static Api) -> Result<()> {
        // SAFETY: right after the init: no handle exists in the runtime, no wait was issued.
        unsafe { api.set_op_wait_timeout(0) }.map_err(Error::from)
    }

    fn finalize(&self, api: &'static Api) -> Result<()> {
        // SAFETY: the lifecycle calls this under its lock, either after a failed start
        // (nothing was created since the init, and no token is returned) or at a token's
        // end once no device set through it is alive (counted; borrows keep it so unless
        // one was leaked), so no context, stream, event or buffer is either; the token is
        // consumed or being dropped, so this is the only finalize (P2, D3).
        unsafe { api.finalize() }.map_err(Error::from)
    }
}

/// The initialised runtime: proof that `aclInit` succeeded and `aclFinalize` has not run.
///
/// Everything else in this crate borrows from an `Acl` (a [`Device`](crate::Device) borrows it, a
/// [`Context`](crate::Context) borrows the device, and so on), so:
///
/// * no runtime call can be written without one (P1): there is no other way to get a handle;
/// * [`Acl::finalize`] consumes it, so it cannot run while anything borrowed from it is alive
///   (P2, D3): the borrow checker rejects the call (E0505);
/// * a second live `Acl` in the process is [`Error::AlreadyInitialized`] (P2).
///
/// States: *initialised* (a value exists) → *finalized* (consumed by [`finalize`](Acl::finalize),
/// or by `Drop` as a fallback, whose error goes to the [drop-error handler](crate::set_drop_error_handler)).
///
/// `Send + Sync`: the runtime's process state is not tied to a thread.
///
/// ```no_run
/// use ascend_typestate::Acl;
/// let acl = Acl::init()?;
/// let device = acl.set_device(0)?;
/// device.reset()?;
/// acl.finalize()?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
pub struct Acl {
    api: &'static Api,
    // Not constructible outside this module.
    _private: PhantomData<()>,
}

/// How to initialise the runtime: which library, which configuration file.
#[derive(Clone, Debug, Default)]
pub struct InitOptions {
    load: LoadOptions,
    config: Option<CString>,
}

impl InitOptions {
    /// Load the runtime library from exactly this path (see [`crate::sys::loader`]).
    pub fn library(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.load = self.load.path(path);
        self
    }

    /// Strict loading, for deployments: exactly this library, an absolute path, with no
    /// fallback of any kind (see [`LoadOptions::strict`]). After init, [`Acl::library`]
    /// reports the file in use and its version.
    ///
    /// ```no_run
    /// use ascend_typestate::{Acl, InitOptions};
    /// let options = InitOptions::default()
    ///     .strict_library("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so");
    /// let acl = Acl::init_with(&options)?;
    /// println!("runtime library: {}", acl.library());
    /// # Ok::<(), ascend_typestate::Error>(())
    /// ```
    pub fn strict_library(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.load = self.load.strict(path);
        self
    }

    /// Pass this JSON configuration file to `aclInit`.
    ///
    /// A path with a NUL byte is refused here. The file itself is checked at
    /// initialisation, right before `aclInit`, which is not called when the path names
    /// nothing, or no regular file ([`Error::ConfigFile`]): a FIFO or a device would block
    /// the runtime's reader or never end, a directory is no configuration. (The file can
    /// still change between the check and `aclInit`'s read; what the runtime then does is
    /// its own.)
    pub fn config(mut self, path: &std::path::Path) -> Result<Self> {
        let bytes = path.as_os_str().as_encoded_bytes().to_vec();
        let c = CString::new(bytes)
            .map_err(|_| Error::InvalidArgument("the configuration path contains a NUL byte"))?;
        self.config = Some(c);
        Ok(self)
    }
}

/// Refuses a configuration path that names nothing `aclInit` can read
/// ([`Error::ConfigFile`]), as model paths are refused.
fn check_config(config: &std::ffi::CStr) -> Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(config.to_bytes()));
    let refuse = |why| Error::ConfigFile {
        path: path.into(),
        why,
    };
    // `metadata` follows links: what the runtime would open.
    match std::fs::metadata(path) {
        Err(error) => Err(refuse(match error.kind() {
            std::io::ErrorKind::NotFound => ModelFileProblem::NotFound,
            std::io::ErrorKind::PermissionDenied => ModelFileProblem::PermissionDenied,
            _ => ModelFileProblem::Unreadable,
        })),
        Ok(metadata) if metadata.is_dir() => Err(refuse(ModelFileProblem::Directory)),
        Ok(metadata) if !metadata.is_file() => Err(refuse(ModelFileProblem::NotRegularFile)),
        Ok(_) => Ok(()),
    }
}

impl Acl {
    /// Loads the runtime library (search order of [`crate::sys::loader`]) and calls `aclInit`.
    pub fn init() -> Result<Acl> {
        Acl::init_with(&InitOptions::default())
    }

    /// As [`Acl::init`], with a chosen library and configuration file.
    pub fn init_with(options: &InitOptions) -> Result<Acl> {
        let mut cleanup_errors = Vec::new();
        let result = Acl::init_collecting(options, &mut cleanup_errors);
        // Reported with no lock held: the handler is user code, which may call in here.
        report_all(cleanup_errors);
        result
    }

    /// [`Acl::init_with`], leaving the errors of a failed start's clean-up to the caller.
    fn init_collecting(options: &InitOptions, cleanup_errors: &mut CleanupErrors) -> Result<Acl> {
        let api = LIFECYCLE.start(&Calls { options }, cleanup_errors)?;
        Ok(Acl::token(api))
    }

    /// The token of a runtime the lifecycle has just started.
    fn token(api: &'static Api) -> Acl {
        Acl {
            api,
            _private: PhantomData,
        }
    }

    /// The process-wide runtime, shared by every caller: initialised by the first call
    /// (`aclInit`, with the default search order) and **never finalized** (`aclFinalize`
    /// does not run; the runtime ends with the process, which releases its devices).
    ///
    /// This is the way for code that cannot pass one `Acl` around: parallel `#[test]`s of
    /// one test binary (each calls `Acl::shared()?` and gets the same runtime), threads
    /// spawned with `std::thread::spawn`, and long-lived handles kept in an application's
    /// own structs or statics: everything borrowed from a `&'static Acl` is `'static` too
    /// (a `Device<'static>`, a `Context<'static>`), and every compile-time rule below the
    /// `Acl` still holds.
    ///
    /// Concurrent first calls initialise once; a failed initialisation is returned to its
    /// caller and the next call tries again. While an owned `Acl` (from [`Acl::init`]) is
    /// alive this is [`Error::AlreadyInitialized`], and once the shared runtime exists
    /// [`Acl::init`] is (P2): a process uses one or the other.
    ///
    /// ```no_run
    /// # fn main() -> ascend_typestate::Result<()> {
    /// use ascend_typestate::Acl;
    /// let acl: &'static Acl = Acl::shared()?;
    /// let worker = std::thread::spawn(move || -> ascend_typestate::Result<()> {
    ///     let device = acl.set_device(0)?; // a Device<'static>, movable anywhere
    ///     let ctx = device.create_context()?;
    ///     let stream = ctx.create_stream()?;
    ///     stream.synchronize()?;
    ///     Ok(())
    /// });
    /// worker.join().expect("worker panicked")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn shared() -> Result<&'static Acl> {
        Acl::shared_with(&InitOptions::default())
    }

    /// As [`Acl::shared`], with a chosen library and configuration file for the first
    /// initialisation. Later calls return the runtime already initialised; asking them for
    /// another library is [`LoadError::AlreadyLoaded`](crate::LoadError::AlreadyLoaded).
    pub fn shared_with(options: &InitOptions) -> Result<&'static Acl> {
        // The options of a later call must not ask for another runtime than the one in use.
        let same = |(acl, config): &'static (Acl, Option<CString>)| -> Result<&'static Acl> {
            load_global(&options.load)?;
            match &options.config {
                Some(asked) if config.as_ref() != Some(asked) => Err(Error::InvalidArgument(
                    "Acl::shared_with: the shared runtime was initialised with another \
                     configuration file",
                )),
                _ => Ok(acl),
            }
        };
        let mut cleanup_errors = Vec::new();
        let make = |api| (Acl::token(api), options.config.clone());
        let result = LIFECYCLE.shared(&SHARED, &Calls { options }, make, &mut cleanup_errors);
        // Reported with no lock held (the handler may call `Acl::shared` itself).
        report_all(cleanup_errors);
        match result? {
            (shared, Initialised::Here) => Ok(&shared.0),
            (shared, Initialised::Before) => same(shared),
        }
    }

    /// Which runtime library this process uses: the file its functions were loaded from
    /// (links resolved), the search step that found it, and the version it reports.
    ///
    /// ```no_run
    /// let acl = ascend_typestate::Acl::init()?;
    /// println!("runtime library: {}", acl.library());
    /// // runtime library: /usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux/lib64/libascendcl.so
    /// //   (version 8.0.0, found by: $ASCEND_HOME_PATH)
    /// # Ok::<(), ascend_typestate::Error>(())
    /// ```
    pub fn library(&self) -> RuntimeLibrary {
        let version = match self.runtime_version() {
            Ok(version) => version,
            Err(_) => match self.interface_version() {
                Ok((major, minor, patch)) => format!("AscendCL interface {major}.{minor}.{patch}"),
                Err(_) => "unknown".to_owned(),
            },
        };
        RuntimeLibrary {
            path: self.api.resolved_path().to_path_buf(),
            source: self.api.source(),
            version,
            simulator: self.simulator().is_some(),
        }
    }

    /// `aclrtGetDeviceCount`.
    pub fn device_count(&self) -> Result<u32> {
        Ok(self.api.get_device_count()?)
    }

    /// `aclrtGetRunMode`: `true` when this process runs on the device itself (`ACL_DEVICE`,
    /// e.g. on an Atlas 200/500 A2 board).
    pub fn runs_on_device(&self) -> Result<bool> {
        Ok(self.api.get_run_mode()? == crate::sys::bindings::ACL_DEVICE)
    }

    /// `aclrtGetSocName` (D8): the chip, e.g. "Ascend310B4" on an Atlas 200I/500 A2 board
    /// (the simulator's name also starts with "Ascend"). [`Error::Unsupported`] on
    /// runtimes that lack it.
    pub fn soc_name(&self) -> Result<String> {
        Ok(self.api.get_soc_name()?)
    }

    /// `aclsysGetVersionStr("runtime")` (P4): the version of the runtime package (the
    /// simulator's says so). [`Error::Unsupported`] on runtimes older than 2025; see
    /// [`interface_version`](Self::interface_version) for those.
    pub fn runtime_version(&self) -> Result<String> {
        Ok(self.api.get_version_str(c"runtime")?)
    }

    /// `aclrtGetVersion` (P4): the AscendCL interface version `(major, minor, patch)`, which
    /// older runtimes report (deprecated in newer ones, which may lack it:
    /// [`Error::Unsupported`]).
    pub fn interface_version(&self) -> Result<(i32, i32, i32)> {
        Ok(self.api.get_version()?)
    }

    /// `aclGetRecentErrMsg` (P4): the runtime's explanation of the calling thread's last
    /// failed call, if it kept one. Every failed call of this crate already reads it into its
    /// error (the `message` of [`Error::Runtime`]), so this finds it only after calls made
    /// elsewhere (C code in the same thread, say). Any runtime call on this thread may
    /// replace it.
    pub fn recent_error_message(&self) -> Option<String> {
        self.api.recent_error_message()
    }

    /// `aclrtSetOpExecuteTimeOutV2` (P5): operator tasks issued later fail with
    /// [`AclError::RtTaskTimeout`](crate::AclError::RtTaskTimeout) (reported by the next
    /// synchronisation) once they run longer than `limit`; `Duration::ZERO` removes the
    /// limit. Returns the limit in effect (the runtime rounds up to its interval). Unlike
    /// the wait timeout (P3a) this breaks no ordering: a stopped task is still a task the
    /// later ones wait for, and its outputs are merely unspecified bytes.
    pub fn set_op_execute_timeout(
        &self,
        limit: std::time::Duration,
    ) -> Result<std::time::Duration> {
        crate::typed::handle::refuse_inside_callback()?;
        let us = u64::try_from(limit.as_micros())
            .map_err(|_| Error::InvalidArgument("operator timeout too long"))?;
        // SAFETY: a process-wide setting that breaks no typed guarantee (see above); not
        // inside a callback (checked above, C8).
        let actual = unsafe { self.api.set_op_execute_timeout_us(us)? };
        Ok(std::time::Duration::from_micros(actual))
    }

    /// `aclrtGetOpExecuteTimeout` (P5): the operator execution limit in effect (zero: none).
    pub fn op_execute_timeout(&self) -> Result<std::time::Duration> {
        let ms = self.api.get_op_execute_timeout_ms()?;
        Ok(std::time::Duration::from_millis(u64::from(ms)))
    }

    /// The loaded library: the raw [`result`](crate::result) layer, for calls this crate does
    /// not wrap. Handles created through it are not tracked by the typestate API. The borrow
    /// ends with the token, so no raw call compiles after [`finalize`](Acl::finalize); the
    /// raw calls that would invalidate typed handles (`finalize`, `reset_device`, destroys)
    /// are `unsafe`.
    pub fn api(&self) -> &Api {
        self.api
    }

    pub(crate) fn api_static(&self) -> &'static Api {
        self.api
    }

    fn release(&self) -> Result<()> {
        let options = InitOptions::default();
        LIFECYCLE.end(&Calls { options: &options }, self.api, || {
            crate::typed::handle::may_release(crate::typed::handle::live_devices())
        })
    }

    /// `aclFinalize` (P2). Consumes the token: does not compile while anything borrowed from it is
    /// alive; [`Error::LiveChildren`] if a device set through it was leaked.
    /// On failure the error is returned and the token goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_finalize`](Self::try_finalize) gives it back instead, for a caller who wants to retry.
    pub fn finalize(self) -> Result<()> {
        self.try_finalize().map_err(Failed::into_release_error)
    }

    /// `aclFinalize` (P2). Consumes the token: does not compile while a device, context,
    /// stream, event, buffer or report thread borrowed from it is alive. On failure the token
    /// is given back; if a device set through it was leaked (`mem::forget`, or kept because
    /// a context on it was leaked), that failure is [`Error::LiveChildren`] and the runtime
    /// is not finalized under it (the token's `Drop` keeps it too, and reports).
    pub fn try_finalize(self) -> Result<(), Failed<Acl>> {
        Failed::release_or_give_back(self, Self::release)
    }
}

impl Drop for Acl {
    fn drop(&mut self) {
        release_on_drop("Acl", || self.release());
    }
}

impl fmt::Debug for Acl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acl")
            .field("library", &self.api.path())
            .finish()
    }
}

/// The runtime library in use ([`Acl::library`]). Displays as
/// `<path> (version <version>, found by: <search step>)`, the one format the examples print;
/// `<path> (the simulator, version <version>, found by: <search step>)` when it is the CPU
/// simulator (`ascendcl-sim`), so that a program run under `cargo` (whose library path the
/// system loader searches) says plainly that no vendor runtime is in use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeLibrary {
    path: std::path::PathBuf,
    source: &'static str,
    version: String,
    simulator: bool,
}

impl RuntimeLibrary {
    /// The file the runtime's functions come from, with links resolved.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The search step that found it (`"strict"`, `"caller"`, `"ASCEND_ACL_LIB"`,
    /// `"system loader"`, ...; see [`crate::sys::loader`]).
    pub fn found_by(&self) -> &'static str {
        self.source
    }

    /// `aclsysGetVersionStr("runtime")`, else the interface version of `aclrtGetVersion`
    /// (older runtimes), else `"unknown"`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether it is the CPU simulator (`ascendcl-sim`), not a vendor runtime.
    pub fn is_simulator(&self) -> bool {
        self.simulator
    }
}

impl fmt::Display for RuntimeLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.simulator {
            "the simulator, "
        } else {
            ""
        };
        write!(
            f,
            "{} ({kind}version {}, found by: {})",
            self.path.display(),
            self.version,
            self.source
        )
    }
}
