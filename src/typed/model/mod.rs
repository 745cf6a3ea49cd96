//! Model execution (MD1-MD13): a loaded model bound to its context, its description, the
//! device memory of its inputs and outputs, synchronous execution here and asynchronous
//! execution in a [`Pipeline`](crate::Pipeline) ([`Launch::execute`](crate::Launch::execute)).

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::path::Path;
use std::sync::Arc;

use crate::sys::bindings::aclmdlDesc;
use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::handle::{Failed, release_on_drop, report_drop_error};
use crate::typed::memory::MallocPolicy;

mod description;
mod io;
mod scoped;
pub(crate) mod shared;
mod slot;
mod source;

use description::ModelInfo;
use io::destroy_counted;
use scoped::ScopedDatasets;
use shared::ModelShared;
use source::{ModelMemory, SourceKind, model_path};

pub use description::TensorDesc;
pub use io::ModelIo;
pub use scoped::{Executed, ModelInput, ModelOutput};
pub(crate) use slot::SlotDatasets;
pub use source::ModelSource;

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
                    (id, ModelMemory::DeviceBytes { _device: device })
                } else {
                    let bytes = bytes.into_boxed_slice();
                    // SAFETY: the bytes are owned by the model until it is unloaded and
                    // never written (MD3); moving the box does not move them.
                    let id = unsafe {
                        api.model_load_from_mem(bytes.as_ptr().cast::<c_void>(), bytes.len())?
                    };
                    (id, ModelMemory::HostBytes { _bytes: bytes })
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
}

impl<'ctx, K: ModelKind> Model<'ctx, K> {
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
