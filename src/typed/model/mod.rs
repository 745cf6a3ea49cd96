//! Model execution (MD1-MD13): a loaded model bound to its context, its description, the
//! device memory of its inputs and outputs, synchronous execution here and asynchronous
//! execution in a [`Pipeline`](crate::Pipeline) ([`Launch::execute`](crate::Launch::execute)).

use std::ffi::{CString, c_void};
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, size_of};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::sys::bindings::{aclDataBuffer, aclmdlDataset, aclmdlDesc, aclrtStream};
use crate::typed::context::Context;
use crate::typed::dtype::{DataType, Element, Format};
use crate::typed::error::{Error, ModelFileProblem, ModelTensor, Result};
use crate::typed::handle::{Failed, release_on_drop, report_drop_error, retry_cleanup};
use crate::typed::memory::{DeviceBuffer, MallocPolicy};

mod scoped;
use scoped::ScopedDatasets;
pub use scoped::{Executed, ModelInput, ModelOutput};

/// The name of the extra input through which a dynamic-batch model receives its batch
/// (`ACL_DYNAMIC_TENSOR_NAME`).
pub const DYNAMIC_BATCH_INPUT: &str = "ascend_mbatch_shape_data";

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Static {}
    impl Sealed for super::Dynamic {}
}

/// What a [`Model`] was compiled for: [`Static`] or [`Dynamic`] shapes (sealed).
pub trait ModelKind: sealed::Sealed + 'static {
    /// Whether the model has batch gears.
    const DYNAMIC: bool;
}

/// A model compiled for fixed shapes.
///
/// Allows: [`Model::execute`] and [`Launch::execute`](crate::Launch::execute).
/// Entered by [`Context::load_model`]; a model with batch gears is refused there
/// ([`Error::WrongModelKind`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Static;

/// A model compiled with dynamic batch gears (ATC's `--dynamic_batch_size`).
///
/// Allows: [`Model::execute_batch`] and
/// [`Launch::execute_batch`](crate::Launch::execute_batch), each naming one of the
/// [`gears`](Model::gears): the batch is set on the input dataset before every execution, so
/// an execution without one does not compile (MD11). Entered by
/// [`Context::load_dynamic_model`]; a model without gears is refused there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dynamic;

impl ModelKind for Static {
    const DYNAMIC: bool = false;
}

impl ModelKind for Dynamic {
    const DYNAMIC: bool = true;
}

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
    kind: SourceKind<'ctx>,
}

enum SourceKind<'ctx> {
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
    /// [`Context::model_memory_size`] reports, allocated in the loading context. The model
    /// owns them until it is unloaded, so they can be neither freed nor reused while it is
    /// loaded, even if the model is leaked.
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
enum ModelMemory<'ctx> {
    Runtime,
    Owned {
        _work: DeviceBuffer<'ctx, u8>,
        _weight: DeviceBuffer<'ctx, u8>,
    },
    HostBytes(#[allow(dead_code)] Box<[u8]>),
    DeviceBytes(#[allow(dead_code)] DeviceBuffer<'ctx, u8>),
}

/// The name, dimensions, size, element type and layout of one input or output, from the
/// model's description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDesc {
    name: String,
    dims: Vec<i64>,
    byte_len: usize,
    data_type: DataType,
    format: Format,
}

impl TensorDesc {
    /// The tensor's name in the model.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its dimensions (for a dynamic-batch model, those of the largest gear: MD10).
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// Its size in bytes (for a dynamic-batch model, that of the largest gear: MD10).
    pub fn byte_len(&self) -> usize {
        self.byte_len
    }

    /// Its element type (MD13): the [`Element`] that reads and writes it. Never
    /// [`DataType::Undefined`] (a model whose description says so is refused at load).
    pub fn data_type(&self) -> DataType {
        self.data_type
    }

    /// Its layout (MD13), for information: never [`Format::Undefined`].
    pub fn format(&self) -> Format {
        self.format
    }
}

/// Checks a buffer of `data_type` elements and `byte_len` bytes against `desc` (MD13, MD10).
#[inline]
fn check_tensor(
    tensor: ModelTensor,
    desc: &TensorDesc,
    data_type: DataType,
    byte_len: usize,
) -> Result<()> {
    if data_type != desc.data_type {
        return Err(Error::ModelTypeMismatch {
            tensor,
            expected: desc.data_type,
            found: data_type,
        });
    }
    if byte_len != desc.byte_len {
        return Err(Error::ModelSizeMismatch {
            expected: desc.byte_len,
            found: byte_len,
        });
    }
    Ok(())
}

/// Checks that `T` is the element type of `tensor` (MD13).
#[inline]
fn check_element<T: Element>(tensor: ModelTensor, desc: &TensorDesc) -> Result<()> {
    if T::DATA_TYPE == desc.data_type {
        Ok(())
    } else {
        Err(Error::ModelTypeMismatch {
            tensor,
            expected: desc.data_type,
            found: T::DATA_TYPE,
        })
    }
}

/// What the description says, read once at load (MD10, MD11).
#[derive(Default)]
struct ModelInfo {
    inputs: Box<[TensorDesc]>,
    outputs: Box<[TensorDesc]>,
    gears: Box<[u64]>,
    /// The index of [`DYNAMIC_BATCH_INPUT`] (dynamic models).
    batch_input: Option<usize>,
}

/// What pipelines and the model share: the executions issued and not yet proven done, and
/// the stream they were issued on (MD7, MD8). Only the holder of `&mut Model` issues, so only
/// it increments; a pipeline decrements once it has seen the frame done, from any thread.
///
/// A model dropped while executions are pending hands its release here ([`defer`]
/// (Self::defer)): whoever ends the last execution runs it, so the natural drop order (a
/// model declared after the pipeline that runs it drops first) unloads it once its frames
/// are proven done instead of leaking it.
pub(crate) struct ModelShared {
    /// Executions pending, with [`DEFERRED`] set once the model's release waits for them.
    in_flight: AtomicUsize,
    pub(crate) stream: AtomicPtr<c_void>,
    /// The release of a model dropped with executions pending; run once, by the last
    /// [`end`](Self::end) or by `defer` itself if they all ended first.
    deferred: Mutex<Option<DeferredRelease>>,
}

/// The bit of [`ModelShared::in_flight`] saying the model was dropped and its release waits.
const DEFERRED: usize = 1 << (usize::BITS - 1);

/// A dropped model's release, its lifetime erased (see [`Model::drop`]'s SAFETY comment).
type DeferredRelease = Box<dyn FnOnce() + Send + 'static>;

impl ModelShared {
    fn new() -> ModelShared {
        ModelShared {
            in_flight: AtomicUsize::new(0),
            stream: AtomicPtr::new(std::ptr::null_mut()),
            deferred: Mutex::new(None),
        }
    }

    /// Registers an execution about to be issued on `stream`, or refuses it if executions
    /// are pending on another stream (MD8). The caller holds `&mut Model`.
    #[inline]
    pub(crate) fn begin(&self, stream: aclrtStream) -> Result<()> {
        self.check_stream(stream)?;
        self.stream.store(stream, Ordering::Release);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Refuses an execution on `stream` while executions are pending on another (MD8).
    #[inline]
    pub(crate) fn check_stream(&self, stream: aclrtStream) -> Result<()> {
        let pending = self.pending();
        if pending > 0 && self.stream.load(Ordering::Acquire) != stream {
            return Err(Error::ModelInUse { pending });
        }
        Ok(())
    }

    /// An execution registered with `begin` is proven done. The last one of a dropped model
    /// runs its release.
    #[inline]
    pub(crate) fn end(&self) {
        if self.in_flight.fetch_sub(1, Ordering::AcqRel) == DEFERRED | 1 {
            self.run_deferred();
        }
    }

    fn pending(&self) -> usize {
        self.in_flight.load(Ordering::Acquire) & !DEFERRED
    }

    /// Keeps `release` until no execution is pending, then runs it (here, if none is).
    /// Called once, by the model's `Drop`: no `begin` follows (it needs the model).
    fn defer(&self, release: DeferredRelease) {
        *self.deferred.lock().unwrap_or_else(|p| p.into_inner()) = Some(release);
        // Stored before the bit is set: the `end` that sees the bit finds it.
        if self.in_flight.fetch_or(DEFERRED, Ordering::AcqRel) == 0 {
            self.run_deferred();
        }
    }

    #[cold]
    #[inline(never)]
    fn run_deferred(&self) {
        // Taken with the lock released: the release is user-visible work (the drop-error
        // handler may run).
        let release = self
            .deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(release) = release {
            release();
        }
    }
}

/// A model loaded in a context (MD1), with its description (MD4).
///
/// # States
///
/// ```text
///  Context::load_model / load_dynamic_model ──► Loaded ──(executions pending on a stream)──► Loaded
///                                                  │
///                                                  └── unload() / Drop ──► Unloaded (consumed)
/// ```
///
/// Executing needs `&mut self`: one execution is issued at a time, from one thread (MD8).
/// An asynchronous execution ([`Launch::execute`](crate::Launch::execute)) stays *pending*
/// until its pipeline proves the frame done; meanwhile the model cannot be unloaded
/// ([`Error::ModelInUse`], MD7), executed synchronously, or executed on another stream (MD8).
///
/// Dropping it with executions pending is fine, and is what the natural drop order does (a
/// model declared after the pipeline that runs it drops first): its unload waits, and runs
/// when the pipeline proves the last of them done (its next slot, `wait_all` or its end),
/// never under a task that uses it. Behind a leaked (`mem::forget`) pipeline it stays loaded,
/// and keeps its context (D3). A model whose unload fails is kept loaded with its memory,
/// and reported; its description, datasets and data buffers are each counted in the context
/// until destroyed, so a context is never released over one that could not be (D3).
///
/// `K` is [`Static`] or [`Dynamic`]: which executions exist (MD11).
pub struct Model<'ctx, K: ModelKind = Static> {
    ctx: &'ctx Context<'ctx>,
    id: u32,
    /// Destroyed (and set to null) right after the model is unloaded, never queried after (MD4).
    desc: *mut aclmdlDesc,
    shared: Arc<ModelShared>,
    info: Box<ModelInfo>,
    /// Released only once the model is unloaded; leaked otherwise (MD2, MD3).
    memory: ManuallyDrop<Box<ModelMemory<'ctx>>>,
    /// The datasets of its executions in async scopes, kept for the next one
    /// ([`AsyncScope::execute`](crate::AsyncScope::execute)); destroyed before the unload.
    scoped: Option<Box<ScopedDatasets<'ctx>>>,
    unloaded: bool,
    _kind: PhantomData<fn() -> K>,
}

// SAFETY: a model id and description are usable from any thread once the model's context is
// current, which every call ensures (D6); the owned memory is `Send`. Not `Sync`: executions
// need `&mut self` (MD8), and `&self` only reads cached values.
unsafe impl<K: ModelKind> Send for Model<'_, K> {}

/// Checks that `path` names a regular file the runtime can read, and converts it for the C
/// API. A FIFO, a device or a directory is refused here: the runtime would block reading it,
/// never reach its end, or fail without naming the file. (The file may still change before
/// the runtime opens it; what the runtime then does is its own.)
fn model_path(path: &Path) -> Result<CString> {
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

impl<'ctx> Context<'ctx> {
    /// Loads a model compiled for fixed shapes (MD1: it belongs to this context). A model
    /// with batch gears is [`Error::WrongModelKind`]; see
    /// [`load_dynamic_model`](Self::load_dynamic_model).
    ///
    /// Sizes of 0 in the description (unknown dimensions, which the runtime would allocate
    /// during each execution: MD10) are refused.
    pub fn load_model<'a>(
        &'a self,
        source: impl Into<ModelSource<'a>>,
    ) -> Result<Model<'a, Static>> {
        Model::load(self, source.into())
    }

    /// Loads a model compiled with dynamic batch gears (MD1, MD11); one without gears is
    /// [`Error::WrongModelKind`].
    pub fn load_dynamic_model<'a>(
        &'a self,
        source: impl Into<ModelSource<'a>>,
    ) -> Result<Model<'a, Dynamic>> {
        Model::load(self, source.into())
    }

    /// `aclmdlQuerySize`: the work and weight memory (bytes) a model file needs when loaded
    /// with [`ModelSource::file_with_memory`] (MD2).
    pub fn model_memory_size(&self, path: impl AsRef<Path>) -> Result<(usize, usize)> {
        let path = model_path(path.as_ref())?;
        self.bind()?;
        Ok(self.api().model_query_size(&path)?)
    }
}

impl<'ctx, K: ModelKind> Model<'ctx, K> {
    fn load(ctx: &'ctx Context<'ctx>, source: ModelSource<'ctx>) -> Result<Self> {
        ctx.bind()?;
        let api = ctx.api();
        let (id, memory) = match source.kind {
            SourceKind::File(path) => {
                let path = model_path(&path)?;
                // SAFETY: unloaded by the model's release; the context is current.
                let id = unsafe { api.model_load_from_file(&path)? };
                (id, ModelMemory::Runtime)
            }
            SourceKind::FileWithMemory { path, work, weight } => {
                for buffer in [&work, &weight] {
                    if !std::ptr::addr_eq(buffer.context(), ctx) {
                        return Err(
                            ctx.mismatch(buffer.context(), "a model's work or weight memory")
                        );
                    }
                }
                let path = model_path(&path)?;
                // SAFETY: both buffers are device memory of this context, owned by the model
                // from here until it is unloaded, and used by nothing else (MD2); the
                // runtime checks their sizes.
                let id = unsafe {
                    api.model_load_from_file_with_mem(
                        &path,
                        (work.as_raw(), work.byte_len()),
                        (weight.as_raw(), weight.byte_len()),
                    )?
                };
                let memory = ModelMemory::Owned {
                    _work: work,
                    _weight: weight,
                };
                (id, memory)
            }
            SourceKind::Bytes(bytes) => {
                if bytes.is_empty() {
                    return Err(Error::InvalidArgument("a model cannot be empty"));
                }
                if api.get_run_mode()? == crate::sys::bindings::ACL_DEVICE {
                    let mut device = ctx.alloc::<u8>(bytes.len(), MallocPolicy::HugeFirst)?;
                    ctx.copy(&mut device, &bytes[..])?;
                    // SAFETY: device memory (MD3 on the board), owned by the model until it
                    // is unloaded and never written again.
                    let id = unsafe {
                        api.model_load_from_mem(device.as_raw().cast_const(), device.byte_len())?
                    };
                    (id, ModelMemory::DeviceBytes(device))
                } else {
                    let bytes = bytes.into_boxed_slice();
                    // SAFETY: the bytes are owned by the model until it is unloaded and
                    // never written (MD3); moving the box does not move them.
                    let id = unsafe {
                        api.model_load_from_mem(bytes.as_ptr().cast::<c_void>(), bytes.len())?
                    };
                    (id, ModelMemory::HostBytes(bytes))
                }
            }
        };
        ctx.adopt();
        let mut model = Model {
            ctx,
            id,
            desc: std::ptr::null_mut(),
            shared: Arc::new(ModelShared::new()),
            info: Box::default(),
            memory: ManuallyDrop::new(Box::new(memory)),
            scoped: None,
            unloaded: false,
            _kind: PhantomData,
        };
        // From here on, a failure drops `model`, which unloads it, then destroys the
        // description.
        // SAFETY: the context is current; destroyed by the model's release.
        model.desc = unsafe { api.model_create_desc()? };
        // Counted until destroyed: a description that cannot be destroyed keeps its context
        // (D3).
        ctx.adopt();
        // SAFETY: a live description, of the loaded model `id`.
        unsafe { api.model_get_desc(model.desc, id)? };
        model.describe()?;
        Ok(model)
    }

    /// Reads the description once (MD10, MD11) and checks the kind.
    fn describe(&mut self) -> Result<()> {
        let api = self.ctx.api();
        // SAFETY: the description is live, of this loaded model (MD4); so below.
        let (input_sizes, output_sizes) = unsafe { api.model_io_sizes(self.desc)? };
        // The counts and sizes fail only by answering 0, which is never taken for a model.
        let unreadable = |call| Err(Error::UnreadableDescription { call });
        if input_sizes.is_empty() {
            return unreadable("aclmdlGetNumInputs");
        }
        if output_sizes.is_empty() {
            return unreadable("aclmdlGetNumOutputs");
        }
        if input_sizes.contains(&0) {
            return unreadable("aclmdlGetInputSizeByIndex");
        }
        if output_sizes.contains(&0) {
            return unreadable("aclmdlGetOutputSizeByIndex");
        }
        let mut inputs = Vec::with_capacity(input_sizes.len());
        for (index, byte_len) in input_sizes.into_iter().enumerate() {
            // SAFETY: as above; an index below the count.
            let (name, dims) = unsafe { api.model_dims(self.desc, 0, index)? };
            // SAFETY: as above.
            let (data_type, format) = unsafe { self.element(false, index)? };
            inputs.push(TensorDesc {
                name,
                dims,
                byte_len,
                data_type,
                format,
            });
        }
        let mut outputs = Vec::with_capacity(output_sizes.len());
        for (index, byte_len) in output_sizes.into_iter().enumerate() {
            // SAFETY: as above.
            let (name, dims) = unsafe { api.model_dims(self.desc, 1, index)? };
            // SAFETY: as above.
            let (data_type, format) = unsafe { self.element(true, index)? };
            outputs.push(TensorDesc {
                name,
                dims,
                byte_len,
                data_type,
                format,
            });
        }
        self.info.batch_input = inputs.iter().position(|t| t.name == DYNAMIC_BATCH_INPUT);
        // SAFETY: as above.
        let gears = unsafe { api.model_dynamic_batch(self.desc)? };
        match (
            K::DYNAMIC,
            gears.is_empty(),
            self.info.batch_input.is_some(),
        ) {
            (false, true, false) | (true, false, true) => {}
            (false, false, _) => {
                return Err(Error::WrongModelKind(
                    "the model has dynamic batch gears: load it with Context::load_dynamic_model",
                ));
            }
            (true, true, _) => {
                return Err(Error::WrongModelKind(
                    "the model has no dynamic batch gears: load it with Context::load_model",
                ));
            }
            _ => {
                return Err(Error::WrongModelKind(
                    "the model has dynamic image sizes or dimensions: not supported",
                ));
            }
        }
        self.info.inputs = inputs.into_boxed_slice();
        self.info.outputs = outputs.into_boxed_slice();
        self.info.gears = gears.into_boxed_slice();
        Ok(())
    }

    /// The element type and layout of input or output `index` (MD13). The queries fail
    /// only by answering `ACL_DT_UNDEFINED` / `ACL_FORMAT_UNDEFINED` (a value the runtime
    /// gives no tensor of a loaded model), which is refused.
    ///
    /// # Safety
    /// The description is live, of this loaded model (MD4).
    unsafe fn element(&self, output: bool, index: usize) -> Result<(DataType, Format)> {
        let api = self.ctx.api();
        let unreadable = |input_call, output_call| Error::UnreadableDescription {
            call: if output { output_call } else { input_call },
        };
        // SAFETY: the caller's contract.
        let data_type =
            DataType::from_raw(unsafe { api.model_data_type(self.desc, output, index)? });
        if data_type == DataType::Undefined {
            return Err(unreadable(
                "aclmdlGetInputDataType",
                "aclmdlGetOutputDataType",
            ));
        }
        // SAFETY: the caller's contract.
        let format = Format::from_raw(unsafe { api.model_format(self.desc, output, index)? });
        if format == Format::Undefined {
            return Err(unreadable("aclmdlGetInputFormat", "aclmdlGetOutputFormat"));
        }
        Ok((data_type, format))
    }

    /// The context the model was loaded in (MD1).
    pub fn context(&self) -> &'ctx Context<'ctx> {
        self.ctx
    }

    /// The runtime's id of the model, for calls this crate does not wrap.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The inputs, in the model's order (a dynamic-batch model's includes
    /// [`DYNAMIC_BATCH_INPUT`]).
    pub fn inputs(&self) -> &[TensorDesc] {
        &self.info.inputs
    }

    /// The outputs, in the model's order.
    pub fn outputs(&self) -> &[TensorDesc] {
        &self.info.outputs
    }

    /// Executions issued on a stream and not yet proven done (MD7).
    pub fn pending(&self) -> usize {
        self.shared.pending()
    }

    /// `aclmdlGetCurOutputDims` (MD12): the dimensions of output `index` as the last
    /// execution's batch set them (the largest gear's before any).
    pub fn current_output_dims(&self, index: usize) -> Result<Vec<i64>> {
        if index >= self.info.outputs.len() {
            return Err(Error::InvalidArgument("no such model output"));
        }
        self.ctx.bind()?;
        // SAFETY: the description is live, of this loaded model (MD4); an index below the
        // count.
        let (_, dims) = unsafe { self.ctx.api().model_dims(self.desc, 2, index)? };
        Ok(dims)
    }

    /// Allocates device memory for every input and output, of the sizes the description
    /// gives (MD9, MD10), and the datasets that describe them (MD5), for
    /// [`execute`](Model::execute) / [`execute_batch`](Model::execute_batch).
    pub fn create_io(&self, policy: MallocPolicy) -> Result<ModelIo<'ctx>> {
        ModelIo::create(self, policy)
    }

    /// Unloads the model (MD2, MD3, MD4, MD7): [`Error::ModelInUse`] while executions are
    /// pending.
    /// On failure the error is returned and the model goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_unload`](Self::try_unload) gives it back instead, for a caller who wants to retry.
    pub fn unload(self) -> Result<()> {
        self.try_unload().map_err(Error::from)
    }

    /// Unloads the model: `aclmdlUnload`, then the memory it kept is released (MD2, MD3) and
    /// its description destroyed (MD4: never queried after the unload; a failure to destroy
    /// it is reported to the [drop-error handler](crate::set_drop_error_handler), the model
    /// being gone). With executions pending ([`Error::ModelInUse`], MD7) or if the unload
    /// fails, the model is given back, loaded, description included.
    pub fn try_unload(mut self) -> Result<(), Failed<Self>> {
        match self.release() {
            Ok(()) => Ok(()),
            Err(error) => Err(Failed::new(error, self)),
        }
    }

    fn release(&mut self) -> Result<()> {
        if self.unloaded {
            return Ok(());
        }
        let pending = self.shared.pending();
        if pending > 0 {
            return Err(Error::ModelInUse { pending });
        }
        self.ctx.bind()?;
        let api = self.ctx.api();
        if let Some(scoped) = self.scoped.take() {
            // No execution uses them: a scoped one borrows the model until its scope
            // synchronised it (M1, MD6). What cannot be destroyed stays counted (D3).
            scoped.release(self.ctx);
        }
        // SAFETY: no execution is pending (checked above; only `&mut self` issues them, and
        // a pipeline counts one until it has seen its frame done); the description is not
        // queried after this (MD4).
        unsafe { api.model_unload(self.id)? };
        self.unloaded = true;
        // SAFETY: the model is unloaded, so the runtime no longer uses its memory (MD2,
        // MD3); taken once (`unloaded` guards this block).
        drop(unsafe { ManuallyDrop::take(&mut self.memory) });
        if !self.desc.is_null() {
            let desc = std::mem::replace(&mut self.desc, std::ptr::null_mut());
            // SAFETY: the model's own description, live, destroyed once (set to null above);
            // only destroyed after the unload, not queried (MD4).
            let destroyed = destroy_counted(self.ctx, "Model (its description)", || unsafe {
                api.model_destroy_desc(desc)
            });
            report_drop_error("Model (its description, after the unload)", destroyed);
        }
        self.ctx.orphan();
        Ok(())
    }

    /// Checks that `io` was created for this model, and that no asynchronous execution is
    /// pending (a synchronous one would run beside it: MD8).
    fn check_sync(&self, io: &ModelIo<'ctx>) -> Result<()> {
        if !Arc::ptr_eq(&self.shared, &io.shared) {
            return Err(Error::InvalidArgument(
                "the ModelIo was created for another model",
            ));
        }
        match self.shared.pending() {
            0 => Ok(()),
            pending => Err(Error::ModelInUse { pending }),
        }
    }

    pub(crate) fn shared(&self) -> &Arc<ModelShared> {
        &self.shared
    }
}

impl<'ctx> Model<'ctx, Static> {
    /// `aclmdlExecute`: runs the model on `io`'s inputs, writing its outputs, and returns
    /// once it is done (MD1, MD6). Refused while asynchronous executions are pending (MD8).
    pub fn execute(&mut self, io: &mut ModelIo<'ctx>) -> Result<()> {
        self.check_sync(io)?;
        self.ctx.bind()?;
        // SAFETY: the model is loaded in the current context (MD1); the datasets describe
        // device memory of the sizes the description gives (MD9, MD10), exclusively borrowed
        // for this synchronous call; no other execution of the model is pending (MD8).
        unsafe {
            self.ctx
                .api()
                .model_execute(self.id, io.input_set(), io.output_set())?
        };
        Ok(())
    }
}

impl<'ctx> Model<'ctx, Dynamic> {
    /// The batch gears the model was compiled with (MD11).
    pub fn gears(&self) -> &[u64] {
        &self.info.gears
    }

    /// Checks `batch` against the gears (MD11).
    #[inline]
    pub(crate) fn check_gear(&self, batch: u64) -> Result<()> {
        if self.info.gears.contains(&batch) {
            Ok(())
        } else {
            Err(Error::NotAGear { batch })
        }
    }

    /// `aclmdlSetDynamicBatchSize` on `io`'s input dataset, then `aclmdlExecute` (MD11: the
    /// batch is set before every execution). `batch` must be one of the
    /// [`gears`](Self::gears) ([`Error::NotAGear`]); the inputs hold `batch` items, the
    /// outputs receive `batch` items (see [`current_output_dims`](Self::current_output_dims)).
    pub fn execute_batch(&mut self, io: &mut ModelIo<'ctx>, batch: u64) -> Result<()> {
        self.check_sync(io)?;
        self.check_gear(batch)?;
        let Some(index) = self.info.batch_input else {
            return Err(Error::WrongModelKind("the model has no batch input"));
        };
        self.ctx.bind()?;
        let api = self.ctx.api();
        // SAFETY: the dataset is `io`'s, of this model, exclusively borrowed, and no
        // execution uses it (synchronous executions only); a gear of the model (MD11).
        unsafe { api.model_set_dynamic_batch(self.id, io.input_set(), index, batch)? };
        // SAFETY: as in `Model::execute`.
        unsafe { api.model_execute(self.id, io.input_set(), io.output_set())? };
        Ok(())
    }
}

impl<K: ModelKind> Drop for Model<'_, K> {
    fn drop(&mut self) {
        if !self.unloaded && self.shared.pending() > 0 {
            self.defer_release();
            return;
        }
        release_on_drop("Model", || self.release());
    }
}

impl<'ctx, K: ModelKind> Model<'ctx, K> {
    /// The model is dropped while executions are pending (its pipeline was declared first,
    /// say): its release moves into the shared state, and runs when the last execution is
    /// proven done (MD7). `self` is left unloaded-looking, owning nothing.
    #[cold]
    #[inline(never)]
    fn defer_release(&mut self) {
        let model = Model::<'ctx, K> {
            ctx: self.ctx,
            id: self.id,
            desc: std::mem::replace(&mut self.desc, std::ptr::null_mut()),
            shared: Arc::clone(&self.shared),
            info: std::mem::take(&mut self.info),
            // SAFETY: taken once: `self` is marked unloaded below, so nothing takes or drops
            // it again.
            memory: ManuallyDrop::new(unsafe { ManuallyDrop::take(&mut self.memory) }),
            scoped: self.scoped.take(),
            unloaded: false,
            _kind: PhantomData,
        };
        self.unloaded = true;
        let release: Box<dyn FnOnce() + Send + 'ctx> = Box::new(move || drop(model));
        // SAFETY: only the lifetime is erased (same layout). The release runs either in
        // `defer` (below, the model's context borrowed by `self`) or in `ModelShared::end`,
        // called only by a pipeline slot's `finish` with the pipeline borrowing the same
        // context (checked by `Launch::execute_model` before `begin`, MD1): the context and
        // everything `'ctx` borrows are alive whenever it runs. It is never dropped unrun:
        // the model it owns holds the `Arc` that owns it (a leaked pipeline leaks both).
        let release: DeferredRelease = unsafe {
            std::mem::transmute::<Box<dyn FnOnce() + Send + 'ctx>, DeferredRelease>(release)
        };
        Arc::clone(&self.shared).defer(release);
    }
}

impl<K: ModelKind> std::fmt::Debug for Model<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("inputs", &self.info.inputs)
            .field("outputs", &self.info.outputs)
            .field("gears", &self.info.gears)
            .field("pending", &self.pending())
            .finish()
    }
}

/// Destroys one runtime object counted in `ctx` ([`Context::adopt`]), tried again while the
/// runtime fails ([`retry_cleanup`]), and uncounted only once destroyed. One that
/// cannot be destroyed stays counted, so its context is never released over it (D3).
fn destroy_counted(
    ctx: &Context<'_>,
    what: &'static str,
    mut destroy: impl FnMut() -> crate::result::Result<()>,
) -> Result<()> {
    let destroyed = retry_cleanup(what, &mut destroy);
    if destroyed.is_ok() {
        ctx.orphan();
    }
    destroyed
}

/// A dataset and the data buffers this crate added to it (MD5). Destroyed from these
/// handles, not from what `aclmdlGetDatasetNumBuffers` / `aclmdlGetDatasetBuffer` report:
/// those answer 0 or null when they fail, which would leave buffers behind unnoticed.
/// Each is counted in its context until destroyed (D3). Not `Drop`: its owner destroys it,
/// once no execution uses it (MD6).
pub(crate) struct Dataset {
    /// Never null: the raw layer reports a null handle as its error.
    raw: *mut aclmdlDataset,
    buffers: Box<[*mut aclDataBuffer]>,
}

impl Dataset {
    /// `aclmdlCreateDataset`, then for each `(pointer, size)` `aclCreateDataBuffer` and
    /// `aclmdlAddDatasetBuffer`. On failure what was created is destroyed again (the errors
    /// of that clean-up go to the drop-error handler) and the first error is returned.
    ///
    /// # Safety
    /// `ctx` is current, and the memory stays allocated while the dataset exists.
    unsafe fn create(ctx: &Context<'_>, memory: &[(*mut c_void, usize)]) -> Result<Self> {
        let api = ctx.api();
        // SAFETY: the caller's contract; destroyed by `destroy` (below, or the owner's).
        let raw = unsafe { api.create_dataset()? };
        ctx.adopt();
        let mut buffers = Vec::with_capacity(memory.len());
        for &(data, size) in memory {
            // SAFETY: the caller's contract.
            let added = unsafe { api.create_data_buffer(data, size) }.and_then(|buffer| {
                ctx.adopt();
                // SAFETY: both live, the dataset is used by nothing yet.
                match unsafe { api.add_dataset_buffer(raw, buffer) } {
                    Ok(()) => Ok(buffer),
                    Err(error) => {
                        // SAFETY: not added: ours alone, destroyed once.
                        let destroyed = destroy_counted(ctx, "a model data buffer", || unsafe {
                            api.destroy_data_buffer(buffer)
                        });
                        report_drop_error("a model data buffer", destroyed);
                        Err(error)
                    }
                }
            });
            match added {
                Ok(buffer) => buffers.push(buffer),
                Err(error) => {
                    let dataset = Dataset {
                        raw,
                        buffers: buffers.into_boxed_slice(),
                    };
                    // SAFETY: created above, used by nothing.
                    report_drop_error("a model dataset", unsafe { dataset.destroy(ctx) });
                    return Err(error.into());
                }
            }
        }
        Ok(Dataset {
            raw,
            buffers: buffers.into_boxed_slice(),
        })
    }

    pub(crate) fn as_ptr(&self) -> *mut aclmdlDataset {
        self.raw
    }

    /// Destroys the data buffers (MD5: first), then the dataset, each tried twice
    /// ([`destroy_counted`]); the first error returned and the others reported. What cannot
    /// be destroyed stays counted in `ctx` (D3).
    ///
    /// # Safety
    /// `ctx` is current and is the one the dataset was created in, no pending execution uses
    /// the dataset (MD6), and neither it nor its buffers are used afterwards.
    pub(crate) unsafe fn destroy(self, ctx: &Context<'_>) -> Result<()> {
        let api = ctx.api();
        let mut first: Result<()> = Ok(());
        let mut keep = |done: Result<()>, what: &'static str| {
            if let Err(error) = done {
                if first.is_ok() {
                    first = Err(error);
                } else {
                    report_drop_error(what, Err(error));
                }
            }
        };
        for buffer in self.buffers.iter() {
            // SAFETY: the caller's contract; each destroyed once (`self` is consumed).
            keep(
                destroy_counted(ctx, "a model data buffer", || unsafe {
                    api.destroy_data_buffer(*buffer)
                }),
                "a model data buffer",
            );
        }
        // SAFETY: as above.
        keep(
            destroy_counted(ctx, "a model dataset", || unsafe {
                api.destroy_dataset(self.raw)
            }),
            "a model dataset",
        );
        first
    }
}

/// Device memory for every input and output of one model, of the sizes its description
/// gives, and the two datasets that describe it (MD5, MD9, MD10): what
/// [`Model::execute`] and [`Model::execute_batch`] run on.
///
/// Owns its buffers and datasets: they cannot be freed or swapped while a dataset points at
/// them, and the datasets are destroyed (buffers first, MD5) before the memory is freed.
/// Synchronous executions only borrow it, so nothing is pending when it is dropped (MD6).
pub struct ModelIo<'ctx> {
    ctx: &'ctx Context<'ctx>,
    shared: Arc<ModelShared>,
    /// The input and output datasets; taken once, in `Drop`.
    sets: ManuallyDrop<(Dataset, Dataset)>,
    inputs: Box<[DeviceBuffer<'ctx, u8>]>,
    outputs: Box<[DeviceBuffer<'ctx, u8>]>,
    /// The inputs' and outputs' descriptions, for their element types (MD13).
    tensors: (Box<[TensorDesc]>, Box<[TensorDesc]>),
}

// SAFETY: the datasets are host objects of the runtime, usable from any thread, and only
// through `&mut self` (writing inputs) or `&mut Model` (executing); the buffers are `Send`.
unsafe impl Send for ModelIo<'_> {}

impl<'ctx> ModelIo<'ctx> {
    fn create<K: ModelKind>(model: &Model<'ctx, K>, policy: MallocPolicy) -> Result<Self> {
        let ctx = model.ctx;
        let alloc = |tensors: &[TensorDesc]| -> Result<Box<[DeviceBuffer<'ctx, u8>]>> {
            tensors
                .iter()
                .map(|t| ctx.alloc::<u8>(t.byte_len, policy))
                .collect()
        };
        let inputs = alloc(&model.info.inputs)?;
        let outputs = alloc(&model.info.outputs)?;
        ctx.bind()?;
        let raw = |buffers: &[DeviceBuffer<'ctx, u8>]| -> Vec<(*mut c_void, usize)> {
            buffers.iter().map(|b| (b.as_raw(), b.byte_len())).collect()
        };
        // SAFETY: the context is current; device memory owned by the `ModelIo` built below,
        // freed only after the datasets are destroyed (its `Drop`, field order: MD5). On an
        // error return the buffers are dropped after the datasets are destroyed too.
        let input_set = unsafe { Dataset::create(ctx, &raw(&inputs))? };
        // SAFETY: as above.
        let output_set = match unsafe { Dataset::create(ctx, &raw(&outputs)) } {
            Ok(set) => set,
            Err(error) => {
                // SAFETY: created above, used by nothing.
                report_drop_error("a model dataset", unsafe { input_set.destroy(ctx) });
                return Err(error);
            }
        };
        Ok(ModelIo {
            ctx,
            shared: Arc::clone(&model.shared),
            sets: ManuallyDrop::new((input_set, output_set)),
            inputs,
            outputs,
            tensors: (model.info.inputs.clone(), model.info.outputs.clone()),
        })
    }

    fn input_set(&self) -> *mut aclmdlDataset {
        self.sets.0.as_ptr()
    }

    fn output_set(&self) -> *mut aclmdlDataset {
        self.sets.1.as_ptr()
    }

    /// Copies `data` into input `index` (synchronous `aclrtMemcpy`); at most the input's
    /// size, the rest keeps what it held. `T` must be the input's element type
    /// ([`Error::ModelTypeMismatch`], MD13), checked before anything is copied.
    pub fn write_input<T: Element>(&mut self, index: usize, data: &[T]) -> Result<()> {
        let (Some(buffer), Some(tensor)) = (self.inputs.get_mut(index), self.tensors.0.get(index))
        else {
            return Err(Error::InvalidArgument("no such model input"));
        };
        check_element::<T>(ModelTensor::input(index), tensor)?;
        let bytes: &[u8] = bytemuck::cast_slice(data);
        if bytes.len() > buffer.byte_len() {
            return Err(Error::ModelSizeMismatch {
                expected: buffer.byte_len(),
                found: bytes.len(),
            });
        }
        self.ctx.copy(buffer, bytes)
    }

    /// Copies the first `out.len()` elements of output `index` to `out` (synchronous). `T`
    /// must be the output's element type ([`Error::ModelTypeMismatch`], MD13), checked before
    /// anything is copied.
    pub fn read_output<T: Element>(&self, index: usize, out: &mut [T]) -> Result<()> {
        let (Some(buffer), Some(tensor)) = (self.outputs.get(index), self.tensors.1.get(index))
        else {
            return Err(Error::InvalidArgument("no such model output"));
        };
        check_element::<T>(ModelTensor::output(index), tensor)?;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        let Some(source) = buffer.slice(..bytes.len()) else {
            return Err(Error::ModelSizeMismatch {
                expected: buffer.byte_len(),
                found: bytes.len(),
            });
        };
        self.ctx.copy(bytes, &source)
    }

    /// Output `index` read in place, in device run mode only (on the board;
    /// [`DeviceBuffer::host_view`]). The shared borrow proves no execution writes it. `T`
    /// must be the output's element type ([`Error::ModelTypeMismatch`], MD13).
    pub fn output_view<T: Element>(&self, index: usize) -> Result<&[T]> {
        let (Some(buffer), Some(tensor)) = (self.outputs.get(index), self.tensors.1.get(index))
        else {
            return Err(Error::InvalidArgument("no such model output"));
        };
        check_element::<T>(ModelTensor::output(index), tensor)?;
        bytemuck::try_cast_slice(buffer.host_view()?).map_err(|_| {
            Error::InvalidArgument("the output's size or alignment does not fit the element type")
        })
    }
}

impl Drop for ModelIo<'_> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; the value is not used afterwards.
        let (input_set, output_set) = unsafe { ManuallyDrop::take(&mut self.sets) };
        // The binding too is tried again while the runtime fails it: one transient failure
        // must not leak the datasets.
        match retry_cleanup("ModelIo (binding its context)", || self.ctx.bind()) {
            Ok(()) => {
                // SAFETY: the context is current; the datasets are ours and no execution
                // uses them (synchronous executions only borrow `self`, MD6); each destroyed
                // once.
                report_drop_error("ModelIo (input dataset)", unsafe {
                    input_set.destroy(self.ctx)
                });
                // SAFETY: as above.
                report_drop_error("ModelIo (output dataset)", unsafe {
                    output_set.destroy(self.ctx)
                });
            }
            // Not destroyed: leaked (still counted in the context, D3), and reported.
            Err(error) => report_drop_error("ModelIo", Err(error)),
        }
        // The buffers are freed after the datasets (their own `Drop`, after this one).
    }
}

impl std::fmt::Debug for ModelIo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelIo")
            .field("inputs", &self.inputs.len())
            .field("outputs", &self.outputs.len())
            .finish()
    }
}

impl ModelInfo {
    /// The data inputs (a dynamic model's batch input excluded, MD11) or the outputs, with
    /// their indices in the model's order.
    fn data_tensors(&self, outputs: bool) -> impl Iterator<Item = (ModelTensor, &TensorDesc)> {
        let (tensors, batch) = if outputs {
            (&self.outputs, None)
        } else {
            (&self.inputs, self.batch_input)
        };
        tensors
            .iter()
            .enumerate()
            .filter(move |(index, _)| Some(*index) != batch)
            .map(move |(index, tensor)| {
                let id = if outputs {
                    ModelTensor::output(index)
                } else {
                    ModelTensor::input(index)
                };
                (id, tensor)
            })
    }
}

/// Splits `buffer` (a pointer and a size in bytes) into the model's data inputs (or its
/// outputs), one after the other, each of element type `T` (MD13); their sizes must add up
/// to the buffer's exactly (MD10).
fn consecutive<T: Element>(
    info: &ModelInfo,
    outputs: bool,
    buffer: (*mut c_void, usize),
) -> Result<Vec<(*mut c_void, usize)>> {
    let mut parts = Vec::new();
    let mut offset = 0usize;
    for (id, tensor) in info.data_tensors(outputs) {
        check_element::<T>(id, tensor)?;
        if tensor.byte_len % size_of::<T>() != 0 {
            return Err(Error::ModelSizeMismatch {
                expected: tensor.byte_len,
                found: tensor.byte_len / size_of::<T>() * size_of::<T>(),
            });
        }
        // `wrapping_add`: only an address; dereferenced by the runtime once the sizes are
        // proven to fit (below).
        parts.push((buffer.0.wrapping_byte_add(offset), tensor.byte_len));
        offset = offset.saturating_add(tensor.byte_len);
    }
    if offset != buffer.1 {
        return Err(Error::ModelSizeMismatch {
            expected: offset,
            found: buffer.1,
        });
    }
    Ok(parts)
}

/// A pipeline slot's datasets for one model: the slot's device input (and a batch buffer for
/// a dynamic model) and its device output (MD5). Created on the slot's first execution of the
/// model; destroyed when the slot executes another model, or with the pipeline, never while
/// an execution uses them (MD6).
pub(crate) struct SlotDatasets<'ctx> {
    pub(crate) shared: Arc<ModelShared>,
    pub(crate) input_set: Dataset,
    pub(crate) output_set: Dataset,
    /// The device memory of [`DYNAMIC_BATCH_INPUT`] (dynamic models).
    pub(crate) batch: Option<(usize, DeviceBuffer<'ctx, u8>)>,
    /// An execution using these datasets was issued and is not yet proven done.
    pub(crate) pending: bool,
}

impl<'ctx> SlotDatasets<'ctx> {
    /// Builds the datasets of `model` over a pipeline slot's device input and output. The
    /// model's data inputs lie one after the other in the slot's input, its outputs likewise
    /// in the slot's output, in the model's order; every one of them must be of element type
    /// `I` (inputs) or `O` (outputs) (MD13), and their sizes from the description (MD10) must
    /// fill the slot's buffers exactly. Checked before anything is created.
    pub(crate) fn create<I: Element, O: Element, K: ModelKind>(
        ctx: &'ctx Context<'ctx>,
        model: &Model<'_, K>,
        input: (*mut c_void, usize),
        output: (*mut c_void, usize),
        policy: MallocPolicy,
    ) -> Result<Self> {
        let inputs = consecutive::<I>(&model.info, false, input)?;
        let outputs = consecutive::<O>(&model.info, true, output)?;
        Self::bind(ctx, model, &inputs, &outputs, policy)
    }

    /// Builds the datasets of `model` over `inputs` (its data inputs, in order: a dynamic
    /// model's batch input gets a buffer of its own, allocated here) and `outputs`. The
    /// caller checked their element types and sizes against the description (MD10, MD13);
    /// the memory stays allocated while the datasets exist.
    pub(crate) fn bind<K: ModelKind>(
        ctx: &'ctx Context<'ctx>,
        model: &Model<'_, K>,
        inputs: &[(*mut c_void, usize)],
        outputs: &[(*mut c_void, usize)],
        policy: MallocPolicy,
    ) -> Result<Self> {
        let batch = match model.info.batch_input {
            Some(index) => Some((
                index,
                ctx.alloc::<u8>(model.info.inputs[index].byte_len, policy)?,
            )),
            None => None,
        };
        let mut all_inputs = inputs.to_vec();
        if let Some((index, buffer)) = &batch {
            all_inputs.insert(*index, (buffer.as_raw(), buffer.byte_len()));
        }
        // SAFETY: the context is current (the caller bound it); the caller's buffers and the
        // batch buffer stay alive until these datasets are destroyed (buffers first: MD5).
        let input_set = unsafe { Dataset::create(ctx, &all_inputs)? };
        // SAFETY: as above.
        let output_set = match unsafe { Dataset::create(ctx, outputs) } {
            Ok(set) => set,
            Err(error) => {
                // SAFETY: created above, used by nothing.
                report_drop_error("a model dataset", unsafe { input_set.destroy(ctx) });
                return Err(error);
            }
        };
        Ok(SlotDatasets {
            shared: Arc::clone(&model.shared),
            input_set,
            output_set,
            batch,
            pending: false,
        })
    }

    /// The slot's frame is proven done: its execution no longer counts as pending (MD7).
    #[inline]
    pub(crate) fn finish(&mut self) {
        if self.pending {
            self.pending = false;
            self.shared.end();
        }
    }

    /// Destroys the datasets (buffers first, MD5) and frees the batch buffer. The caller
    /// proved no execution uses them (MD6) and called `finish`.
    pub(crate) fn release(self, ctx: &Context<'_>) -> Vec<Error> {
        let mut errors = Vec::new();
        for set in [self.input_set, self.output_set] {
            // SAFETY: the caller's contract; each destroyed once (the value is consumed).
            if let Err(error) = unsafe { set.destroy(ctx) } {
                errors.push(error);
            }
        }
        if let Some((_, buffer)) = self.batch
            && let Err(error) = buffer.free()
        {
            errors.push(error);
        }
        errors
    }
}
