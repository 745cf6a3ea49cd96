//! Model descriptions and their queries (`aclmdlCreateDesc`, `aclmdlGetDesc`,
//! `aclmdlGet*`; MD5, MD12, MD13).
//!
//! Layer: C entry points; imports its parent (`api::model`) and the layers below.

use std::ffi::{c_char, c_void};

use super::{bury, create, cstr, desc_id, described, ffi_val, loaded};
use crate::calls::CallId;
use crate::model::{DYNAMIC_INPUT, InputAt, Model, Tensor, acl_dt, acl_format};
use crate::state::models::Desc;
use crate::state::{DESC_BASE, code};
use crate::{Call, R, calls, check_out, enter, errmsg, ffi, non_null, out, rt_of};

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlCreateDesc() -> *mut c_void {
    calls::count(CallId::aclmdlCreateDesc);
    create("aclmdlCreateDesc", DESC_BASE, |m, id| {
        m.descs.insert(id, Desc { model: None });
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlDestroyDesc(modelDesc: *mut c_void) -> i32 {
    calls::count(CallId::aclmdlDestroyDesc);
    ffi(|| {
        non_null(&[modelDesc as usize])?;
        let mut g = enter("aclmdlDestroyDesc", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = desc_id(rt, "aclmdlDestroyDesc", modelDesc as usize)?;
        rt.models.descs.remove(&id);
        bury(&mut rt.models, id, "model description");
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDesc(modelDesc: *mut c_void, modelId: u32) -> i32 {
    calls::count(CallId::aclmdlGetDesc);
    ffi(|| {
        non_null(&[modelDesc as usize])?;
        let mut g = enter("aclmdlGetDesc", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let id = desc_id(rt, "aclmdlGetDesc", modelDesc as usize)?;
        loaded(rt, modelId)?;
        if let Some(d) = rt.models.descs.get_mut(&id) {
            d.model = Some(modelId);
        }
        Ok(())
    })
}

/// Runs a query on the model a description describes.
fn query<T: Copy>(
    name: &str,
    desc: *const c_void,
    default: T,
    f: impl FnOnce(&Model, Option<u64>) -> Result<T, i32>,
) -> T {
    ffi_val(default, || {
        non_null(&[desc as usize])?;
        let mut g = enter(name, Call::Query)?;
        let rt = rt_of(&mut g)?;
        let (model, batch) = described(rt, desc as usize, name)?;
        f(&model, batch)
    })
}

pub(super) fn no_index(index: usize) -> i32 {
    errmsg::why(code::INVALID_PARAM, format!("no tensor at index {index}"))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetNumInputs(modelDesc: *mut c_void) -> usize {
    calls::count(CallId::aclmdlGetNumInputs);
    query("aclmdlGetNumInputs", modelDesc, 0, |m, _| {
        Ok(m.input_count())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetNumOutputs(modelDesc: *mut c_void) -> usize {
    calls::count(CallId::aclmdlGetNumOutputs);
    query("aclmdlGetNumOutputs", modelDesc, 0, |m, _| {
        Ok(m.outputs.len())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputSizeByIndex(modelDesc: *mut c_void, index: usize) -> usize {
    calls::count(CallId::aclmdlGetInputSizeByIndex);
    query("aclmdlGetInputSizeByIndex", modelDesc, 0, |m, _| {
        match m.input_at(index) {
            Some(InputAt::Data(t)) => Ok(t.bytes()),
            Some(InputAt::Batch) => Ok(8),
            None => Err(no_index(index)),
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputSizeByIndex(modelDesc: *mut c_void, index: usize) -> usize {
    calls::count(CallId::aclmdlGetOutputSizeByIndex);
    query("aclmdlGetOutputSizeByIndex", modelDesc, 0, |m, _| {
        m.outputs
            .get(index)
            .map(Tensor::bytes)
            .ok_or_else(|| no_index(index))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputIndexByName(
    modelDesc: *const c_void,
    name: *const c_char,
    index: *mut usize,
) -> i32 {
    calls::count(CallId::aclmdlGetInputIndexByName);
    ffi(|| {
        non_null(&[modelDesc as usize, name as usize, index as usize])?;
        let mut g = enter("aclmdlGetInputIndexByName", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let (m, _) = described(rt, modelDesc as usize, "aclmdlGetInputIndexByName")?;
        let wanted = cstr(name);
        if let Some(at) = m.inputs.iter().position(|t| wanted == t.name.as_bytes()) {
            out(index, at)
        } else if m.dynamic() && wanted == DYNAMIC_INPUT.as_bytes() {
            out(index, m.inputs.len())
        } else {
            Err(errmsg::why(
                code::INVALID_PARAM,
                format!(
                    "the model has no input named {}",
                    String::from_utf8_lossy(&wanted)
                ),
            ))
        }
    })
}

/// `aclmdlIODims`.
#[repr(C)]
pub struct IODims {
    pub name: [c_char; 128],
    pub dim_count: usize,
    pub dims: [i64; 128],
}

fn write_dims(p: *mut IODims, name: &str, dims: &[i64]) -> R {
    check_out(p)?;
    let mut d = IODims {
        name: [0; 128],
        dim_count: dims.len(),
        dims: [0; 128],
    };
    for (o, b) in d.name.iter_mut().zip(name.bytes().take(127)) {
        *o = b as c_char;
    }
    d.dims[..dims.len()].copy_from_slice(dims);
    out(p, d)
}

fn dims_query(
    name: &str,
    desc: *const c_void,
    index: usize,
    dims: *mut IODims,
    pick: impl FnOnce(&Model, Option<u64>) -> Option<(String, Vec<i64>)>,
) -> i32 {
    ffi(|| {
        non_null(&[desc as usize, dims as usize])?;
        let mut g = enter(name, Call::Query)?;
        let rt = rt_of(&mut g)?;
        let (model, batch) = described(rt, desc as usize, name)?;
        let (n, d) = pick(&model, batch).ok_or_else(|| no_index(index))?;
        write_dims(dims, &n, &d)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputDims(
    modelDesc: *const c_void,
    index: usize,
    dims: *mut IODims,
) -> i32 {
    calls::count(CallId::aclmdlGetInputDims);
    dims_query(
        "aclmdlGetInputDims",
        modelDesc,
        index,
        dims,
        |m, _| match m.input_at(index)? {
            InputAt::Data(t) => Some((t.name.clone(), t.dims.clone())),
            InputAt::Batch => Some((DYNAMIC_INPUT.to_string(), vec![1])),
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputDims(
    modelDesc: *const c_void,
    index: usize,
    dims: *mut IODims,
) -> i32 {
    calls::count(CallId::aclmdlGetOutputDims);
    dims_query("aclmdlGetOutputDims", modelDesc, index, dims, |m, _| {
        let t = m.outputs.get(index)?;
        Some((t.name.clone(), t.dims.clone()))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetCurOutputDims(
    modelDesc: *const c_void,
    index: usize,
    dims: *mut IODims,
) -> i32 {
    calls::count(CallId::aclmdlGetCurOutputDims);
    dims_query("aclmdlGetCurOutputDims", modelDesc, index, dims, |m, b| {
        Some((m.outputs.get(index)?.name.clone(), m.output_dims(index, b)?))
    })
}

/// `aclmdlBatch`.
#[repr(C)]
pub struct Batch {
    pub batch_count: usize,
    pub batch: [u64; crate::model::MAX_GEARS],
}

/// MD11: the model's batch gears (none for a static model).
#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDynamicBatch(modelDesc: *const c_void, batch: *mut Batch) -> i32 {
    calls::count(CallId::aclmdlGetDynamicBatch);
    ffi(|| {
        non_null(&[modelDesc as usize, batch as usize])?;
        let mut g = enter("aclmdlGetDynamicBatch", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let (model, _) = described(rt, modelDesc as usize, "aclmdlGetDynamicBatch")?;
        // At most ACL_MAX_BATCH_NUM gears: a model with more is refused at load.
        debug_assert!(model.gears.len() <= crate::model::MAX_GEARS);
        let mut b = Batch {
            batch_count: model.gears.len().min(crate::model::MAX_GEARS),
            batch: [0; crate::model::MAX_GEARS],
        };
        for (o, g) in b.batch.iter_mut().zip(&model.gears) {
            *o = *g;
        }
        check_out(batch)?;
        out(batch, b)
    })
}

// ---- Element types and layouts (MD13) ------------------------------------------------
//
// The runtime's answers, with no error code: the value, or `ACL_DT_UNDEFINED` /
// `ACL_FORMAT_UNDEFINED` when the query fails (a NULL or unknown description, an index out
// of range: CANN's `aclmdlGetDataType` / `aclmdlGetFormat`), with the recent error message
// set. The dynamic-batch input is `int32`, format ND, as ATC compiles it (GE's
// `MultiBatchClonePass`); its buffer holds 8 bytes, which the batch fills as a `u64`.

/// The layout a tensor of the simulator's format reports: NCHW for 4 dims, ND otherwise.
fn format_of(t: &Tensor) -> i32 {
    if t.dims.len() == 4 {
        acl_format::NCHW
    } else {
        acl_format::ND
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputDataType(modelDesc: *const c_void, index: usize) -> i32 {
    calls::count(CallId::aclmdlGetInputDataType);
    query(
        "aclmdlGetInputDataType",
        modelDesc,
        acl_dt::UNDEFINED,
        |m, _| match m.input_at(index) {
            Some(InputAt::Data(t)) => Ok(t.dtype.acl()),
            Some(InputAt::Batch) => Ok(acl_dt::INT32),
            None => Err(no_index(index)),
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputDataType(modelDesc: *const c_void, index: usize) -> i32 {
    calls::count(CallId::aclmdlGetOutputDataType);
    query(
        "aclmdlGetOutputDataType",
        modelDesc,
        acl_dt::UNDEFINED,
        |m, _| match m.outputs.get(index) {
            Some(t) => Ok(t.dtype.acl()),
            None => Err(no_index(index)),
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputFormat(modelDesc: *const c_void, index: usize) -> i32 {
    calls::count(CallId::aclmdlGetInputFormat);
    query(
        "aclmdlGetInputFormat",
        modelDesc,
        acl_format::UNDEFINED,
        |m, _| match m.input_at(index) {
            Some(InputAt::Data(t)) => Ok(format_of(t)),
            Some(InputAt::Batch) => Ok(acl_format::ND),
            None => Err(no_index(index)),
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputFormat(modelDesc: *const c_void, index: usize) -> i32 {
    calls::count(CallId::aclmdlGetOutputFormat);
    query(
        "aclmdlGetOutputFormat",
        modelDesc,
        acl_format::UNDEFINED,
        |m, _| match m.outputs.get(index) {
            Some(t) => Ok(format_of(t)),
            None => Err(no_index(index)),
        },
    )
}
