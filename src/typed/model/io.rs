//! A model's synchronous inputs and outputs ([`ModelIo`], MD5, MD9, MD10) and the datasets
//! that describe device memory to the runtime ([`Dataset`]), each counted in its context
//! until destroyed (D3).

use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use super::description::{TensorDesc, check_element};
use super::shared::ModelShared;
use super::{Model, ModelKind};
use crate::sys::bindings::{aclDataBuffer, aclmdlDataset};
use crate::typed::context::Context;
use crate::typed::dtype::Element;
use crate::typed::error::{Error, ModelTensor, Result};
use crate::typed::handle::{report_drop_error, retry_cleanup};
use crate::typed::memory::{DeviceBuffer, MallocPolicy};

/// Destroys one runtime object counted in `ctx` ([`Context::adopt`]), tried again while the
/// runtime fails ([`retry_cleanup`]), and uncounted only once destroyed. One that
/// cannot be destroyed stays counted, so its context is never released over it (D3).
pub(super) fn destroy_counted(
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
    pub(super) unsafe fn create(
        ctx: &Context<'_>,
        memory: &[(*mut c_void, usize)],
    ) -> Result<Self> {
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
    pub(super) shared: Arc<ModelShared>,
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
    pub(super) fn create<K: ModelKind>(
        model: &Model<'ctx, K>,
        policy: MallocPolicy,
    ) -> Result<Self> {
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

    pub(super) fn input_set(&self) -> *mut aclmdlDataset {
        self.sets.0.as_ptr()
    }

    pub(super) fn output_set(&self) -> *mut aclmdlDataset {
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
