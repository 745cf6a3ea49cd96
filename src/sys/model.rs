//! The model functions (`aclmdl*`, MD1-MD13) and the data-buffer functions, resolved apart
//! from the runtime's table: on older releases and board images they are in
//! `libascendcl.so` itself, on newer CANN in `libacl_mdl.so` beside `libacl_rt.so`. A runtime
//! without them still loads; only the model API is then unavailable.

use std::ffi::{c_char, c_void};
use std::path::{Path, PathBuf};

use super::bindings::aclrtStream;
use super::bindings::{
    aclDataBuffer, aclDataType, aclError, aclFormat, aclmdlBatch, aclmdlDataset, aclmdlDesc,
    aclmdlIODims,
};

/// The name of the model library of newer CANN releases.
pub const MODEL_LIBRARY: &str = "libacl_mdl.so";

macro_rules! model_table {
    ($($name:ident : fn($($arg:ty),* $(,)?) -> $ret:ty;)*) => {
        /// The model and data-buffer functions, all resolved (one missing makes the whole
        /// table unavailable: [`ModelApiError`]).
        #[allow(non_snake_case)]
        #[derive(Clone, Copy)]
        pub struct ModelTable {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($arg),*) -> $ret,
            )*
        }

        $(const _: unsafe extern "C" fn($($arg),*) -> $ret = super::functions::$name;)*

        /// Every symbol of the model table.
        pub const MODEL_SYMBOLS: &[&str] = &[$(stringify!($name)),*];

        impl std::fmt::Debug for ModelTable {
            /// The functions by name and address.
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_map()
                    $(.entry(&stringify!($name), &(self.$name as *const ())))*
                    .finish()
            }
        }

        impl ModelTable {
            /// Resolves every function from the first of `libraries` that exports it.
            ///
            /// # Safety
            /// Each library is an AscendCL runtime or model library whose exported functions
            /// have the prototypes of `include/ascendcl.h`, never unloaded while the table
            /// is used.
            unsafe fn resolve(libraries: &[&libloading::Library]) -> Result<Self, &'static str> {
                Ok(ModelTable {
                    $(
                        $name: {
                            let found = libraries.iter().find_map(|library| {
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
                            match found {
                                Some(function) => function,
                                None => return Err(stringify!($name)),
                            }
                        },
                    )*
                })
            }
        }
    };
}

model_table! {
    aclmdlCreateDesc: fn() -> *mut aclmdlDesc;
    aclmdlDestroyDesc: fn(*mut aclmdlDesc) -> aclError;
    aclmdlGetDesc: fn(*mut aclmdlDesc, u32) -> aclError;
    aclmdlGetNumInputs: fn(*mut aclmdlDesc) -> usize;
    aclmdlGetNumOutputs: fn(*mut aclmdlDesc) -> usize;
    aclmdlGetInputSizeByIndex: fn(*mut aclmdlDesc, usize) -> usize;
    aclmdlGetOutputSizeByIndex: fn(*mut aclmdlDesc, usize) -> usize;
    aclmdlGetInputIndexByName: fn(*const aclmdlDesc, *const c_char, *mut usize) -> aclError;
    aclmdlGetInputDims: fn(*const aclmdlDesc, usize, *mut aclmdlIODims) -> aclError;
    aclmdlGetOutputDims: fn(*const aclmdlDesc, usize, *mut aclmdlIODims) -> aclError;
    aclmdlGetCurOutputDims: fn(*const aclmdlDesc, usize, *mut aclmdlIODims) -> aclError;
    aclmdlGetDynamicBatch: fn(*const aclmdlDesc, *mut aclmdlBatch) -> aclError;
    aclmdlGetInputDataType: fn(*const aclmdlDesc, usize) -> aclDataType;
    aclmdlGetOutputDataType: fn(*const aclmdlDesc, usize) -> aclDataType;
    aclmdlGetInputFormat: fn(*const aclmdlDesc, usize) -> aclFormat;
    aclmdlGetOutputFormat: fn(*const aclmdlDesc, usize) -> aclFormat;
    aclmdlCreateDataset: fn() -> *mut aclmdlDataset;
    aclmdlDestroyDataset: fn(*const aclmdlDataset) -> aclError;
    aclmdlAddDatasetBuffer: fn(*mut aclmdlDataset, *mut aclDataBuffer) -> aclError;
    aclmdlGetDatasetNumBuffers: fn(*const aclmdlDataset) -> usize;
    aclmdlGetDatasetBuffer: fn(*const aclmdlDataset, usize) -> *mut aclDataBuffer;
    aclmdlQuerySize: fn(*const c_char, *mut usize, *mut usize) -> aclError;
    aclmdlLoadFromFile: fn(*const c_char, *mut u32) -> aclError;
    aclmdlLoadFromMem: fn(*const c_void, usize, *mut u32) -> aclError;
    aclmdlLoadFromFileWithMem: fn(*const c_char, *mut u32, *mut c_void, usize, *mut c_void, usize) -> aclError;
    aclmdlLoadFromMemWithMem: fn(*const c_void, usize, *mut u32, *mut c_void, usize, *mut c_void, usize) -> aclError;
    aclmdlExecute: fn(u32, *const aclmdlDataset, *mut aclmdlDataset) -> aclError;
    aclmdlExecuteAsync: fn(u32, *const aclmdlDataset, *mut aclmdlDataset, aclrtStream) -> aclError;
    aclmdlUnload: fn(u32) -> aclError;
    aclmdlSetDynamicBatchSize: fn(u32, *mut aclmdlDataset, usize, u64) -> aclError;
    aclmdlSetDynamicHWSize: fn(u32, *mut aclmdlDataset, usize, u64, u64) -> aclError;
    aclCreateDataBuffer: fn(*mut c_void, usize) -> *mut aclDataBuffer;
    aclDestroyDataBuffer: fn(*const aclDataBuffer) -> aclError;
    aclGetDataBufferAddr: fn(*const aclDataBuffer) -> *mut c_void;
    aclGetDataBufferSizeV2: fn(*const aclDataBuffer) -> usize;
}

/// The model API could not be found: `symbol` is exported by none of the libraries tried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelApiError {
    /// The first model function none of them exports.
    pub symbol: &'static str,
    /// Where it was looked for, in order, with the reason a model library was not opened
    /// (a pre-check's, see [the loader's](super::loader#pre-checks), or the loader's answer).
    pub tried: Vec<(PathBuf, Option<String>)>,
}

impl std::error::Error for ModelApiError {}

impl std::fmt::Display for ModelApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the model API is unavailable: `{}` is exported by none of:",
            self.symbol
        )?;
        for (path, failure) in &self.tried {
            match failure {
                Some(reason) => write!(f, " {} (not opened: {reason});", path.display())?,
                None => write!(f, " {};", path.display())?,
            }
        }
        Ok(())
    }
}

/// Finds the model functions for the runtime library `runtime` (opened from
/// `runtime_file`): in it, else in `libacl_mdl.so` in the same directory, else in the
/// `libacl_mdl.so` the system loader finds. A model library that is opened is never closed
/// (its functions are kept in the table for the life of the process).
///
/// # Safety
/// `runtime` is an AscendCL runtime never unloaded while the table is used, and a
/// `libacl_mdl.so` found this way is an AscendCL model library (the prototypes of
/// `include/ascendcl.h`).
pub(crate) unsafe fn find_model_table(
    runtime: &libloading::Library,
    runtime_file: &Path,
) -> Result<ModelTable, ModelApiError> {
    let mut tried = vec![(runtime_file.to_path_buf(), None)];
    // SAFETY: the caller's contract.
    let mut symbol = match unsafe { ModelTable::resolve(&[runtime]) } {
        Ok(table) => return Ok(table),
        Err(symbol) => symbol,
    };
    let beside = runtime_file
        .parent()
        .map(|dir| dir.join(MODEL_LIBRARY))
        .filter(|path| path.is_file());
    let candidates = beside
        .into_iter()
        .chain(std::iter::once(PathBuf::from(MODEL_LIBRARY)));
    for candidate in candidates {
        // The file beside the runtime is checked as the runtime's is (the loader's
        // "Pre-checks"); for the bare name, the file the system loader would take from
        // `LD_LIBRARY_PATH` (the loader's "Bare names").
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
        // SAFETY: opening a shared library runs its initialisers: the model library sits
        // beside the runtime or is the one the system loader finds for the documented name,
        // trusted as the runtime is; a file beside it, or on `LD_LIBRARY_PATH` for the bare
        // name, passed the pre-checks.
        let opened = unsafe { libloading::Library::new(&candidate) };
        drop(checked);
        match opened {
            Ok(library) => {
                // Never unloaded: its functions may be in the table.
                let library: &'static libloading::Library = Box::leak(Box::new(library));
                // SAFETY: the caller's contract; the runtime first (the data-buffer
                // functions live there on split installs), then the model library.
                match unsafe { ModelTable::resolve(&[runtime, library]) } {
                    Ok(table) => return Ok(table),
                    Err(missing) => {
                        // The model library lacks it: name what is missing there.
                        symbol = missing;
                        tried.push((candidate, None));
                    }
                }
            }
            Err(e) => tried.push((candidate, Some(e.to_string()))),
        }
    }
    Err(ModelApiError { symbol, tried })
}
