//! Why the runtime library could not be loaded: [`LoadError`] and the candidates it lists
//! ([`TriedPath`]). Part of the loader, below every other layer: it imports nothing of the
//! crate.

use std::fmt;
use std::path::PathBuf;

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
