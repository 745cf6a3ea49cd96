//! Finding and opening the runtime library.
//!
//! # Search order
//!
//! 1. A path given by the caller ([`LoadOptions::path`]): only that file is tried.
//! 2. The environment variable `ASCEND_ACL_LIB`: only that file is tried.
//!
//!    In steps 1 and 2 a bare file name without a directory (`libascendcl.so`) is looked up
//!    by the system loader (`LD_LIBRARY_PATH`, ...), not in the current directory; write
//!    `./libascendcl.so` for that.
//!
//!    An explicit choice is never silently replaced by another library.
//! 3. For each install root, in order: `$ASCEND_HOME_PATH`, `$ASCEND_TOOLKIT_HOME`,
//!    `/usr/local/Ascend/ascend-toolkit/latest`, `/usr/local/Ascend/cann`,
//!    `$HOME/Ascend/ascend-toolkit/latest`: `ROOT/lib64/libascendcl.so`,
//!    `ROOT/runtime/lib64/libascendcl.so`, then `ROOT/lib64/libacl_rt.so` (newer CANN).
//! 4. The system loader: `libascendcl.so` through `LD_LIBRARY_PATH`, `ld.so.cache`, ... (this
//!    is how the board's `set_env.sh` is honoured).
//! 5. Development fallback: `libascendcl.so` beside the running executable, or in the
//!    `deps` directory of its Cargo target directory (`../deps` from an example, `deps/` from
//!    a binary). This is where Cargo puts the simulator (the `ascendcl-sim` dev-dependency)
//!    for tests, examples and benches (`target/<profile>/deps/`), so that a fresh
//!    `cargo test` or `cargo run --example`, or the built executable run directly, needs no
//!    manual step. It comes last, so an installed runtime always wins.
//!
//! # Strict loading
//!
//! For deployments that must know which library runs, [`LoadOptions::strict`] (or
//! [`InitOptions::strict_library`](crate::InitOptions::strict_library)) replaces the whole
//! search order: exactly one absolute path, no `ASCEND_ACL_LIB`, no system loader, no
//! fallback; the runtime's functions must be defined in that very file. The file in use
//! (links resolved) and its version are then reported by
//! [`Acl::library`](crate::Acl::library).
//!
//! # Trust
//!
//! Loading is a safe operation in this crate, as in the CUDA crates: the library found is
//! trusted to be an AscendCL runtime with the prototypes of `include/ascendcl.h` (the
//! required symbols are checked by name, not by type, which no loader can do). Point
//! `ASCEND_ACL_LIB` or [`LoadOptions::path`] only at a runtime you trust; a library with
//! other prototypes under these names is undefined behaviour.
//!
//! A library that cannot be opened moves the search on; when every candidate fails the error
//! ([`LoadError::NotFound`]) lists each path tried with the loader's answer. A library that
//! opens but lacks a required symbol stops the search with [`LoadError::MissingSymbol`]
//! naming the symbol.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::FunctionTable;
use crate::error::{LoadError, TriedPath};

/// The library file name of the AscendCL runtime (and of the simulator).
pub const LIBRARY_NAME: &str = "libascendcl.so";
/// The environment variable naming the runtime library to load.
pub const LIBRARY_ENV: &str = "ASCEND_ACL_LIB";

/// How to find the runtime library.
///
/// ```
/// use ascend_typestate::sys::loader::LoadOptions;
/// let opts = LoadOptions::default().path("/opt/custom/libascendcl.so");
/// assert!(opts.explicit_path().is_some());
/// assert!(!opts.is_strict());
/// ```
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    path: Option<PathBuf>,
    strict: bool,
}

impl LoadOptions {
    /// Load exactly this file (search step 1).
    pub fn path(mut self, path: impl Into<PathBuf>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Strict loading, for deployments: load exactly this file, which must be an absolute
    /// path ([`LoadError::NotAbsolute`] otherwise, before anything is opened), with no
    /// fallback of any kind: no search, no `ASCEND_ACL_LIB`, no system loader lookup, no
    /// development fallback. The runtime's functions must come from this very file
    /// ([`LoadError::ResolvedElsewhere`] if it only forwards to another library). The
    /// file actually used, after resolving links, is [`Api::resolved_path`].
    ///
    /// ```
    /// use ascend_typestate::sys::loader::LoadOptions;
    /// let opts = LoadOptions::default().strict("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so");
    /// assert!(opts.is_strict());
    /// ```
    pub fn strict(mut self, path: impl Into<PathBuf>) -> Self {
        self.path = Some(path.into());
        self.strict = true;
        self
    }

    /// The explicit path, if one was given.
    pub fn explicit_path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether [`strict`](Self::strict) loading was asked for.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// Refuses strict options that cannot name one file.
    fn validate(&self) -> Result<(), LoadError> {
        match &self.path {
            Some(path) if self.strict && !path.is_absolute() => {
                Err(LoadError::NotAbsolute { path: path.clone() })
            }
            _ => Ok(()),
        }
    }
}

/// One candidate of the search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// A file path, or a bare library name for the system loader.
    pub path: PathBuf,
    /// Which search step produced it.
    pub source: &'static str,
}

/// The candidates of the search order, computed from an explicit path, an environment lookup
/// and the running executable's path. Pure, so that the order itself is testable.
///
/// ```
/// use ascend_typestate::sys::loader::candidates;
/// let list = candidates(None, |_| None, None);
/// assert_eq!(list.last().map(|c| c.source), Some("system loader"));
/// ```
pub fn candidates(
    explicit: Option<&Path>,
    env: impl Fn(&str) -> Option<OsString>,
    current_exe: Option<&Path>,
) -> Vec<Candidate> {
    if let Some(path) = explicit {
        return vec![Candidate {
            path: path.to_path_buf(),
            source: "caller",
        }];
    }
    if let Some(path) = env(LIBRARY_ENV).filter(|p| !p.is_empty()) {
        return vec![Candidate {
            path: PathBuf::from(path),
            source: LIBRARY_ENV,
        }];
    }
    let mut roots: Vec<(PathBuf, &'static str)> = Vec::new();
    for (var, source) in [
        ("ASCEND_HOME_PATH", "$ASCEND_HOME_PATH"),
        ("ASCEND_TOOLKIT_HOME", "$ASCEND_TOOLKIT_HOME"),
    ] {
        if let Some(root) = env(var).filter(|p| !p.is_empty()) {
            roots.push((PathBuf::from(root), source));
        }
    }
    roots.push((
        PathBuf::from("/usr/local/Ascend/ascend-toolkit/latest"),
        "default install",
    ));
    roots.push((PathBuf::from("/usr/local/Ascend/cann"), "default install"));
    if let Some(home) = env("HOME").filter(|p| !p.is_empty()) {
        roots.push((
            Path::new(&home).join("Ascend/ascend-toolkit/latest"),
            "$HOME install",
        ));
    }
    let mut list = Vec::new();
    for (root, source) in &roots {
        for rel in [
            "lib64/libascendcl.so",
            "runtime/lib64/libascendcl.so",
            "lib64/libacl_rt.so",
        ] {
            list.push(Candidate {
                path: root.join(rel),
                source,
            });
        }
    }
    list.push(Candidate {
        path: PathBuf::from(LIBRARY_NAME),
        source: "system loader",
    });
    if let Some(dir) = current_exe.and_then(Path::parent) {
        list.push(Candidate {
            path: dir.join(LIBRARY_NAME),
            source: "beside the executable",
        });
        // The simulator Cargo builds for tests, examples and benches is in
        // `target/<profile>/deps`: beside test and bench executables, in `../deps` from
        // examples, in `deps/` from binaries (where `cargo run` would find it through
        // `LD_LIBRARY_PATH`).
        let deps = match dir.file_name().and_then(|n| n.to_str()) {
            Some("deps") => None,
            Some("examples") => dir.parent().map(|p| p.join("deps")),
            _ => Some(dir.join("deps")),
        };
        if let Some(deps) = deps {
            list.push(Candidate {
                path: deps.join(LIBRARY_NAME),
                source: "beside the executable",
            });
        }
    }
    list
}

/// A loaded runtime library and its resolved function table.
///
/// The [`result`](crate::result) layer is implemented on this type: one method per C function,
/// returning `Result`.
///
/// Dropping an `Api` never unloads the library: the runtime starts worker threads that run
/// its code for as long as the process lives (after `aclrtSetDevice`, ...), so a `dlclose`
/// under them would crash the process. The library handle is kept open forever.
pub struct Api {
    pub(crate) table: FunctionTable,
    path: PathBuf,
    resolved: PathBuf,
    source: &'static str,
    /// Never closed (see the type's docs), so `table`'s pointers stay valid for the life of
    /// the process.
    _library: std::mem::ManuallyDrop<libloading::Library>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("path", &self.path)
            .field("resolved", &self.resolved)
            .field("source", &self.source)
            .finish()
    }
}

impl Api {
    /// Loads a runtime library following the search order, independently of the
    /// process-wide one (see [`global`] / [`load_global`]).
    pub fn load(options: &LoadOptions) -> Result<Api, LoadError> {
        options.validate()?;
        let exe = std::env::current_exe().ok();
        let list = candidates(
            options.explicit_path(),
            |k| std::env::var_os(k),
            exe.as_deref(),
        );
        let mut tried = Vec::new();
        for mut candidate in list {
            if options.is_strict() {
                candidate.source = "strict";
            }
            let is_bare_name = candidate.path.components().count() == 1;
            if !is_bare_name && !candidate.path.exists() {
                tried.push(TriedPath {
                    path: candidate.path,
                    source: candidate.source,
                    reason: "does not exist".to_owned(),
                });
                continue;
            }
            // SAFETY: opening a shared library runs its initialisers. The candidates are the
            // AscendCL runtime's documented install locations, or paths the user chose; the
            // vendor runtime and the simulator have no initialiser with preconditions.
            match unsafe { libloading::Library::new(&candidate.path) } {
                Ok(library) => {
                    // SAFETY: the library is an AscendCL runtime (same reasoning), and the
                    // table is stored beside the library, which is never unloaded.
                    let table = unsafe { FunctionTable::resolve(&library, &candidate.path)? };
                    let resolved = defining_file(table.aclInit as *const std::ffi::c_void)
                        .unwrap_or_else(|| canonical(&candidate.path));
                    if options.is_strict() && resolved != canonical(&candidate.path) {
                        // Kept loaded (never unloaded, see the type's docs); nothing was called.
                        std::mem::forget(library);
                        return Err(LoadError::ResolvedElsewhere {
                            requested: canonical(&candidate.path),
                            resolved,
                        });
                    }
                    return Ok(Api {
                        table,
                        path: candidate.path,
                        resolved,
                        source: candidate.source,
                        _library: std::mem::ManuallyDrop::new(library),
                    });
                }
                Err(e) => tried.push(TriedPath {
                    path: candidate.path,
                    source: candidate.source,
                    reason: e.to_string(),
                }),
            }
        }
        Err(LoadError::NotFound { tried })
    }

    /// The path (or bare name, for the system loader) the library was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file the runtime's functions were loaded from, after resolving links: the real
    /// path behind a bare name found by the system loader, or behind a `latest` link of a
    /// CANN install.
    pub fn resolved_path(&self) -> &Path {
        &self.resolved
    }

    /// Which search step found the library (e.g. `"ASCEND_ACL_LIB"`, `"system loader"`).
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The loaded library, for symbols outside the runtime's table (the simulator's).
    pub(crate) fn library(&self) -> &libloading::Library {
        &self._library
    }

    /// Whether the loaded library provides `symbol` (required ones always do).
    pub fn has_symbol(&self, symbol: &str) -> bool {
        self.table.provides(symbol)
    }

    /// The raw function table, for calls this crate does not wrap.
    pub fn functions(&self) -> &FunctionTable {
        &self.table
    }
}

/// The file that defines the code at `address`, as the dynamic loader knows it, with links
/// resolved; `None` if the loader cannot tell.
fn defining_file(address: *const std::ffi::c_void) -> Option<PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: `dladdr` only reads the loader's tables and writes `info`; any address is
    // allowed (an unknown one returns 0).
    let found = unsafe { libc::dladdr(address, info.as_mut_ptr()) };
    if found == 0 {
        return None;
    }
    // SAFETY: `dladdr` succeeded, so `info` is initialised.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string owned by the loader, alive while the library is
    // loaded (forever, here); copied at once.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    use std::os::unix::ffi::OsStrExt as _;
    Some(canonical(Path::new(std::ffi::OsStr::from_bytes(
        name.to_bytes(),
    ))))
}

/// `path` with links and relative parts resolved, or unchanged if it cannot be.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Whether two paths name the same file (after resolving links and relative parts, when
/// both exist).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The process-wide runtime: loaded once, never unloaded (handles may outlive any scope).
static GLOBAL: OnceLock<Api> = OnceLock::new();
static LOADING: Mutex<()> = Mutex::new(());

/// The process-wide runtime, if it was loaded.
#[inline]
pub fn global() -> Option<&'static Api> {
    GLOBAL.get()
}

/// Loads the process-wide runtime, or returns the one already loaded.
///
/// The first successful load wins for the life of the process. Asking for an explicit path
/// other than the loaded one is [`LoadError::AlreadyLoaded`].
pub fn load_global(options: &LoadOptions) -> Result<&'static Api, LoadError> {
    options.validate()?;
    let check = |api: &'static Api| match options.explicit_path() {
        Some(requested)
            if !same_file(requested, api.path())
                || (options.is_strict() && canonical(requested) != api.resolved_path()) =>
        {
            Err(LoadError::AlreadyLoaded {
                loaded: api.resolved_path().to_path_buf(),
                requested: requested.to_path_buf(),
            })
        }
        _ => Ok(api),
    };
    if let Some(api) = GLOBAL.get() {
        return check(api);
    }
    // A poisoned lock only means another loader panicked; the OnceLock is still consistent.
    let _guard = LOADING.lock().unwrap_or_else(|poison| poison.into_inner());
    if let Some(api) = GLOBAL.get() {
        return check(api);
    }
    let api = Api::load(options)?;
    Ok(GLOBAL.get_or_init(move || api))
}
