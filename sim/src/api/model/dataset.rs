//! Datasets and data buffers (`aclmdl*Dataset*`, `acl*DataBuffer*`; MD5, MD6).
//!
//! Layer: C entry points; imports its parent (`api::model`) and the layers below.

use std::ffi::c_void;

use super::desc::no_index;
use super::{buf_id, bury, create, dataset_id, ffi_val};
use crate::calls::CallId;
use crate::state::models::{DataBuf, Dataset};
use crate::state::{DATABUF_BASE, DATASET_BASE, Rt, handle};
use crate::{Call, calls, enter, ffi, non_null, rt_of};

// ---- Datasets and data buffers -------------------------------------------------------

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlCreateDataset() -> *mut c_void {
    calls::count(CallId::aclmdlCreateDataset);
    create("aclmdlCreateDataset", DATASET_BASE, |m, id| {
        m.datasets.insert(
            id,
            Dataset {
                bufs: Vec::new(),
                batch: None,
                uses: 0,
                destroyed: false,
            },
        );
    })
}

/// MD6: destroying an object a pending execution uses.
fn md6(rt: &mut Rt, call: &str, what: &str, h: usize, uses: u32) {
    rt.report(
        "MD6",
        format!(
            "{call}({h:#x}): the {what} is used by {uses} pending model execution(s): synchronize the stream first; the simulator keeps it until they are done"
        ),
    );
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlDestroyDataset(dataset: *const c_void) -> i32 {
    calls::count(CallId::aclmdlDestroyDataset);
    ffi(|| {
        non_null(&[dataset as usize])?;
        let mut g = enter("aclmdlDestroyDataset", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = dataset_id(rt, "aclmdlDestroyDataset", dataset as usize)?;
        bury(&mut rt.models, id, "dataset");
        let uses = rt.models.datasets[&id].uses;
        if uses > 0 {
            md6(
                rt,
                "aclmdlDestroyDataset",
                "dataset",
                dataset as usize,
                uses,
            );
            if let Some(d) = rt.models.datasets.get_mut(&id) {
                d.destroyed = true;
            }
        } else {
            rt.models.datasets.remove(&id);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlAddDatasetBuffer(dataset: *mut c_void, dataBuffer: *mut c_void) -> i32 {
    calls::count(CallId::aclmdlAddDatasetBuffer);
    ffi(|| {
        non_null(&[dataset as usize, dataBuffer as usize])?;
        let mut g = enter("aclmdlAddDatasetBuffer", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let ds = dataset_id(rt, "aclmdlAddDatasetBuffer", dataset as usize)?;
        let b = buf_id(rt, "aclmdlAddDatasetBuffer", dataBuffer as usize)?;
        // MD6: a dataset a pending execution uses. The execution took its buffers at
        // issue (as the runtime copies their addresses then): finding only, the buffer is
        // added for later executions.
        let uses = rt.models.datasets[&ds].uses;
        if uses > 0 {
            rt.report(
                "MD6",
                format!(
                    "aclmdlAddDatasetBuffer({:#x}, {:#x}): the dataset is used by {uses} pending model execution(s), which stay as issued: change a dataset only once its executions are done (synchronize the stream first)",
                    dataset as usize, dataBuffer as usize
                ),
            );
        }
        if let Some(d) = rt.models.datasets.get_mut(&ds) {
            d.bufs.push(b);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDatasetNumBuffers(dataset: *const c_void) -> usize {
    calls::count(CallId::aclmdlGetDatasetNumBuffers);
    ffi_val(0, || {
        non_null(&[dataset as usize])?;
        let mut g = enter("aclmdlGetDatasetNumBuffers", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let ds = dataset_id(rt, "aclmdlGetDatasetNumBuffers", dataset as usize)?;
        Ok(rt.models.datasets[&ds].bufs.len())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDatasetBuffer(dataset: *const c_void, index: usize) -> *mut c_void {
    calls::count(CallId::aclmdlGetDatasetBuffer);
    ffi_val(std::ptr::null_mut(), || {
        non_null(&[dataset as usize])?;
        let mut g = enter("aclmdlGetDatasetBuffer", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let ds = dataset_id(rt, "aclmdlGetDatasetBuffer", dataset as usize)?;
        let b = rt.models.datasets[&ds]
            .bufs
            .get(index)
            .copied()
            .ok_or_else(|| no_index(index))?;
        Ok(handle(DATABUF_BASE, b) as *mut c_void)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclCreateDataBuffer(data: *mut c_void, size: usize) -> *mut c_void {
    calls::count(CallId::aclCreateDataBuffer);
    create("aclCreateDataBuffer", DATABUF_BASE, |m, id| {
        m.bufs.insert(
            id,
            DataBuf {
                data: data as usize,
                size,
                uses: 0,
                destroyed: false,
            },
        );
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclDestroyDataBuffer(dataBuffer: *const c_void) -> i32 {
    calls::count(CallId::aclDestroyDataBuffer);
    ffi(|| {
        non_null(&[dataBuffer as usize])?;
        let mut g = enter("aclDestroyDataBuffer", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = buf_id(rt, "aclDestroyDataBuffer", dataBuffer as usize)?;
        bury(&mut rt.models, id, "data buffer");
        let uses = rt.models.bufs[&id].uses;
        if uses > 0 {
            md6(
                rt,
                "aclDestroyDataBuffer",
                "data buffer",
                dataBuffer as usize,
                uses,
            );
            if let Some(b) = rt.models.bufs.get_mut(&id) {
                b.destroyed = true;
            }
        } else {
            rt.models.bufs.remove(&id);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclGetDataBufferAddr(dataBuffer: *const c_void) -> *mut c_void {
    calls::count(CallId::aclGetDataBufferAddr);
    ffi_val(std::ptr::null_mut(), || {
        non_null(&[dataBuffer as usize])?;
        let mut g = enter("aclGetDataBufferAddr", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let id = buf_id(rt, "aclGetDataBufferAddr", dataBuffer as usize)?;
        Ok(rt.models.bufs[&id].data as *mut c_void)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclGetDataBufferSizeV2(dataBuffer: *const c_void) -> usize {
    calls::count(CallId::aclGetDataBufferSizeV2);
    ffi_val(0, || {
        non_null(&[dataBuffer as usize])?;
        let mut g = enter("aclGetDataBufferSizeV2", Call::Query)?;
        let rt = rt_of(&mut g)?;
        let id = buf_id(rt, "aclGetDataBufferSizeV2", dataBuffer as usize)?;
        Ok(rt.models.bufs[&id].size)
    })
}
