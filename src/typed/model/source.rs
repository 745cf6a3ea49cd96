//! Where a model comes from ([`ModelSource`]: a file, a file with caller-allocated memory,
//! or bytes; MD2, MD3), what a loaded model keeps alive, and the model file check.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use crate::typed::error::{Error, ModelFileProblem, Result};
use crate::typed::memory::DeviceBuffer;

/// Where a model comes from.
///
/// ```no_run
/// # use ascend_typestate::{Acl, MallocPolicy, ModelSource};
/// # let acl = Acl::init()?;
/// # let device = acl.set_device(0)?;
/// # let ctx = device.create_context()?;
/// // The runtime allocates the model's memory:
/// let model = ctx.load_model(ModelSource::file("resnet50.om"))?;
/// # drop(model);
/// // Memory allocated at start-up, owned by the model until it is unloaded (MD2):
/// let (work, weight) = ctx.model_memory_size("resnet50.om")?;
/// let source = ModelSource::file_with_memory(
///     "resnet50.om",
///     ctx.alloc::<u8>(work, MallocPolicy::HugeFirst)?,
///     ctx.alloc::<u8>(weight, MallocPolicy::HugeFirst)?,
/// );
/// let model = ctx.load_model(source)?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
pub struct ModelSource<'ctx> {
    pub(super) kind: SourceKind<'ctx>,
}

pub(super) enum SourceKind<'ctx> {
    File(PathBuf),
    FileWithMemory {
        path: PathBuf,
        work: DeviceBuffer<'ctx, u8>,
        weight: DeviceBuffer<'ctx, u8>,
    },
    Bytes(Vec<u8>),
}

impl<'ctx> ModelSource<'ctx> {
    /// `aclmdlLoadFromFile`: the runtime allocates the model's memory.
    pub fn file(path: impl AsRef<Path>) -> ModelSource<'ctx> {
        ModelSource {
            kind: SourceKind::File(path.as_ref().to_path_buf()),
        }
    }

    /// `aclmdlLoadFromFileWithMem` (MD2): work and weight memory of at least the sizes
    /// [`Context::model_memory_size`](crate::Context::model_memory_size) reports, allocated
    /// in the loading context. The model owns them until it is unloaded, so they can be
    /// neither freed nor reused while it is loaded, even if the model is leaked.
    pub fn file_with_memory(
        path: impl AsRef<Path>,
        work: DeviceBuffer<'ctx, u8>,
        weight: DeviceBuffer<'ctx, u8>,
    ) -> ModelSource<'ctx> {
        ModelSource {
            kind: SourceKind::FileWithMemory {
                path: path.as_ref().to_path_buf(),
                work,
                weight,
            },
        }
    }

    /// `aclmdlLoadFromMem` (MD3): the model's bytes, kept by the model until it is unloaded.
    /// In device run mode (on the board) they are copied to device memory first, as the
    /// runtime requires there.
    pub fn bytes(bytes: Vec<u8>) -> ModelSource<'ctx> {
        ModelSource {
            kind: SourceKind::Bytes(bytes),
        }
    }
}

impl<'ctx, P: AsRef<Path>> From<P> for ModelSource<'ctx> {
    fn from(path: P) -> ModelSource<'ctx> {
        ModelSource::file(path)
    }
}

impl std::fmt::Debug for ModelSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            SourceKind::File(path) => f.debug_tuple("File").field(path).finish(),
            SourceKind::FileWithMemory { path, work, weight } => f
                .debug_struct("FileWithMemory")
                .field("path", path)
                .field("work", &work.len())
                .field("weight", &weight.len())
                .finish(),
            SourceKind::Bytes(bytes) => f.debug_tuple("Bytes").field(&bytes.len()).finish(),
        }
    }
}

/// What a loaded model keeps alive until it is unloaded (MD2, MD3).
pub(super) enum ModelMemory<'ctx> {
    Runtime,
    Owned {
        _work: DeviceBuffer<'ctx, u8>,
        _weight: DeviceBuffer<'ctx, u8>,
    },
    /// The bytes of `aclmdlLoadFromMem` in host run mode, held, never read (MD3).
    HostBytes {
        _bytes: Box<[u8]>,
    },
    /// Their copy in device memory, in device run mode (MD3).
    DeviceBytes {
        _device: DeviceBuffer<'ctx, u8>,
    },
}

/// Checks that `path` names a regular file the runtime can read, and converts it for the C
/// API. A FIFO, a device or a directory is refused here: the runtime would block reading it,
/// never reach its end, or fail without naming the file. (The file may still change before
/// the runtime opens it; what the runtime then does is its own.)
pub(super) fn model_path(path: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    let refuse = |why| Error::ModelFile {
        path: path.into(),
        why,
    };
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return Err(refuse(ModelFileProblem::NulByte));
    };
    // `metadata` follows links: what the runtime would open.
    let (kind, size) = match std::fs::metadata(path) {
        Ok(metadata) => (metadata.file_type(), metadata.len()),
        Err(error) => {
            return Err(refuse(match error.kind() {
                std::io::ErrorKind::NotFound => ModelFileProblem::NotFound,
                std::io::ErrorKind::PermissionDenied => ModelFileProblem::PermissionDenied,
                _ => ModelFileProblem::Unreadable,
            }));
        }
    };
    if kind.is_dir() {
        return Err(refuse(ModelFileProblem::Directory));
    }
    if !kind.is_file() {
        return Err(refuse(ModelFileProblem::NotRegularFile));
    }
    if size == 0 {
        // Empty, or a file whose size says nothing about what it yields (`/proc`): no model.
        return Err(refuse(ModelFileProblem::Empty));
    }
    Ok(c_path)
}
