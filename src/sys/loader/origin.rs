//! Where a loaded runtime's functions really come from (`/proc/self/maps` and `dladdr`):
//! what strict loading and [`Api::library`](crate::Acl::library) check. Imports only the
//! function table.

use std::path::{Path, PathBuf};

use super::error::LoadError;
use crate::sys::FunctionTable;

/// A file's identity: device and inode.
pub(super) type FileId = (u64, u64);

pub(super) fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Where a loaded runtime's functions come from.
#[derive(Clone, Debug)]
pub(super) struct Origin {
    /// The file defining `aclInit`, as the kernel names its mapping.
    pub(super) path: PathBuf,
    /// Its identity, when `/proc/self/maps` could tell.
    pub(super) id: Option<FileId>,
    /// The first function defined in another file than `aclInit`, if any: (name, file).
    pub(super) elsewhere: Option<(&'static str, PathBuf)>,
}

impl Origin {
    pub(super) fn of(table: &FunctionTable) -> Origin {
        let maps = Mappings::read();
        let init = table.aclInit as usize;
        let Some(home) = maps.file_of(init) else {
            // No /proc: the loader's own name for the file, links resolved now.
            let path = defining_file(init).unwrap_or_default();
            return Origin {
                id: file_id(&path),
                path,
                elsewhere: None,
            };
        };
        let elsewhere =
            table
                .addresses()
                .into_iter()
                .find_map(|(name, address)| match maps.file_of(address) {
                    Some(file) if file.id == home.id => None,
                    Some(file) => Some((name, file.path)),
                    None => Some((name, PathBuf::from("an unknown mapping"))),
                });
        Origin {
            path: home.path,
            id: Some(home.id),
            elsewhere,
        }
    }

    /// Strict loading: every function defined in the file `requested` (resolved), which
    /// is the file `checked` (device and inode) that passed the pre-checks.
    pub(super) fn check_strict(
        &self,
        requested: &Path,
        checked: Option<FileId>,
    ) -> Result<(), LoadError> {
        let resolved_elsewhere = |symbol: &'static str, resolved: PathBuf| {
            Err(LoadError::ResolvedElsewhere {
                requested: requested.to_path_buf(),
                symbol,
                resolved,
            })
        };
        if self.id.is_none() || self.id != checked {
            return resolved_elsewhere("aclInit", self.path.clone());
        }
        match &self.elsewhere {
            Some((symbol, file)) => resolved_elsewhere(symbol, file.clone()),
            None => Ok(()),
        }
    }
}

/// One file-backed mapping of this process.
pub(super) struct Mapping {
    start: usize,
    end: usize,
    pub(super) id: FileId,
    pub(super) path: PathBuf,
}

/// The file-backed mappings of this process (`/proc/self/maps`).
pub(super) struct Mappings(Vec<Mapping>);

/// A mapped file: its identity and the kernel's name for it.
pub(super) struct MappedFile {
    pub(super) id: FileId,
    pub(super) path: PathBuf,
}

impl Mappings {
    fn read() -> Mappings {
        let text = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        Mappings(text.lines().filter_map(Mapping::parse).collect())
    }

    fn file_of(&self, address: usize) -> Option<MappedFile> {
        self.0
            .iter()
            .find(|m| (m.start..m.end).contains(&address))
            .map(|m| MappedFile {
                id: m.id,
                path: m.path.clone(),
            })
    }
}

impl Mapping {
    /// `start-end perms offset major:minor inode path` (hex, hex, decimal inode).
    fn parse(line: &str) -> Option<Mapping> {
        let mut fields = line.splitn(6, ' ');
        let (range, _perms, _offset, dev, inode) = (
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
        );
        let path = fields.next()?.trim_start();
        let inode: u64 = inode.parse().ok()?;
        if inode == 0 || !path.starts_with('/') {
            return None;
        }
        let (start, end) = range.split_once('-')?;
        let (major, minor) = dev.split_once(':')?;
        let major = u32::from_str_radix(major, 16).ok()?;
        let minor = u32::from_str_radix(minor, 16).ok()?;
        Some(Mapping {
            start: usize::from_str_radix(start, 16).ok()?,
            end: usize::from_str_radix(end, 16).ok()?,
            id: (libc::makedev(major, minor), inode),
            path: PathBuf::from(path),
        })
    }
}

/// The file that defines the code at `address`, as the dynamic loader names it, with links
/// resolved now; `None` if the loader cannot tell. Only used without `/proc`.
pub(super) fn defining_file(address: usize) -> Option<PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: `dladdr` only reads the loader's tables and writes `info`; any address is
    // allowed (an unknown one returns 0).
    let found = unsafe { libc::dladdr(address as *const std::ffi::c_void, info.as_mut_ptr()) };
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
    let path = Path::new(std::ffi::OsStr::from_bytes(name.to_bytes()));
    Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
}
