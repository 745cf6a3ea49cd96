//! Model execution and data buffers (MD1-MD13): the functions of [`Api::models`], which may
//! come from another library than the runtime's ([`CallError::Unsupported`] names the first
//! missing one).

use std::ffi::{CStr, c_void};

use super::{AclError, Api, CallError, Result, aclrtStream, check, refuse_inside_callback};
use crate::sys::bindings::{
    ACL_MAX_BATCH_NUM, aclDataBuffer, aclDataType, aclFormat, aclmdlBatch, aclmdlDataset,
    aclmdlDesc, aclmdlIODims,
};
use crate::sys::model::ModelTable;

/// Calls a function of the model table: `model_call!(self, aclmdlFoo(a, b))`.
macro_rules! model_call {
    ($api:expr, $name:ident($($arg:expr),* $(,)?)) => {
        check($api, stringify!($name), ($api.model_table()?.$name)($($arg),*))
    };
}

/// The gears an `aclmdlBatch` lists; `None` when its count exceeds its array.
fn listed_gears(batch: &aclmdlBatch) -> Option<Vec<u64>> {
    batch.batch.get(..batch.batchCount).map(<[u64]>::to_vec)
}

/// A null handle from a creating function: the runtime's way of failing there.
#[cold]
#[inline(never)]
fn null_handle(api: &Api, call: &'static str) -> CallError {
    CallError::failed(api, call, AclError::Failure)
}

impl Api {
    /// The model table, or [`CallError::Unsupported`] naming the first missing function.
    #[inline]
    fn model_table(&self) -> Result<&ModelTable> {
        self.models()
            .map_err(|e| CallError::Unsupported { symbol: e.symbol })
    }

    /// `aclmdlQuerySize(path, &work, &weight)` (MD2): the work and weight memory a
    /// `...WithMem` load of the model file needs. Safe, but not a query the runtime allows
    /// anywhere: it reads the whole file into host memory and parses it (an allocation and
    /// a read of any length, which C8 keeps out of callbacks), so on a thread that runs a
    /// callback, host function or simulated kernel of the typed API it is
    /// [`CallError::InsideCallback`], and the runtime is not called. No current context is
    /// needed.
    pub fn model_query_size(&self, path: &CStr) -> Result<(usize, usize)> {
        refuse_inside_callback("aclmdlQuerySize")?;
        let (mut work, mut weight) = (0, 0);
        // SAFETY: a NUL-terminated path and two writable locals.
        unsafe { model_call!(self, aclmdlQuerySize(path.as_ptr(), &mut work, &mut weight))? };
        Ok((work, weight))
    }

    /// `aclmdlLoadFromFile(path, &id)` (MD1): the model is bound to the current context.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); the model is the
    /// caller's to unload.
    pub unsafe fn model_load_from_file(&self, path: &CStr) -> Result<u32> {
        let mut id = 0;
        // SAFETY: a NUL-terminated path and a writable local.
        unsafe { model_call!(self, aclmdlLoadFromFile(path.as_ptr(), &mut id))? };
        Ok(id)
    }

    /// `aclmdlLoadFromMem(bytes, size, &id)` (MD3).
    ///
    /// # Safety
    /// As [`model_load_from_file`](Self::model_load_from_file), and: `bytes` stays valid and
    /// unchanged until the model is unloaded (MD3).
    pub unsafe fn model_load_from_mem(&self, bytes: *const c_void, size: usize) -> Result<u32> {
        let mut id = 0;
        // SAFETY: the caller's contract; a writable local.
        unsafe { model_call!(self, aclmdlLoadFromMem(bytes, size, &mut id))? };
        Ok(id)
    }

    /// `aclmdlLoadFromFileWithMem(path, &id, work, work_size, weight, weight_size)` (MD2).
    ///
    /// # Safety
    /// As [`model_load_from_file`](Self::model_load_from_file), and: both ranges are device
    /// memory of at least the sizes [`model_query_size`](Self::model_query_size) reports,
    /// allocated and used by nothing else until the model is unloaded (MD2).
    pub unsafe fn model_load_from_file_with_mem(
        &self,
        path: &CStr,
        work: (*mut c_void, usize),
        weight: (*mut c_void, usize),
    ) -> Result<u32> {
        let mut id = 0;
        // SAFETY: the caller's contract; a NUL-terminated path and a writable local.
        unsafe {
            model_call!(
                self,
                aclmdlLoadFromFileWithMem(
                    path.as_ptr(),
                    &mut id,
                    work.0,
                    work.1,
                    weight.0,
                    weight.1
                )
            )?
        };
        Ok(id)
    }

    /// `aclmdlUnload(id)` (MD7).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: no execution of the
    /// model is pending, and neither it nor its description is used afterwards (MD4, MD7).
    pub unsafe fn model_unload(&self, id: u32) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { model_call!(self, aclmdlUnload(id)) }
    }

    /// `aclmdlCreateDesc()`: an empty description, filled by
    /// [`model_get_desc`](Self::model_get_desc).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); the description is the
    /// caller's to destroy.
    pub unsafe fn model_create_desc(&self) -> Result<*mut aclmdlDesc> {
        let table = self.model_table()?;
        // SAFETY: no arguments.
        let desc = unsafe { (table.aclmdlCreateDesc)() };
        if desc.is_null() {
            return Err(null_handle(self, "aclmdlCreateDesc"));
        }
        Ok(desc)
    }

    /// `aclmdlGetDesc(desc, id)` (MD4): describes loaded model `id`.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); `desc` is live, and is
    /// not queried once the model is unloaded (MD4).
    pub unsafe fn model_get_desc(&self, desc: *mut aclmdlDesc, id: u32) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { model_call!(self, aclmdlGetDesc(desc, id)) }
    }

    /// `aclmdlDestroyDesc(desc)`.
    ///
    /// # Safety
    /// `desc` is live and not used afterwards.
    pub unsafe fn model_destroy_desc(&self, desc: *mut aclmdlDesc) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { model_call!(self, aclmdlDestroyDesc(desc)) }
    }

    /// The number of inputs and outputs, and each one's size in bytes (MD10).
    ///
    /// # Safety
    /// `desc` is a live description of a loaded model (MD4).
    pub unsafe fn model_io_sizes(&self, desc: *mut aclmdlDesc) -> Result<(Vec<usize>, Vec<usize>)> {
        let t = self.model_table()?;
        // SAFETY: the caller's contract.
        let inputs = unsafe { (t.aclmdlGetNumInputs)(desc) };
        // SAFETY: the caller's contract.
        let outputs = unsafe { (t.aclmdlGetNumOutputs)(desc) };
        let input_sizes = (0..inputs)
            // SAFETY: the caller's contract; an index below the count.
            .map(|i| unsafe { (t.aclmdlGetInputSizeByIndex)(desc, i) })
            .collect();
        let output_sizes = (0..outputs)
            // SAFETY: as above.
            .map(|i| unsafe { (t.aclmdlGetOutputSizeByIndex)(desc, i) })
            .collect();
        Ok((input_sizes, output_sizes))
    }

    /// `aclmdlGetInputDims` / `aclmdlGetOutputDims` / `aclmdlGetCurOutputDims` (MD12):
    /// the tensor's name and dimensions. `which`: 0 input, 1 output, 2 current output.
    ///
    /// # Safety
    /// `desc` is a live description of a loaded model (MD4).
    pub unsafe fn model_dims(
        &self,
        desc: *mut aclmdlDesc,
        which: u8,
        index: usize,
    ) -> Result<(String, Vec<i64>)> {
        let t = self.model_table()?;
        let mut dims = Box::new(aclmdlIODims {
            name: [0; 128],
            dimCount: 0,
            dims: [0; 128],
        });
        let (call, function) = match which {
            0 => ("aclmdlGetInputDims", t.aclmdlGetInputDims),
            1 => ("aclmdlGetOutputDims", t.aclmdlGetOutputDims),
            _ => ("aclmdlGetCurOutputDims", t.aclmdlGetCurOutputDims),
        };
        // SAFETY: the caller's contract; a writable, boxed `aclmdlIODims`.
        check(self, call, unsafe { function(desc, index, &mut *dims) })?;
        let name_len = dims.name.iter().position(|&c| c == 0).unwrap_or(128);
        let name: Vec<u8> = dims.name[..name_len].iter().map(|&c| c as u8).collect();
        let count = dims.dimCount.min(128);
        Ok((
            String::from_utf8_lossy(&name).into_owned(),
            dims.dims[..count].to_vec(),
        ))
    }

    /// `aclmdlGetDynamicBatch(desc, &batch)` (MD11): the model's batch gears, empty for a
    /// model without dynamic batch.
    ///
    /// A `batchCount` beyond what `aclmdlBatch` holds (`ACL_MAX_BATCH_NUM`, 128) is an
    /// error, never a list cut short (its last gear, the largest, is the one the model's
    /// sizes are for, MD10): [`CallError::Failed`] with [`AclError::Failure`]. (The
    /// vendor's implementation refuses such a model itself, with
    /// `ACL_ERROR_STORAGE_OVER_LIMIT`; a runtime that answers so is not to be trusted.)
    ///
    /// # Safety
    /// `desc` is a live description of a loaded model (MD4).
    pub unsafe fn model_dynamic_batch(&self, desc: *mut aclmdlDesc) -> Result<Vec<u64>> {
        let mut gears = Box::new(aclmdlBatch {
            batchCount: 0,
            batch: [0; ACL_MAX_BATCH_NUM as usize],
        });
        // SAFETY: the caller's contract; a writable, boxed `aclmdlBatch`.
        unsafe { model_call!(self, aclmdlGetDynamicBatch(desc, &mut *gears))? };
        listed_gears(&gears).ok_or(CallError::Failed {
            call: "aclmdlGetDynamicBatch",
            code: AclError::Failure,
            failure: super::Failure::default(),
        })
    }

    /// `aclmdlGetInputDataType` (`output` false) / `aclmdlGetOutputDataType` (`output` true)
    /// (MD13): the element type of tensor `index`, as the runtime answers it. The queries
    /// have no error code: `ACL_DT_UNDEFINED` is their failure (a null description, an index
    /// out of range), left to the caller to refuse.
    ///
    /// # Safety
    /// `desc` is a live description of a loaded model (MD4).
    pub unsafe fn model_data_type(
        &self,
        desc: *mut aclmdlDesc,
        output: bool,
        index: usize,
    ) -> Result<aclDataType> {
        let t = self.model_table()?;
        let function = if output {
            t.aclmdlGetOutputDataType
        } else {
            t.aclmdlGetInputDataType
        };
        // SAFETY: the caller's contract; the runtime checks the index (one out of range is
        // answered `ACL_DT_UNDEFINED`, not read).
        Ok(unsafe { function(desc, index) })
    }

    /// `aclmdlGetInputFormat` (`output` false) / `aclmdlGetOutputFormat` (`output` true)
    /// (MD13): the layout of tensor `index`; `ACL_FORMAT_UNDEFINED` is the queries' failure,
    /// as for [`model_data_type`](Self::model_data_type).
    ///
    /// # Safety
    /// `desc` is a live description of a loaded model (MD4).
    pub unsafe fn model_format(
        &self,
        desc: *mut aclmdlDesc,
        output: bool,
        index: usize,
    ) -> Result<aclFormat> {
        let t = self.model_table()?;
        let function = if output {
            t.aclmdlGetOutputFormat
        } else {
            t.aclmdlGetInputFormat
        };
        // SAFETY: as in `model_data_type`.
        Ok(unsafe { function(desc, index) })
    }

    /// `aclmdlGetInputIndexByName(desc, name, &index)`.
    ///
    /// # Safety
    /// `desc` is a live description of a loaded model (MD4).
    pub unsafe fn model_input_index(&self, desc: *mut aclmdlDesc, name: &CStr) -> Result<usize> {
        let mut index = 0;
        // SAFETY: the caller's contract; a NUL-terminated name and a writable local.
        unsafe {
            model_call!(
                self,
                aclmdlGetInputIndexByName(desc, name.as_ptr(), &mut index)
            )?
        };
        Ok(index)
    }

    /// `aclmdlCreateDataset()`: an empty dataset (MD5).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); the dataset is the
    /// caller's to destroy, after the data buffers added to it.
    pub unsafe fn create_dataset(&self) -> Result<*mut aclmdlDataset> {
        let t = self.model_table()?;
        // SAFETY: no arguments.
        let dataset = unsafe { (t.aclmdlCreateDataset)() };
        if dataset.is_null() {
            return Err(null_handle(self, "aclmdlCreateDataset"));
        }
        Ok(dataset)
    }

    /// `aclCreateDataBuffer(data, size)`: describes `size` bytes at `data` (MD5, MD9).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer); the buffer is the
    /// caller's to destroy, and the memory stays allocated while an execution uses it.
    pub unsafe fn create_data_buffer(
        &self,
        data: *mut c_void,
        size: usize,
    ) -> Result<*mut aclDataBuffer> {
        let t = self.model_table()?;
        // SAFETY: the caller's contract.
        let buffer = unsafe { (t.aclCreateDataBuffer)(data, size) };
        if buffer.is_null() {
            return Err(null_handle(self, "aclCreateDataBuffer"));
        }
        Ok(buffer)
    }

    /// `aclmdlAddDatasetBuffer(dataset, buffer)` (MD5): the dataset refers to the buffer,
    /// which must outlive it.
    ///
    /// # Safety
    /// Both are live, and no pending execution uses the dataset (MD6).
    pub unsafe fn add_dataset_buffer(
        &self,
        dataset: *mut aclmdlDataset,
        buffer: *mut aclDataBuffer,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { model_call!(self, aclmdlAddDatasetBuffer(dataset, buffer)) }
    }

    /// `aclDestroyDataBuffer(buffer)`.
    ///
    /// # Safety
    /// `buffer` is live, no pending execution uses a dataset holding it (MD6), and it is not
    /// used afterwards.
    pub unsafe fn destroy_data_buffer(&self, buffer: *mut aclDataBuffer) -> Result<()> {
        let t = self.model_table()?;
        // SAFETY: the caller's contract.
        check(self, "aclDestroyDataBuffer", unsafe {
            (t.aclDestroyDataBuffer)(buffer)
        })
    }

    /// `aclmdlDestroyDataset(dataset)`: the dataset only; its data buffers are destroyed
    /// separately (MD5).
    ///
    /// # Safety
    /// `dataset` is live, no pending execution uses it (MD6), and it is not used afterwards.
    pub unsafe fn destroy_dataset(&self, dataset: *mut aclmdlDataset) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { model_call!(self, aclmdlDestroyDataset(dataset)) }
    }

    /// `aclmdlExecute(id, input, output)` (MD1, MD6): synchronous.
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: the model's context
    /// is current, the datasets match the model (MD10) and their memory is device memory no
    /// one else uses during the call (MD8, MD9).
    pub unsafe fn model_execute(
        &self,
        id: u32,
        input: *const aclmdlDataset,
        output: *mut aclmdlDataset,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { model_call!(self, aclmdlExecute(id, input, output)) }
    }

    /// `aclmdlExecuteAsync(id, input, output, stream)` (MD6).
    ///
    /// # Safety
    /// As [`model_execute`](Self::model_execute), and: the model, both datasets and their
    /// memory stay alive and untouched until the execution is proven done (MD6, MD7), and no
    /// execution of the model is pending on another stream (MD8).
    pub unsafe fn model_execute_async(
        &self,
        id: u32,
        input: *const aclmdlDataset,
        output: *mut aclmdlDataset,
        stream: aclrtStream,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { model_call!(self, aclmdlExecuteAsync(id, input, output, stream)) }
    }

    /// `aclmdlSetDynamicBatchSize(id, dataset, index, batch)` (MD11).
    ///
    /// # Safety
    /// The [common contract](crate::result#safety-of-the-raw-layer), and: `dataset` is a live
    /// input dataset of the model, used by no pending execution (MD6).
    pub unsafe fn model_set_dynamic_batch(
        &self,
        id: u32,
        dataset: *mut aclmdlDataset,
        index: usize,
        batch: u64,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { model_call!(self, aclmdlSetDynamicBatchSize(id, dataset, index, batch)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_count_beyond_the_array_is_refused_not_cut() {
        let mut batch = aclmdlBatch {
            batchCount: 3,
            batch: [0; ACL_MAX_BATCH_NUM as usize],
        };
        batch.batch[..3].copy_from_slice(&[1, 2, 4]);
        assert_eq!(listed_gears(&batch), Some(vec![1, 2, 4]));
        batch.batchCount = 0;
        assert_eq!(listed_gears(&batch), Some(vec![]));
        batch.batchCount = 128;
        assert_eq!(listed_gears(&batch).map(|g| g.len()), Some(128));
        for count in [129, 200, usize::MAX] {
            batch.batchCount = count;
            assert_eq!(listed_gears(&batch), None, "batchCount {count}");
        }
    }
}
