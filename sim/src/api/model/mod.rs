//! Models (`aclmdl*`, MD1-MD13) and data buffers: loading the simulator's text format
//! (`crate::model`), descriptions, datasets, synchronous and asynchronous execution.
//!
//! Descriptions, datasets and data buffers are host objects behind fake handles like the
//! runtime's (never dereferenced). A loaded model is bound to its context (MD1); each
//! execution holds the model (MD7), its datasets and data buffers (MD6) and the memory it
//! uses (M2) until it is done, and is registered with the memory it reads and writes, so
//! that a copy or memset touching that memory meanwhile is an MD6 finding. The work, weight
//! and model-byte regions a loaded model holds are registered too (MD2, MD3).
//!
//! Layer: C entry points (`api`); may import every layer below (`exec`, `rules`, `extra`,
//! `state`, `model`, `errmsg`, `calls`, `pt`) and the crate root's shared helpers. Split
//! along its seams: [`load`] (loading and unloading), [`execute`] (executions and dynamic
//! batches), [`desc`] (description queries), [`dataset`] (datasets and data buffers); this
//! file holds the handle helpers they share.

use std::ffi::{CStr, c_char, c_void};
use std::sync::Arc;
use std::sync::atomic::AtomicU32;

use crate::model::Model;
use crate::state::{DATABUF_BASE, DATASET_BASE, DESC_BASE, Rt, code, decode, handle};
use crate::{Call, R, enter, errmsg, ffi, rt_of};

mod dataset;
mod desc;
mod execute;
mod load;

pub use crate::state::models::{
    DataBuf, Dataset, Desc, Exec, ExecUse, Loaded, Models, Region, Run,
};
pub use dataset::{
    aclCreateDataBuffer, aclDestroyDataBuffer, aclGetDataBufferAddr, aclGetDataBufferSizeV2,
    aclmdlAddDatasetBuffer, aclmdlCreateDataset, aclmdlDestroyDataset, aclmdlGetDatasetBuffer,
    aclmdlGetDatasetNumBuffers,
};
pub use desc::{
    Batch, IODims, aclmdlCreateDesc, aclmdlDestroyDesc, aclmdlGetCurOutputDims, aclmdlGetDesc,
    aclmdlGetDynamicBatch, aclmdlGetInputDataType, aclmdlGetInputDims, aclmdlGetInputFormat,
    aclmdlGetInputIndexByName, aclmdlGetInputSizeByIndex, aclmdlGetNumInputs, aclmdlGetNumOutputs,
    aclmdlGetOutputDataType, aclmdlGetOutputDims, aclmdlGetOutputFormat,
    aclmdlGetOutputSizeByIndex,
};
pub use execute::{
    aclmdlExecute, aclmdlExecuteAsync, aclmdlSetDynamicBatchSize, aclmdlSetDynamicHWSize,
};
pub use load::{
    aclmdlLoadFromFile, aclmdlLoadFromFileWithMem, aclmdlLoadFromMem, aclmdlLoadFromMemWithMem,
    aclmdlQuerySize, aclmdlUnload,
};

/// Model ids start at 1 and are never reused, not even across `aclFinalize`.
static NEXT_MODEL_ID: AtomicU32 = AtomicU32::new(1);

/// At most this many destroyed handles are remembered for MD5 findings.
const TOMBS: usize = 1 << 16;

/// As [`ffi`] for the functions that return a value instead of an error code (0 or NULL
/// on failure, which sets the recent error message).
fn ffi_val<T: Copy>(default: T, f: impl FnOnce() -> Result<T, i32>) -> T {
    let mut v = default;
    let _ = ffi(|| {
        v = f()?;
        Ok(())
    });
    v
}

fn bad(what: &str, h: usize) -> i32 {
    errmsg::why(
        code::INVALID_PARAM,
        format!("{what} {h:#x} is unknown or destroyed"),
    )
}

/// Remembers a destroyed description, dataset or data buffer (MD5).
fn bury(m: &mut Models, id: u64, kind: &'static str) {
    m.tombs.insert(id, kind);
    if m.tombs.len() > TOMBS {
        m.tombs.pop_first();
    }
}

/// MD5: `call` uses the destroyed `kind` handle `h`; the call returns 100000.
fn destroyed(rt: &mut Rt, call: &str, kind: &str, h: usize) -> i32 {
    rt.report(
        "MD5",
        format!(
            "{call}: {kind} {h:#x} was destroyed: a destroyed {kind} must not be used (nor destroyed) again; the call returns 100000"
        ),
    );
    errmsg::why(
        code::INVALID_PARAM,
        format!("{kind} {h:#x} was destroyed (MD5)"),
    )
}

/// The id of a live handle of `kind`; a destroyed one (remembered) is an MD5 finding, an
/// unknown one only 100000.
fn live_id(
    rt: &mut Rt,
    call: &str,
    (base, kind): (usize, &'static str),
    h: usize,
    live: impl Fn(&Models, u64) -> bool,
) -> Result<u64, i32> {
    match decode(base, h) {
        Some(id) if live(&rt.models, id) => Ok(id),
        Some(id) if rt.models.tombs.get(&id) == Some(&kind) => Err(destroyed(rt, call, kind, h)),
        _ => Err(bad(kind, h)),
    }
}

fn dataset_id(rt: &mut Rt, call: &str, h: usize) -> Result<u64, i32> {
    live_id(rt, call, (DATASET_BASE, "dataset"), h, |m, id| {
        m.datasets.get(&id).is_some_and(|d| !d.destroyed)
    })
}

fn buf_id(rt: &mut Rt, call: &str, h: usize) -> Result<u64, i32> {
    live_id(rt, call, (DATABUF_BASE, "data buffer"), h, |m, id| {
        m.bufs.get(&id).is_some_and(|b| !b.destroyed)
    })
}

fn desc_id(rt: &mut Rt, call: &str, h: usize) -> Result<u64, i32> {
    live_id(rt, call, (DESC_BASE, "model description"), h, |m, id| {
        m.descs.contains_key(&id)
    })
}

/// The live data buffer `b` a dataset holds: (address, size); one destroyed since it was
/// added is an MD5 finding (ids are never reused: it was live when added).
fn held_buf(rt: &mut Rt, call: &str, ds: u64, b: u64) -> Result<(usize, usize), i32> {
    match rt.models.bufs.get(&b).filter(|x| !x.destroyed) {
        Some(x) => Ok((x.data, x.size)),
        None => {
            let h = handle(DATABUF_BASE, b);
            rt.report(
                "MD5",
                format!(
                    "{call}: dataset {:#x} holds data buffer {h:#x}, which was destroyed: destroy the data buffers only when the dataset is no longer used; the call returns 100000",
                    handle(DATASET_BASE, ds)
                ),
            );
            Err(errmsg::why(
                code::INVALID_PARAM,
                format!("data buffer {h:#x} of the dataset was destroyed (MD5)"),
            ))
        }
    }
}

fn loaded(rt: &Rt, id: u32) -> Result<&Loaded, i32> {
    rt.models.loaded.get(&id).ok_or_else(|| {
        errmsg::why(
            code::INVALID_MODEL_ID,
            format!("no model is loaded with id {id}"),
        )
    })
}

/// The model a description describes; MD4 when it was unloaded.
fn described(rt: &mut Rt, h: usize, call: &str) -> Result<(Arc<Model>, Option<u64>), i32> {
    let id = desc_id(rt, call, h)?;
    let Some(model_id) = rt.models.descs.get(&id).and_then(|d| d.model) else {
        return Err(errmsg::why(
            code::INVALID_PARAM,
            "the description was never filled by aclmdlGetDesc",
        ));
    };
    match rt.models.loaded.get(&model_id) {
        Some(l) => Ok((l.model.clone(), l.cur_batch)),
        None => {
            rt.report(
                "MD4",
                format!(
                    "{call}: model description {h:#x} describes model {model_id}, which was unloaded: query a description only while its model is loaded"
                ),
            );
            Err(errmsg::why(
                code::INVALID_MODEL_ID,
                format!("model {model_id} of this description was unloaded (MD4)"),
            ))
        }
    }
}

fn cstr(p: *const c_char) -> Vec<u8> {
    // SAFETY: the callers pass a non-NULL, NUL-terminated string (checked non-NULL first).
    unsafe { CStr::from_ptr(p) }.to_bytes().to_vec()
}

/// MD1: the model must be used from the context it was loaded in.
fn same_context(rt: &Rt, model_id: u32) -> R {
    let ctx = loaded(rt, model_id)?.ctx;
    if rt.cur_ctx()? != ctx {
        return Err(errmsg::why(
            code::RT_MODEL_CONTEXT,
            format!("model {model_id} was loaded in another context (MD1)"),
        ));
    }
    Ok(())
}

/// Creates a host object with a fresh handle (NULL before aclInit or with a fault).
fn create(name: &str, base: usize, add: impl FnOnce(&mut Models, u64)) -> *mut c_void {
    ffi_val(std::ptr::null_mut(), || {
        let mut g = enter(name, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = rt.new_id();
        add(&mut rt.models, id);
        Ok(handle(base, id) as *mut c_void)
    })
}
