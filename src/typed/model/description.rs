//! A model's description, read once at load (MD4, MD10, MD11, MD13): [`TensorDesc`], the
//! cached [`ModelInfo`], and the element-type and size checks against it.

use super::{DYNAMIC_BATCH_INPUT, Model, ModelKind};
use crate::typed::dtype::{DataType, Element, Format};
use crate::typed::error::{Error, ModelTensor, Result};

/// The name, dimensions, size, element type and layout of one input or output, from the
/// model's description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDesc {
    pub(super) name: String,
    pub(super) dims: Vec<i64>,
    pub(super) byte_len: usize,
    pub(super) data_type: DataType,
    pub(super) format: Format,
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
pub(super) fn check_tensor(
    tensor: ModelTensor,
    desc: &TensorDesc,
    data_type: DataType,
    byte_len: usize,
) -> Result<()> {
    check_data_type(tensor, desc.data_type, data_type)?;
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
pub(super) fn check_element<T: Element>(tensor: ModelTensor, desc: &TensorDesc) -> Result<()> {
    check_data_type(tensor, desc.data_type, T::DATA_TYPE)
}

/// Checks that `found` is `expected`, the element type of `tensor` (MD13).
#[inline]
pub(super) fn check_data_type(
    tensor: ModelTensor,
    expected: DataType,
    found: DataType,
) -> Result<()> {
    if found == expected {
        Ok(())
    } else {
        Err(Error::ModelTypeMismatch {
            tensor,
            expected,
            found,
        })
    }
}

/// What the description says, read once at load (MD10, MD11).
#[derive(Default)]
pub(super) struct ModelInfo {
    pub(super) inputs: Box<[TensorDesc]>,
    pub(super) outputs: Box<[TensorDesc]>,
    pub(super) gears: Box<[u64]>,
    /// The index of [`DYNAMIC_BATCH_INPUT`] (dynamic models).
    pub(super) batch_input: Option<usize>,
}

impl ModelInfo {
    /// The data inputs (a dynamic model's batch input excluded, MD11) or the outputs, with
    /// their indices in the model's order.
    pub(super) fn data_tensors(
        &self,
        outputs: bool,
    ) -> impl Iterator<Item = (ModelTensor, &TensorDesc)> {
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

impl<K: ModelKind> Model<'_, K> {
    /// Reads the description once (MD10, MD11) and checks the kind.
    pub(super) fn describe(&mut self) -> Result<()> {
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
}
