//! Asynchronous execution of any model on a stream of the caller's choice, inside an
//! [`AsyncScope`] (M1, MD6, MD8): the model and every input and output buffer stay borrowed
//! until the scope has synchronised the stream.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;

use super::description::{check_data_type, check_tensor};
use super::slot::SlotDatasets;
use super::{Dynamic, Model, ModelKind, Static};
use crate::sys::bindings::aclrtStream;
use crate::typed::context::Context;
use crate::typed::dtype::{DataType, Element};
use crate::typed::error::{Error, ModelTensor, Result};
use crate::typed::handle::report_drop_error;
use crate::typed::memory::{
    AsyncScope, DeviceBuffer, DeviceSlice, DeviceSliceMut, MallocPolicy, Memory, Pending,
    PendingDevice,
};
use crate::typed::stream::Stream;

/// One input of an asynchronous model execution ([`AsyncScope::execute`]): device memory of
/// an [`Element`] type (MD9, MD13), borrowed for the whole scope (M1). Made with `.into()`
/// from a `&DeviceBuffer<T>`, a [`DeviceSlice`], a `&DeviceSliceMut<T>` or a
/// [`PendingDevice`] (the result of an earlier copy or kernel of the scope, which the
/// execution is then ordered after: E2, E3). Host memory is not a model input and does not
/// convert (MD9).
#[derive(Clone, Copy, Debug)]
pub struct ModelInput<'scope> {
    ptr: *const c_void,
    byte_len: usize,
    data_type: DataType,
    device: Option<i32>,
    writer: Option<(aclrtStream, &'scope Context<'scope>)>,
    _borrow: PhantomData<&'scope [u8]>,
}

/// One output of an asynchronous model execution ([`AsyncScope::execute`]): device memory
/// of an [`Element`] type (MD9, MD13), borrowed mutably for the whole scope (M1). Made with
/// `.into()` from a `&mut DeviceBuffer<T>` or a [`DeviceSliceMut`]; read back in the same
/// scope through [`Executed::output`].
#[derive(Debug)]
pub struct ModelOutput<'scope> {
    ptr: *mut c_void,
    byte_len: usize,
    data_type: DataType,
    device: Option<i32>,
    _borrow: PhantomData<&'scope mut [u8]>,
}

impl<'scope> ModelInput<'scope> {
    fn new<T: Element>(
        memory: &impl Memory<T>,
        writer: Option<(aclrtStream, &'scope Context<'scope>)>,
    ) -> Self {
        ModelInput {
            ptr: memory.as_ptr(),
            byte_len: memory.len() * size_of::<T>(),
            data_type: T::DATA_TYPE,
            device: memory.device_id(),
            writer,
            _borrow: PhantomData,
        }
    }
}

impl<'scope> ModelInput<'scope> {
    /// An input of `byte_len` bytes of `data_type` at `ptr` (device or media memory,
    /// MD9) on `device`, borrowed by the caller for `'scope`, written by `writer`'s pending
    /// task if any (joined before the execution, E2, E3).
    pub(crate) fn from_parts(
        ptr: *const c_void,
        byte_len: usize,
        data_type: DataType,
        device: Option<i32>,
        writer: Option<(aclrtStream, &'scope Context<'scope>)>,
    ) -> Self {
        ModelInput {
            ptr,
            byte_len,
            data_type,
            device,
            writer,
            _borrow: PhantomData,
        }
    }
}

impl<'scope, 'ctx: 'scope, T: Element> From<&'scope DeviceBuffer<'ctx, T>> for ModelInput<'scope> {
    fn from(buffer: &'scope DeviceBuffer<'ctx, T>) -> Self {
        ModelInput::new(buffer, None)
    }
}

impl<'scope, T: Element> From<DeviceSlice<'scope, T>> for ModelInput<'scope> {
    fn from(slice: DeviceSlice<'scope, T>) -> Self {
        ModelInput::new(&slice, None)
    }
}

impl<'scope, 'a: 'scope, T: Element> From<&'scope DeviceSliceMut<'a, T>> for ModelInput<'scope> {
    fn from(slice: &'scope DeviceSliceMut<'a, T>) -> Self {
        ModelInput::new(slice, None)
    }
}

impl<'scope, T: Element> From<PendingDevice<'scope, T>> for ModelInput<'scope> {
    fn from(pending: PendingDevice<'scope, T>) -> Self {
        use crate::typed::memory::Source;
        ModelInput {
            ptr: pending.as_ptr(),
            byte_len: pending.len() * size_of::<T>(),
            data_type: T::DATA_TYPE,
            device: pending.device_id(),
            writer: pending.writer(),
            _borrow: PhantomData,
        }
    }
}

impl<'scope, 'ctx: 'scope, T: Element> From<&'scope mut DeviceBuffer<'ctx, T>>
    for ModelOutput<'scope>
{
    fn from(buffer: &'scope mut DeviceBuffer<'ctx, T>) -> Self {
        ModelOutput {
            ptr: buffer.as_raw(),
            byte_len: buffer.byte_len(),
            data_type: T::DATA_TYPE,
            device: Memory::device_id(buffer),
            _borrow: PhantomData,
        }
    }
}

impl<'scope, T: Element> From<DeviceSliceMut<'scope, T>> for ModelOutput<'scope> {
    fn from(mut slice: DeviceSliceMut<'scope, T>) -> Self {
        use crate::typed::memory::MemoryMut;
        ModelOutput {
            ptr: slice.as_mut_ptr(),
            byte_len: Memory::len(&slice) * size_of::<T>(),
            data_type: T::DATA_TYPE,
            device: Memory::device_id(&slice),
            _borrow: PhantomData,
        }
    }
}

/// The outputs of an execution issued by [`AsyncScope::execute`], as sources of later copies
/// and kernels of the same scope: they are written by a task still pending, so the host can
/// read them only after the scope (M1); a read on another stream is ordered after the
/// execution by a join (E2, E3).
#[derive(Debug)]
pub struct Executed<'scope, const M: usize> {
    outputs: [ModelOutput<'scope>; M],
    stream: aclrtStream,
    ctx: &'scope Context<'scope>,
}

impl<'scope, const M: usize> Executed<'scope, M> {
    /// Output `index` as a [`PendingDevice`] of `T`, which must be its element type
    /// ([`Error::ModelTypeMismatch`], MD13).
    pub fn output<T: Element>(&self, index: usize) -> Result<PendingDevice<'scope, T>> {
        let Some(output) = self.outputs.get(index) else {
            return Err(Error::InvalidArgument("no such model output"));
        };
        check_data_type(ModelTensor::output(index), output.data_type, T::DATA_TYPE)?;
        // Equal element types have equal sizes and alignments (the `Element` contract), so
        // the buffer, made from a `T`-typed one, holds whole, aligned `T`s.
        Ok(Pending::device(
            output.ptr.cast_const(),
            output.byte_len / size_of::<T>(),
            output.device,
            self.stream,
            self.ctx,
        ))
    }
}

/// The datasets a model keeps for its scoped executions, over the buffers of the last one:
/// the steady state (the same buffers every time) creates nothing.
pub(crate) struct ScopedDatasets<'ctx> {
    datasets: SlotDatasets<'ctx>,
    /// The addresses the datasets describe: the data inputs, then the outputs.
    addresses: Box<[*const c_void]>,
}

impl<'ctx> ScopedDatasets<'ctx> {
    /// Destroys the datasets (MD5) and frees the batch buffer. The caller proved no execution
    /// uses them (MD6).
    pub(crate) fn release(self, ctx: &Context<'_>) {
        for error in self.datasets.release(ctx) {
            report_drop_error("Model (its scoped execution datasets)", Err(error));
        }
    }
}

impl<'scope, 'env> AsyncScope<'scope, 'env> {
    /// `aclmdlExecuteAsync` of `model` on `stream` (MD6), from `inputs` to `outputs`: any
    /// model, with one buffer per data input and per output in the model's order
    /// ([`Error::ModelTensorCount`]), each of the tensor's element type
    /// ([`Error::ModelTypeMismatch`], MD13) and size ([`Error::ModelSizeMismatch`], MD10),
    /// all checked before anything is issued. The model must be of the scope's context (MD1).
    ///
    /// Everything stays borrowed until the scope has synchronised `stream` (M1): the model
    /// (`&'scope mut`: it cannot be unloaded, dropped or executed elsewhere meanwhile, MD7,
    /// MD8), the inputs (shared) and the outputs (exclusive). An input written by an earlier
    /// task of the scope on another stream ([`PendingDevice`]) is waited for with a join
    /// (E2, E3). The outputs come back as [`Executed`], the sources of later copies and
    /// kernels. A model with executions pending in a [`Pipeline`](crate::Pipeline) on another
    /// stream is [`Error::ModelInUse`] (MD8).
    ///
    /// The datasets are created at the first execution and kept by the model for the next
    /// one over the same buffers: the steady state creates nothing.
    ///
    /// ```no_run
    /// # use ascend_typestate::{Acl, MallocPolicy};
    /// # let acl = Acl::init()?;
    /// # let ctx = acl.set_device(0)?.into_default_context()?;
    /// let mut model = ctx.load_model("resnet50.om")?;
    /// let stream = ctx.create_stream()?;
    /// let image = vec![0.5f32; 3 * 224 * 224];
    /// let mut scores = vec![0.0f32; 1000];
    /// let mut input = ctx.alloc::<f32>(image.len(), MallocPolicy::HugeFirst)?;
    /// let mut output = ctx.alloc::<f32>(scores.len(), MallocPolicy::HugeFirst)?;
    /// ctx.async_scope(|scope| {
    ///     let input = scope.copy(&stream, &mut input, &image[..])?;                 // H2D
    ///     let run = scope.execute(&stream, &mut model, [input.into()], [(&mut output).into()])?;
    ///     scope.copy(&stream, &mut scores[..], run.output::<f32>(0)?)?;              // D2H
    ///     Ok(())
    /// })?;                                        // synchronised: `scores` is complete (M1)
    /// # Ok::<(), ascend_typestate::Error>(())
    /// ```
    pub fn execute<const N: usize, const M: usize>(
        &'scope self,
        stream: &'scope Stream<'_>,
        model: &'scope mut Model<'_, Static>,
        inputs: [ModelInput<'scope>; N],
        outputs: [ModelOutput<'scope>; M],
    ) -> Result<Executed<'scope, M>> {
        self.execute_model(stream, model, None, inputs, outputs)
    }

    /// As [`execute`](Self::execute) for a dynamic-batch model: `aclmdlSetDynamicBatchSize`
    /// on the model's input dataset, then the execution (MD11: before each one). `batch`
    /// must be one of the model's [gears](Model::gears) ([`Error::NotAGear`]); `inputs` are
    /// the data inputs only (the batch input is the model's own), sized for the largest gear.
    pub fn execute_batch<const N: usize, const M: usize>(
        &'scope self,
        stream: &'scope Stream<'_>,
        model: &'scope mut Model<'_, Dynamic>,
        batch: u64,
        inputs: [ModelInput<'scope>; N],
        outputs: [ModelOutput<'scope>; M],
    ) -> Result<Executed<'scope, M>> {
        model.check_gear(batch)?;
        self.execute_model(stream, model, Some(batch), inputs, outputs)
    }

    fn execute_model<K: ModelKind, const N: usize, const M: usize>(
        &'scope self,
        stream: &'scope Stream<'_>,
        model: &'scope mut Model<'_, K>,
        batch: Option<u64>,
        inputs: [ModelInput<'scope>; N],
        outputs: [ModelOutput<'scope>; M],
    ) -> Result<Executed<'scope, M>> {
        if !std::ptr::addr_eq(model.context(), self.ctx) {
            return Err(self.ctx.mismatch(model.context(), "a model"));
        }
        self.check_tensors(model, &inputs, &outputs)?;
        model.shared().check_stream(stream.as_raw())?;
        self.use_stream(stream)?;
        for input in &inputs {
            self.after(input.writer, stream)?;
        }
        let addresses = inputs
            .iter()
            .map(|i| i.ptr)
            .chain(outputs.iter().map(|o| o.ptr.cast_const()));
        let datasets = model.scoped_datasets(addresses, || {
            let ins: Vec<_> = inputs
                .iter()
                .map(|i| (i.ptr.cast_mut(), i.byte_len))
                .collect();
            let outs: Vec<_> = outputs.iter().map(|o| (o.ptr, o.byte_len)).collect();
            (ins, outs)
        })?;
        let (input_set, output_set) = (datasets.input_set.as_ptr(), datasets.output_set.as_ptr());
        let batch_index = datasets.batch.as_ref().map(|(index, _)| *index);
        let api = self.ctx.api();
        if let (Some(batch), Some(index)) = (batch, batch_index) {
            // SAFETY: the model's own input dataset, used by no pending execution (the
            // model was borrowed by the scope that ran its last one until that scope
            // synchronised it); a gear of the model (checked), at its batch input (MD11).
            unsafe { api.model_set_dynamic_batch(model.id(), input_set, index, batch)? };
        }
        // SAFETY: the model is loaded in the stream's context (MD1, checked above); the
        // datasets describe device memory of the model's sizes and types (MD9, MD10, MD13,
        // checked above), borrowed until the scope synchronises `stream` (M1, MD6), as is the
        // model, which therefore cannot be unloaded (MD7) or executed elsewhere (MD8) before
        // this execution is done; inputs written on another stream are joined (E2, E3).
        unsafe { api.model_execute_async(model.id(), input_set, output_set, stream.as_raw())? };
        Ok(Executed {
            outputs,
            stream: stream.as_raw(),
            ctx: self.ctx,
        })
    }

    /// The buffers against the model's description: counts, element types, sizes (MD10,
    /// MD13), devices (MD9).
    fn check_tensors<K: ModelKind>(
        &self,
        model: &Model<'_, K>,
        inputs: &[ModelInput<'scope>],
        outputs: &[ModelOutput<'scope>],
    ) -> Result<()> {
        let count = |what, expected: usize, found: usize| {
            if expected == found {
                Ok(())
            } else {
                Err(Error::ModelTensorCount {
                    what,
                    expected: u32::try_from(expected).unwrap_or(u32::MAX),
                    found: u32::try_from(found).unwrap_or(u32::MAX),
                })
            }
        };
        count(
            "inputs",
            model.info.data_tensors(false).count(),
            inputs.len(),
        )?;
        count("outputs", model.info.outputs.len(), outputs.len())?;
        for ((id, tensor), input) in model.info.data_tensors(false).zip(inputs) {
            check_tensor(id, tensor, input.data_type, input.byte_len)?;
            self.ctx.check_device(input.device)?;
        }
        for ((id, tensor), output) in model.info.data_tensors(true).zip(outputs) {
            check_tensor(id, tensor, output.data_type, output.byte_len)?;
            self.ctx.check_device(output.device)?;
        }
        Ok(())
    }
}

impl<'ctx, K: ModelKind> Model<'ctx, K> {
    /// The datasets for a scoped execution over `addresses`: the kept ones if they describe
    /// the same buffers, else new ones (`buffers` gives them), replacing the kept ones.
    /// The caller holds the model for its scope, so no execution uses the kept ones (MD6).
    fn scoped_datasets(
        &mut self,
        addresses: impl Iterator<Item = *const c_void> + Clone,
        buffers: impl FnOnce() -> (Vec<(*mut c_void, usize)>, Vec<(*mut c_void, usize)>),
    ) -> Result<&SlotDatasets<'ctx>> {
        let same = self
            .scoped
            .as_ref()
            .is_some_and(|kept| kept.addresses.iter().copied().eq(addresses.clone()));
        if !same {
            if let Some(kept) = self.scoped.take() {
                // No execution uses them: the scope that ran the last one synchronised its
                // stream before its borrow of the model ended (M1, MD6).
                kept.release(self.ctx);
            }
            let (inputs, outputs) = buffers();
            let datasets =
                SlotDatasets::bind(self.ctx, self, &inputs, &outputs, MallocPolicy::HugeFirst)?;
            self.scoped = Some(Box::new(ScopedDatasets {
                datasets,
                addresses: addresses.collect(),
            }));
        }
        match &self.scoped {
            Some(kept) => Ok(&kept.datasets),
            None => Err(Error::InvalidArgument(
                "a model's scoped datasets are missing",
            )),
        }
    }
}
