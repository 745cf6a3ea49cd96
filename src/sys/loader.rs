//! Finding and opening the runtime library.
//!
//! # Search order
//!
//! 1. A path given by the caller ([`LoadOptions::path`]): only that file is tried.
//! 2. The environment variable `ASCEND_ACL_LIB`: only that file is tried.
//!
//!    In steps 1 and 2 a bare file name without a directory (`libascendcl.so`) is looked up
//!    by the system loader (`LD_LIBRARY_PATH`, ...), as in step 4 (see "Bare names"), not in
//!    the current directory; write `./libascendcl.so` for that.
//!
//!    An explicit choice is never silently replaced by another library.
//! 3. For each install root, in order: `$ASCEND_HOME_PATH`, `$ASCEND_TOOLKIT_HOME`,
//!    `/usr/local/Ascend/ascend-toolkit/latest`, `/usr/local/Ascend/cann`,
//!    `$HOME/Ascend/ascend-toolkit/latest`, `$HOME/Ascend/cann` (a non-root 9.x install):
//!    `ROOT/lib64/libascendcl.so`, `ROOT/runtime/lib64/libascendcl.so`, then
//!    `ROOT/lib64/libacl_rt.so` (newer CANN). Never `ROOT/devlib/` (link-time stubs on 9.x).
//! 4. The system loader: `libascendcl.so`, then `libacl_rt.so`, through `LD_LIBRARY_PATH`,
//!    `ld.so.cache`, ... (this is how the board's `set_env.sh` is honoured). What it would open from
//!    `LD_LIBRARY_PATH` is checked first (see "Bare names").
//! 5. Development fallback: `libascendcl.so` beside the running executable, or in the
//!    `deps` directory of its Cargo target directory (`../deps` from an example, `deps/` from
//!    a binary). This is where Cargo puts the simulator (the `ascendcl-sim` dev-dependency)
//!    for tests, examples and benches (`target/<profile>/deps/`), so that a fresh
//!    `cargo test` or `cargo run --example`, or the built test or example run directly,
//!    needs no manual step. (Cargo builds dev-dependencies only for those: a binary finds
//!    the simulator once `cargo test` or `cargo build --tests` has built it. With Cargo's
//!    `build.build-dir` set, the simulator is built there, and only `cargo run`/`cargo test`,
//!    through `LD_LIBRARY_PATH`, find it.)
//!
//!    It comes last, and it is not tried at all when an installed runtime of steps 1-4
//!    exists but cannot be loaded (a missing dependency, another architecture, no
//!    permission): that failure is reported, never papered over with the simulator. Under
//!    `cargo run`/`cargo test`, Cargo itself puts `target/<profile>/deps` first on
//!    `LD_LIBRARY_PATH`, so there the simulator is what step 4 finds when no runtime is
//!    named by steps 1-3 (`ASCEND_ACL_LIB`, an install root).
//!
//! # Strict loading
//!
//! For deployments that must know which library runs, [`LoadOptions::strict`] (or
//! [`InitOptions::strict_library`](crate::InitOptions::strict_library)) replaces the whole
//! search order: exactly one absolute path, no `ASCEND_ACL_LIB`, no system loader, no
//! fallback. Links in the path are resolved once, before opening, and every function of the
//! runtime must be defined in that very file (checked against the process's mappings by
//! device and inode), so a forwarding library or a link changed later cannot make another
//! file run under the name. The file in use and its version are then reported by
//! [`Acl::library`](crate::Acl::library). What strict loading does not pin: the runtime's
//! own dependencies (CANN's `libascendcl.so` needs other CANN libraries), which the system
//! loader finds as usual, and a second copy of the runtime that something else in the
//! process loaded.
//!
//! # Trust
//!
//! Loading is a safe operation in this crate, as in the CUDA crates, although `dlopen` runs
//! the library's initialisers (which is why `libloading` marks it `unsafe`). What the crate
//! trusts: that the file it loads is the vendor's AscendCL runtime (or this project's
//! simulator). Its initialisers and functions are trusted code, like the C library's, with
//! the prototypes of `include/ascendcl.h` (the required symbols are checked by name, not by
//! type, which no loader can do). Under that assumption loading is safe: the runtime's
//! initialisers have no precondition a caller could break, and the crate calls its
//! functions only as `docs/protocol.md` allows. Point `ASCEND_ACL_LIB` or
//! [`LoadOptions::path`] only at a runtime you trust: whatever is loaded runs as part of
//! this process, and a library with other prototypes under these names is undefined
//! behaviour.
//!
//! What the crate does not take on trust is that a path holds a complete library for this
//! process: a truncated copy, a directory, a FIFO or a library for another machine is a
//! mistake a safe API reports as an error, not a crash or a hang. Hence the pre-checks, which
//! hold for the files as they are when checked, where the checks look (below: what they do
//! not catch).
//!
//! # Pre-checks
//!
//! Every file path (steps 1-3 and 5, strict loading, and `libacl_mdl.so` beside the runtime),
//! and for a bare name the files on `LD_LIBRARY_PATH` the system loader may open (see "Bare
//! names"), is opened once, without blocking, before `dlopen`, and refused with a reason
//! ([`TriedPath::reason`](crate::TriedPath::reason) in [`LoadError::NotFound`]) when it is:
//!
//! * absent: `does not exist`; unreadable, a link loop, ...: the system's message
//!   (`Permission denied (os error 13)`, `Too many levels of symbolic links (os error 40)`);
//! * a directory, FIFO, socket or device: `not a regular file`;
//! * empty: `empty file`; not ELF (text, zeros): `not an ELF file`;
//! * cut short, its ELF header, program headers, a `PT_LOAD` or `PT_DYNAMIC` segment's bytes
//!   or its section headers beyond the end of the file: `truncated: ...`;
//! * ELF of another class or machine: `a 32-bit ELF file for x86; this process is 64-bit
//!   x86_64`; of the other byte order: `a big-endian ELF file; this process is ...`;
//! * not a shared library: `not a shared library: ELF type ...` (not `ET_DYN`: an
//!   executable, an object file), `not a shared library: no PT_DYNAMIC segment ...`;
//! * inconsistent: no program headers, entries of the wrong size, more than 1024 of them, no
//!   `PT_LOAD`; a segment the loader or the unwinder reads in memory (`PT_DYNAMIC`, the
//!   initial image of `PT_TLS`, `PT_PHDR`, notes, `PT_GNU_EH_FRAME`, ...) that is not where
//!   one `PT_LOAD` maps its own bytes (inside it, at the same distance from its start in the
//!   file and in memory, within the bytes it reads from the file); a `PT_PHDR` that is not
//!   the program header table; `PT_DYNAMIC` in a read-only `PT_LOAD` (glibc writes to it,
//!   always before 2.35): `malformed ELF: ...`. The 2,054 shared libraries and
//!   position-independent executables of the Debian 12 machine this was written on (`/usr/lib`,
//!   `/usr/bin`, ..., the Rust toolchain's, Cargo's `deps`) all pass; an ignored test checks a
//!   machine's (`cargo test --lib -- --ignored system_files`).
//!
//! The system loader maps segments without comparing them with the file's size, and reads
//! the others at the address their header gives: a truncated copy dies of `SIGBUS` inside
//! `dlopen`, a `PT_DYNAMIC` whose address is not where its bytes are mapped of `SIGSEGV`.
//! The checks read the ELF header and at most 1024 program headers, with positioned reads,
//! and map nothing, so a huge or sparse file costs no more than a small one.
//!
//! What they do not catch:
//!
//! * Contents. They read headers, not the dynamic section, symbol and relocation tables or
//!   code: a well-formed but corrupted file (a truncated copy padded back with zeros) can
//!   still crash the system loader, and a well-formed but malicious ELF is trusted code
//!   like any runtime (see Trust); no check before loading tells it from the vendor's.
//! * What the system loader finds for a bare name outside `LD_LIBRARY_PATH`, and the
//!   runtime's dependencies (see "Bare names"); only its own checks apply.
//! * Changes after the check. The file is checked through one open descriptor, then
//!   `dlopen` opens the path again (for a bare name, searches again). A file replaced in
//!   between (renamed over, a link changed) is loaded unchecked; strict loading refuses it
//!   afterwards ([`LoadError::ResolvedElsewhere`]: the mapped file is not the one checked, by
//!   device and inode, kept open through the load so that its inode number is not reused),
//!   but its initialisers have run. A FIFO or a device renamed over it in between makes
//!   `dlopen` wait in its open or read of it, until a writer comes or forever: a hang, and
//!   with the loader's lock held, so that other threads' `dlopen` and `dlsym`, and the
//!   process's `exit`, wait too.
//!   A file changed in place (truncated, rewritten) after the check, or while loaded, crashes
//!   the process, as it would any program.
//!
//!   This window is outside what the pre-checks promise, by design. Replacing the file needs
//!   write access to its directory, and whoever has that chooses the code this process runs
//!   (a replacement runtime's initialisers can crash, hang or do anything else): no guard
//!   here would protect what that access already gives away, and by accident the window is
//!   a few system calls wide. Keeping the install directory writable only by its owner is the
//!   deployment's part. Nor does a watchdog end such a hang (a thread that, when `dlopen` is
//!   slow and the path is now a FIFO, opens its write end and closes it, so that the loader
//!   reads the end of the file): it would end only that case (not a FIFO swapped in and out
//!   again, a terminal or another device that blocks reads, a stalled network file system),
//!   would make every process that loads the runtime open for writing whatever FIFO someone
//!   put at that path (ending its other readers' reads), and would cost a thread per load.
//!   `tests/models/bad_library_paths.rs` shows the limit as it is
//!   (`loader_a_library_swapped_for_a_fifo_after_the_check_blocks_only_on_that_fifo`): the
//!   only way such a load does not return is blocked on that FIFO, which a writer ends.
//!
//! The checked descriptor is not what `dlopen` opens (`/proc/self/fd/N`), although that would
//! close the replacement window: the system loader takes that name for the library's, so
//! `$ORIGIN` in its run path becomes `/proc/self/fd` (dependencies beside it are no longer
//! found), and once the number is reused a later `dlopen` of the same name returns the first
//! library without opening the new file (both seen with glibc 2.36). It would not close the
//! in-place window either, and replacing the file needs write access to its directory,
//! which already allows replacing the runtime itself.
//!
//! # Bare names
//!
//! A bare name (step 4, a bare name given in steps 1-2, and `libacl_mdl.so` when the model
//! functions are neither in the runtime nor beside it) is given to `dlopen` as it is: the
//! system loader searches for it with its own rules (a library already loaded under that
//! name is reused, a run path of the program comes first, `$ORIGIN` works) and the report
//! says "found by: system loader". Before that, the part of its search a user sets is
//! checked: the directories of `LD_LIBRARY_PATH` as glibc's loader reads it (its value when
//! the process started, the last one if set twice; ignored in a set-user-ID or otherwise
//! secure program; `:` or `;` between entries, an empty entry meaning the current directory,
//! `$ORIGIN` the executable's directory), in order, and in each first its
//! hardware-capability subdirectories (`glibc-hwcaps/x86-64-v3`, and up to glibc 2.36 `tls`,
//! `haswell/x86_64`, ...: every one glibc may search on this architecture, whatever this CPU
//! supports, so possibly more than it opens), then the directory itself.
//!
//! Each file found there is checked as a file path is. What glibc passes over and searches
//! on from (a file it may not open, a library of another class or machine) is passed over;
//! any other refusal refuses the step, naming the file
//! (`/opt/x/libascendcl.so (on LD_LIBRARY_PATH, where the system loader would open it): not
//! a regular file`): the system loader would have failed on it, or blocked on a FIFO. The
//! search stops at the first directory holding the name itself, where glibc stops at the
//! latest; the file found first, if any, is kept open through the `dlopen`. With nothing on
//! `LD_LIBRARY_PATH`, the name goes to `dlopen` unchecked.
//!
//! Not covered, so only the system loader's own checks apply:
//!
//! * `ld.so.cache` and the default directories (`/lib`, `/usr/lib`, ...): root's, and the
//!   cache names only libraries `ldconfig` found; no FIFO a user placed is there;
//! * a run path (`DT_RPATH`, `DT_RUNPATH`) of the program or of the library that calls
//!   `dlopen`: the program's builder chose it. A `DT_RPATH` comes before `LD_LIBRARY_PATH`,
//!   so the file checked may then not be the one loaded (and a library already loaded under
//!   the name is reused without any file being opened, although the check still runs);
//! * `LD_LIBRARY_PATH` entries naming `$LIB` or `$PLATFORM` (values only the loader knows),
//!   and `ld.so --library-path`, which replaces `LD_LIBRARY_PATH` for a program started
//!   through `ld.so`;
//! * the runtime's own dependencies (CANN's `libascendcl.so` needs other CANN libraries),
//!   which the system loader finds by the same search, unchecked;
//! * changes after the check, as for file paths.
//!
//! # Errors
//!
//! A library that cannot be opened moves the search on; when every candidate fails the error
//! ([`LoadError::NotFound`]) lists each path tried with why it was not used. A library that
//! opens but lacks a required symbol stops the search with [`LoadError::MissingSymbol`]
//! naming the symbol.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::FunctionTable;
use super::sync::{InitOnce, Initialised, sync_static};
pub(crate) mod error;
pub(crate) mod library_path;
mod origin;

use error::{LoadError, TriedPath};
use library_path::{library_path_refusal, search_library_path};
use origin::{Origin, file_id};

/// The library file name of the AscendCL runtime (and of the simulator).
pub const LIBRARY_NAME: &str = "libascendcl.so";

/// The runtime's library name on newer CANN, tried through the system loader after
/// [`LIBRARY_NAME`].
const RUNTIME_LIBRARY_NAME: &str = "libacl_rt.so";
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
        // A non-root CANN 9.x install.
        roots.push((Path::new(&home).join("Ascend/cann"), "$HOME install"));
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
    // Never `ROOT/devlib/`: on 9.x that holds link-time stubs, not the runtime.
    for name in [LIBRARY_NAME, RUNTIME_LIBRARY_NAME] {
        list.push(Candidate {
            path: PathBuf::from(name),
            source: "system loader",
        });
    }
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
    /// Which file the functions come from.
    origin: Origin,
    source: &'static str,
    /// Never closed (see the type's docs), so `table`'s pointers stay valid for the life of
    /// the process.
    _library: std::mem::ManuallyDrop<libloading::Library>,
    /// The model functions, found on first use ([`Api::models`]).
    models: std::sync::OnceLock<Result<super::model::ModelTable, super::model::ModelApiError>>,
    /// The media functions, found on first use ([`Api::dvpp`]).
    dvpp: std::sync::OnceLock<super::dvpp::DvppFunctions>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("path", &self.path)
            .field("resolved", &self.origin.path)
            .field("source", &self.source)
            .finish()
    }
}

/// Why a candidate was refused before `dlopen`, and whether that means a runtime is there
/// but broken (which the development fallback never replaces).
struct Refusal {
    reason: String,
    broken: bool,
}

/// The checks of one candidate before `dlopen` (see "Pre-checks" and "Bare names" above):
/// what to open (the path as given, or for strict loading the file behind it, resolved
/// once, so that a link changed later cannot make the report name another file) and the
/// checked file, kept open until the load is done (`None` for a bare name the system loader
/// finds elsewhere).
fn precheck(
    path: &Path,
    strict: bool,
) -> Result<(PathBuf, Option<super::elf::CheckedFile>), Refusal> {
    let broken = |reason: String| Refusal {
        reason,
        broken: true,
    };
    if path.components().count() == 1 {
        return match search_library_path(path) {
            Ok(file) => Ok((path.to_path_buf(), file)),
            Err((file, reason)) => Err(broken(library_path_refusal(&file, &reason))),
        };
    }
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Refusal {
                reason: "does not exist".to_owned(),
                broken: false,
            });
        }
        Err(e) => return Err(broken(e.to_string())),
        // A FIFO or device would block or mislead `dlopen`; not even opened.
        Ok(meta) if !meta.is_file() => return Err(broken("not a regular file".to_owned())),
        Ok(_) => {}
    }
    let open = if strict {
        std::fs::canonicalize(path).map_err(|e| Refusal {
            reason: e.to_string(),
            broken: false,
        })?
    } else {
        path.to_path_buf()
    };
    match super::elf::open_checked(&open) {
        Ok(file) => Ok((open, Some(file))),
        Err(reason) => Err(broken(reason)),
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
        // An installed runtime that exists but cannot be loaded is never replaced by the
        // development fallback: the error shows why it failed instead.
        let mut broken_install = false;
        for mut candidate in list {
            if options.is_strict() {
                candidate.source = "strict";
            }
            let mut refuse = |reason: String| {
                tried.push(TriedPath {
                    path: candidate.path.clone(),
                    source: candidate.source,
                    reason,
                })
            };
            if candidate.source == "beside the executable" && broken_install {
                refuse(
                    "not tried: an installed runtime above exists but could not be loaded, and \
                     the development fallback never replaces it"
                        .to_owned(),
                );
                continue;
            }
            if candidate.path.as_os_str().as_encoded_bytes().contains(&0) {
                refuse("contains a NUL byte".to_owned());
                continue;
            }
            let is_bare_name = candidate.path.components().count() == 1;
            let (open, checked) = match precheck(&candidate.path, options.is_strict()) {
                Ok(found) => found,
                Err(refusal) => {
                    broken_install |= refusal.broken && candidate.source != "beside the executable";
                    refuse(refusal.reason);
                    continue;
                }
            };
            // SAFETY: opening a shared library runs its initialisers. The candidates are the
            // AscendCL runtime's documented install locations, or paths the user chose,
            // trusted to be the vendor's runtime or the simulator (see "Trust" above), whose
            // initialisers have no preconditions. A file path passed the pre-checks: as
            // checked, its segments lie within the file (limits in "Pre-checks"); so did the
            // file a bare name finds on `LD_LIBRARY_PATH`, if any.
            match unsafe { libloading::Library::new(&open) } {
                Ok(library) => {
                    // SAFETY: the library is an AscendCL runtime (same reasoning), and the
                    // table is stored beside the library, which is never unloaded.
                    let table = unsafe { FunctionTable::resolve(&library, &candidate.path)? };
                    let origin = Origin::of(&table);
                    if options.is_strict()
                        && let Err(error) =
                            origin.check_strict(&open, checked.as_ref().map(|c| c.id))
                    {
                        // Kept loaded (never unloaded, see the type's docs); nothing was
                        // called.
                        std::mem::forget(library);
                        return Err(error);
                    }
                    return Ok(Api {
                        table,
                        path: candidate.path,
                        origin,
                        source: candidate.source,
                        _library: std::mem::ManuallyDrop::new(library),
                        models: std::sync::OnceLock::new(),
                        dvpp: std::sync::OnceLock::new(),
                    });
                }
                Err(e) => {
                    let reason = e.to_string();
                    // The system loader's "not found" names the library itself; any other
                    // answer (a missing dependency, ...) means it found a broken one.
                    let absent = is_bare_name
                        && reason.starts_with(&format!(
                            "{}: cannot open shared object file",
                            candidate.path.display()
                        ));
                    broken_install |= !absent && candidate.source != "beside the executable";
                    refuse(reason);
                }
            }
        }
        Err(LoadError::NotFound { tried })
    }

    /// The path (or bare name, for the system loader) the library was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file the runtime's functions were loaded from, as the kernel names its mapping
    /// (links resolved when it was opened): the real path behind a bare name found by the
    /// system loader, or behind a `latest` link of a CANN install.
    pub fn resolved_path(&self) -> &Path {
        &self.origin.path
    }

    /// Which search step found the library (e.g. `"ASCEND_ACL_LIB"`, `"system loader"`).
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The loaded library, for symbols outside the runtime's table (the simulator's).
    pub(crate) fn library(&self) -> &libloading::Library {
        &self._library
    }

    /// The model functions (`aclmdl*`) and the data-buffer functions: from the runtime
    /// library itself (older releases, board images), else from `libacl_mdl.so` beside its
    /// file, else from the `libacl_mdl.so` the system loader finds (newer CANN). Looked up
    /// once; the answer (the table, or which symbol is missing where) is kept.
    pub fn models(&self) -> Result<&super::model::ModelTable, &super::model::ModelApiError> {
        self.models
            .get_or_init(|| {
                // SAFETY: the runtime library is never unloaded (see the type's docs); a
                // model library found beside it or by the system loader is an AscendCL model
                // library, trusted as the runtime is.
                unsafe { super::model::find_model_table(self.library(), self.resolved_path()) }
            })
            .as_ref()
    }

    /// The media functions of DVPP V1 (`acldvpp*`, DV2): from the runtime library itself,
    /// then, for those it lacks, from `libacl_dvpp.so` beside its file, then from the
    /// `libacl_dvpp.so` the system loader finds. Looked up once; each function is `None` when
    /// found nowhere (a call of it is then
    /// [`CallError::Unsupported`](crate::result::CallError::Unsupported)).
    pub fn dvpp(&self) -> &super::dvpp::DvppFunctions {
        self.dvpp.get_or_init(|| {
            // SAFETY: the runtime library is never unloaded (see the type's docs); a media
            // library found beside it or by the system loader is an AscendCL media library,
            // trusted as the runtime is.
            unsafe { super::dvpp::find_dvpp_table(self.library(), self.resolved_path()) }
        })
    }

    /// Whether the loaded library provides `symbol` (required ones always do).
    pub fn has_symbol(&self, symbol: &str) -> bool {
        self.table.provides(symbol)
    }

    /// The raw function table, for calls this crate does not wrap: the function pointers
    /// themselves, on purpose (the escape hatch below the [`result`](crate::result) layer,
    /// as the C API is). Calling one is `unsafe` and checks nothing: no binding (D6), no
    /// inside-callback refusal (C8), no rule of `docs/protocol.md`.
    pub fn functions(&self) -> &FunctionTable {
        &self.table
    }
}

impl Api {
    /// Whether `requested` names the library this `Api` was loaded from: the same file
    /// (device and inode, as it is now), or, for a bare name, the same name. Strict
    /// requests also need every function to come from that file.
    fn is_the_file(&self, requested: &Path, strict: bool) -> bool {
        if requested.components().count() == 1 && !strict {
            return requested == self.path;
        }
        let same = self.origin.id.is_some() && file_id(requested) == self.origin.id;
        same && (!strict || self.origin.elsewhere.is_none())
    }
}

sync_static! {
    /// The process-wide runtime: loaded once, never unloaded (handles may outlive any scope).
    static GLOBAL: InitOnce<Api> = InitOnce::new();
}

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
        Some(requested) if !api.is_the_file(requested, options.is_strict()) => {
            Err(LoadError::AlreadyLoaded {
                loaded: api.resolved_path().to_path_buf(),
                requested: requested.to_path_buf(),
            })
        }
        _ => Ok(api),
    };
    match GLOBAL.get_or_try_init(|| Api::load(options))? {
        (api, Initialised::Here) => Ok(api),
        (api, Initialised::Before) => check(api),
    }
}
