//! The media functions of DVPP V1 (`acldvpp*`, DV1-DV11), resolved apart from the runtime's
//! table: they live in `libacl_dvpp.so` beside the runtime (header `acl/ops/acl_dvpp.h`), and
//! in the runtime library itself in this project's simulator (DV2). Every one is optional: a
//! runtime without them still loads, and a call of one it lacks is
//! [`CallError::Unsupported`](crate::result::CallError::Unsupported), as for the optional
//! functions of the runtime's table.

use std::ffi::c_void;
use std::path::{Path, PathBuf};

use super::bindings::{
    aclError, acldvppChannelDesc, acldvppChannelDescParamType, acldvppJpegFormat, acldvppPicDesc,
    acldvppPixelFormat, acldvppResizeConfig, aclrtStream,
};

/// The name of the media library (DV2).
pub const DVPP_LIBRARY: &str = "libacl_dvpp.so";

macro_rules! dvpp_table {
    ($($name:ident : fn($($arg:ty),* $(,)?) -> $ret:ty;)*) => {
        /// The media functions, each resolved on its own: `None` when neither the runtime
        /// nor the media library exports it.
        #[allow(non_snake_case)]
        #[derive(Clone, Copy)]
        pub struct DvppTable {
            $(
                #[doc = concat!("`", stringify!($name), "` (optional).")]
                pub $name: Option<unsafe extern "C" fn($($arg),*) -> $ret>,
            )*
        }

        $(const _: unsafe extern "C" fn($($arg),*) -> $ret = super::functions::$name;)*

        /// Every symbol of the media table (all optional, DV2).
        pub const DVPP_SYMBOLS: &[&str] = &[$(stringify!($name)),*];

        impl std::fmt::Debug for DvppTable {
            /// The functions by name and address (`None`: not found).
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_map()
                    $(.entry(&stringify!($name), &self.$name.map(|p| p as *const ())))*
                    .finish()
            }
        }

        impl DvppTable {
            /// Whether `symbol` was resolved.
            pub fn provides(&self, symbol: &str) -> bool {
                match symbol {
                    $(stringify!($name) => self.$name.is_some(),)*
                    _ => false,
                }
            }

            /// Whether every function is resolved.
            fn complete(&self) -> bool {
                true $(&& self.$name.is_some())*
            }

            /// Resolves what `libraries` export, each function from the first that has it;
            /// keeps what `self` already has.
            ///
            /// # Safety
            /// Each library is an AscendCL runtime or media library whose exported functions
            /// have the prototypes of `include/ascendcl.h`, never unloaded while the table is
            /// used.
            unsafe fn fill_from(&mut self, libraries: &[&libloading::Library]) {
                $(
                    if self.$name.is_none() {
                        self.$name = libraries.iter().find_map(|library| {
                            // SAFETY: the caller's contract: the symbol, if exported, has
                            // this prototype.
                            unsafe {
                                library
                                    .get::<unsafe extern "C" fn($($arg),*) -> $ret>(
                                        concat!(stringify!($name), "\0").as_bytes(),
                                    )
                                    .ok()
                                    .map(|symbol| *symbol)
                            }
                        });
                    }
                )*
            }

            /// A table with nothing resolved.
            const fn empty() -> DvppTable {
                DvppTable { $($name: None,)* }
            }
        }
    };
}

dvpp_table! {
    acldvppMalloc: fn(*mut *mut c_void, usize) -> aclError;
    acldvppFree: fn(*mut c_void) -> aclError;
    acldvppCreateChannelDesc: fn() -> *mut acldvppChannelDesc;
    acldvppDestroyChannelDesc: fn(*mut acldvppChannelDesc) -> aclError;
    acldvppSetChannelDescMode: fn(*mut acldvppChannelDesc, u32) -> aclError;
    acldvppSetChannelDescParam: fn(*mut acldvppChannelDesc, acldvppChannelDescParamType, usize, *const c_void) -> aclError;
    acldvppCreateChannel: fn(*mut acldvppChannelDesc) -> aclError;
    acldvppDestroyChannel: fn(*mut acldvppChannelDesc) -> aclError;
    acldvppCreatePicDesc: fn() -> *mut acldvppPicDesc;
    acldvppDestroyPicDesc: fn(*mut acldvppPicDesc) -> aclError;
    acldvppSetPicDescData: fn(*mut acldvppPicDesc, *mut c_void) -> aclError;
    acldvppSetPicDescSize: fn(*mut acldvppPicDesc, u32) -> aclError;
    acldvppSetPicDescFormat: fn(*mut acldvppPicDesc, acldvppPixelFormat) -> aclError;
    acldvppSetPicDescWidth: fn(*mut acldvppPicDesc, u32) -> aclError;
    acldvppSetPicDescHeight: fn(*mut acldvppPicDesc, u32) -> aclError;
    acldvppSetPicDescWidthStride: fn(*mut acldvppPicDesc, u32) -> aclError;
    acldvppSetPicDescHeightStride: fn(*mut acldvppPicDesc, u32) -> aclError;
    acldvppGetPicDescData: fn(*const acldvppPicDesc) -> *mut c_void;
    acldvppGetPicDescSize: fn(*const acldvppPicDesc) -> u32;
    acldvppGetPicDescFormat: fn(*const acldvppPicDesc) -> acldvppPixelFormat;
    acldvppGetPicDescWidth: fn(*const acldvppPicDesc) -> u32;
    acldvppGetPicDescHeight: fn(*const acldvppPicDesc) -> u32;
    acldvppGetPicDescWidthStride: fn(*const acldvppPicDesc) -> u32;
    acldvppGetPicDescHeightStride: fn(*const acldvppPicDesc) -> u32;
    acldvppGetPicDescRetCode: fn(*const acldvppPicDesc) -> u32;
    acldvppCreateResizeConfig: fn() -> *mut acldvppResizeConfig;
    acldvppDestroyResizeConfig: fn(*mut acldvppResizeConfig) -> aclError;
    acldvppSetResizeConfigInterpolation: fn(*mut acldvppResizeConfig, u32) -> aclError;
    acldvppGetResizeConfigInterpolation: fn(*const acldvppResizeConfig) -> u32;
    acldvppJpegGetImageInfo: fn(*const c_void, u32, *mut u32, *mut u32, *mut i32) -> aclError;
    acldvppJpegGetImageInfoV2: fn(*const c_void, u32, *mut u32, *mut u32, *mut i32, *mut acldvppJpegFormat) -> aclError;
    acldvppJpegPredictDecSize: fn(*const c_void, u32, acldvppPixelFormat, *mut u32) -> aclError;
    acldvppJpegDecodeAsync: fn(*mut acldvppChannelDesc, *const c_void, u32, *mut acldvppPicDesc, aclrtStream) -> aclError;
    acldvppVpcResizeAsync: fn(*mut acldvppChannelDesc, *mut acldvppPicDesc, *mut acldvppPicDesc, *mut acldvppResizeConfig, aclrtStream) -> aclError;
}

/// The media table of a runtime, and where its functions were looked for.
#[derive(Debug)]
pub struct DvppFunctions {
    /// The functions (each `None` when found nowhere).
    pub table: DvppTable,
    /// The libraries searched, in order, with the reason a media library was not opened
    /// (a pre-check's, see [the loader's](super::loader#pre-checks), or the loader's answer).
    pub tried: Vec<(PathBuf, Option<String>)>,
}

/// Finds the media functions for the runtime library `runtime` (opened from `runtime_file`):
/// in it, then, for those it lacks, in `libacl_dvpp.so` in the same directory, then in the
/// `libacl_dvpp.so` the system loader finds (DV2). A media library that is opened is never
/// closed (its functions are kept in the table for the life of the process).
///
/// # Safety
/// `runtime` is an AscendCL runtime never unloaded while the table is used, and a
/// `libacl_dvpp.so` found this way is an AscendCL media library (the prototypes of
/// `include/ascendcl.h`).
pub(crate) unsafe fn find_dvpp_table(
    runtime: &libloading::Library,
    runtime_file: &Path,
) -> DvppFunctions {
    let mut table = DvppTable::empty();
    let mut tried = vec![(runtime_file.to_path_buf(), None)];
    // SAFETY: the caller's contract.
    unsafe { table.fill_from(&[runtime]) };
    if table.complete() {
        return DvppFunctions { table, tried };
    }
    let beside = runtime_file
        .parent()
        .map(|dir| dir.join(DVPP_LIBRARY))
        .filter(|path| path.is_file());
    let candidates = beside
        .into_iter()
        .chain(std::iter::once(PathBuf::from(DVPP_LIBRARY)));
    for candidate in candidates {
        // Checked as the model library is (the loader's "Pre-checks" and "Bare names").
        let checked = if candidate.components().count() > 1 {
            match super::elf::open_checked(&candidate) {
                Ok(file) => Some(file),
                Err(reason) => {
                    tried.push((candidate, Some(reason)));
                    continue;
                }
            }
        } else {
            match super::loader::library_path::search_library_path(&candidate) {
                Ok(file) => file,
                Err((file, reason)) => {
                    let reason = super::loader::library_path::library_path_refusal(&file, &reason);
                    tried.push((candidate, Some(reason)));
                    continue;
                }
            }
        };
        // SAFETY: opening a shared library runs its initialisers: the media library sits
        // beside the runtime or is the one the system loader finds for the documented name,
        // trusted as the runtime is; a file beside it, or on `LD_LIBRARY_PATH` for the bare
        // name, passed the pre-checks.
        let opened = unsafe { libloading::Library::new(&candidate) };
        drop(checked);
        match opened {
            Ok(library) => {
                // Never unloaded: its functions may be in the table.
                let library: &'static libloading::Library = Box::leak(Box::new(library));
                // SAFETY: the caller's contract.
                unsafe { table.fill_from(&[library]) };
                tried.push((candidate, None));
                if table.complete() {
                    break;
                }
            }
            Err(e) => tried.push((candidate, Some(e.to_string()))),
        }
    }
    DvppFunctions { table, tried }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_table_provides_nothing_and_names_every_symbol() {
        let table = DvppTable::empty();
        assert_eq!(DVPP_SYMBOLS.len(), 34);
        assert!(DVPP_SYMBOLS.iter().all(|s| !table.provides(s)));
        assert!(!table.complete());
        assert!(!table.provides("aclrtMalloc"));
    }
}
