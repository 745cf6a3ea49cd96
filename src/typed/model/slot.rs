//! A pipeline slot's datasets for one model ([`SlotDatasets`], MD5, MD6, MD7), over the
//! slot's device input and output split into the model's tensors (MD10, MD13).

use std::ffi::c_void;
use std::mem::size_of;
use std::sync::Arc;

use super::description::{ModelInfo, check_element};
use super::io::Dataset;
use super::shared::ModelShared;
use super::{Model, ModelKind};
use crate::typed::context::Context;
use crate::typed::dtype::Element;
use crate::typed::error::{Error, Result};
use crate::typed::handle::report_drop_error;
use crate::typed::memory::{DeviceBuffer, MallocPolicy};

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
