//! The `LD_LIBRARY_PATH` part of the loader's search for a bare library name ("Bare names"
//! in [the loader's docs](super)): the directories, their `$ORIGIN` and hardware-capability
//! subdirectories, and the pre-check of each file found. Imports only the ELF checks.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How a refused file found on `LD_LIBRARY_PATH` for a bare name is reported.
pub(crate) fn library_path_refusal(file: &Path, reason: &str) -> String {
    format!(
        "{} (on LD_LIBRARY_PATH, where the system loader would open it): {reason}",
        file.display()
    )
}

/// The pre-check of a bare library name (see "Bare names" in the module docs): the files
/// the system loader may open for `name` in the `LD_LIBRARY_PATH` part of its search, in
/// its order, each checked as a file path is ([`crate::sys::elf::open_verified`]).
///
/// Files glibc passes over (absent, no permission, another class or machine) are passed
/// over here too; any other file found is checked, and a refusal ends the search (`Err`:
/// the file and why). In each directory the hardware-capability subdirectories come first
/// (every one glibc may use on this architecture, whatever this CPU supports, so more than
/// glibc opens), then the directory itself, where glibc stops at the latest: the search
/// ends at the first directory holding the name itself. `Ok(Some)`: the first file found,
/// checked, to keep open through the `dlopen`; `Ok(None)`: nothing on `LD_LIBRARY_PATH`
/// (the system loader goes on with `ld.so.cache` and the default directories).
pub(crate) fn search_library_path(
    name: &Path,
) -> Result<Option<crate::sys::elf::CheckedFile>, (PathBuf, String)> {
    let subdirs = hwcaps_subdirs();
    let mut first = None;
    for dir in library_path_dirs() {
        for sub in subdirs.iter().map(String::as_str).chain([""]) {
            let path = dir.join(sub).join(name);
            match crate::sys::elf::open_verified(&path) {
                Ok(file) if sub.is_empty() => return Ok(Some(first.unwrap_or(file))),
                Ok(file) => {
                    first.get_or_insert(file);
                }
                Err(refused) if refused.passed_over => {}
                Err(refused) => return Err((path, refused.reason)),
            }
        }
    }
    Ok(first)
}

/// The directories of `LD_LIBRARY_PATH` as glibc's loader uses them: the value the process
/// started with (the loader reads it once, at startup: `/proc/self/environ`, else the
/// current environment), the last one if set twice, ignored for a set-user-ID or otherwise
/// secure program; split at `:` and `;`, an empty entry meaning the current directory;
/// `$ORIGIN` (`${ORIGIN}`) replaced by the executable's directory. An entry naming `$LIB`
/// or `$PLATFORM`, whose values only the loader knows, is left out.
pub(super) fn library_path_dirs() -> Vec<PathBuf> {
    use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
    // SAFETY: `getauxval` only reads the auxiliary vector; 0 for an absent entry.
    if unsafe { libc::getauxval(libc::AT_SECURE) } != 0 {
        return Vec::new();
    }
    const VAR: &[u8] = b"LD_LIBRARY_PATH=";
    let value = match std::fs::read("/proc/self/environ") {
        Ok(environ) => environ
            .split(|&b| b == 0)
            .rev()
            .find_map(|entry| entry.strip_prefix(VAR))
            .map(<[u8]>::to_vec),
        Err(_) => std::env::var_os("LD_LIBRARY_PATH").map(OsString::into_vec),
    };
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Vec::new();
    };
    let origin = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf));
    value
        .split(|&b| b == b':' || b == b';')
        .filter_map(|entry| {
            let entry = expand_origin(entry, origin.as_deref())?;
            Some(if entry.is_empty() {
                PathBuf::from(".")
            } else {
                PathBuf::from(std::ffi::OsStr::from_bytes(&entry))
            })
        })
        .collect()
}

/// `entry` with glibc's dynamic string tokens replaced: `$ORIGIN` / `${ORIGIN}` by
/// `origin`; `None` when it names one this crate cannot replace (`$LIB`, `$PLATFORM`, or
/// `$ORIGIN` without a known executable). Any other `$` is kept, as glibc keeps it.
pub(super) fn expand_origin(entry: &[u8], origin: Option<&Path>) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut out = Vec::with_capacity(entry.len());
    let mut rest = entry;
    while let Some(at) = rest.iter().position(|&b| b == b'$') {
        out.extend_from_slice(&rest[..at]);
        let after = &rest[at + 1..];
        let token = ["ORIGIN", "PLATFORM", "LIB"].into_iter().find_map(|name| {
            let name = name.as_bytes();
            if let Some(tail) = after
                .strip_prefix(b"{")
                .and_then(|t| t.strip_prefix(name))
                .and_then(|t| t.strip_prefix(b"}"))
            {
                return Some((name, tail));
            }
            let tail = after.strip_prefix(name)?;
            let continues = tail
                .first()
                .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_');
            (!continues).then_some((name, tail))
        });
        match token {
            Some((b"ORIGIN", tail)) => {
                out.extend_from_slice(origin?.as_os_str().as_bytes());
                rest = tail;
            }
            Some(_) => return None,
            None => {
                out.push(b'$');
                rest = after;
            }
        }
    }
    out.extend_from_slice(rest);
    Some(out)
}

/// The subdirectories glibc searches, before the directory itself, in each directory of
/// `LD_LIBRARY_PATH`, in its order: `glibc-hwcaps/<level>` (glibc 2.33 and later), then
/// the legacy ones (glibc 2.36 and earlier): every combination of `tls`, a platform and the
/// capabilities that matter, each a subdirectory of the one before. All that this
/// architecture may use, whatever this CPU supports (which only the loader knows).
pub(super) fn hwcaps_subdirs() -> Vec<String> {
    let (levels, platforms, capabilities): (&[&str], &[&str], &[&str]) =
        if cfg!(target_arch = "x86_64") {
            (
                &["x86-64-v4", "x86-64-v3", "x86-64-v2"],
                &["haswell", "xeon_phi"],
                &["avx512_1", "x86_64"],
            )
        } else if cfg!(target_arch = "aarch64") {
            (&["atomics"], &[], &["atomics"])
        } else {
            (&[], &[], &[])
        };
    let mut subdirs: Vec<String> = levels.iter().map(|l| format!("glibc-hwcaps/{l}")).collect();
    // glibc's order: the combinations as binary numbers with `tls` as the highest bit, from
    // all set down to none (the directory itself, not listed here). One platform at most
    // applies to a CPU: each comes where glibc would put the one it knows.
    for tls in [true, false] {
        for platform in platforms.iter().map(Some).chain([None]) {
            for mask in (0..1usize << capabilities.len()).rev() {
                let mut parts: Vec<&str> = Vec::new();
                parts.extend(tls.then_some("tls"));
                parts.extend(platform.copied());
                parts.extend(
                    capabilities
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| mask & (1 << (capabilities.len() - 1 - i)) != 0)
                        .map(|(_, c)| *c),
                );
                if !parts.is_empty() {
                    subdirs.push(parts.join("/"));
                }
            }
        }
    }
    subdirs
}
