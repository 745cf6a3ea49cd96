//! Executions (`aclmdlExecute`, `aclmdlExecuteAsync`; MD1, MD6-MD11) and dynamic batches
//! (`aclmdlSetDynamicBatchSize`, `aclmdlSetDynamicHWSize`; MD11, MD12).
//!
//! Layer: C entry points; imports its parent (`api::model`), `api::memory` and the layers
//! below.

use std::ffi::c_void;

use super::{dataset_id, held_buf, loaded, same_context};
use crate::api::memory::{Loc, check_stream_device, locate};
use crate::calls::CallId;
use crate::model::{DYNAMIC_INPUT, Model};
use crate::rules::model::{
    acquire, exec_starts, host_access, pending_on, release, touch_model_memory,
};
use crate::state::models::Exec;
use crate::state::{DATABUF_BASE, DATASET_BASE, Rt, TaskKind, code, handle};
use crate::{Call, calls, enter, errmsg, exec, ffi, non_null, rt_of, stream_for};

/// The checks of an execution (MD1, MD6, MD8-MD11, sizes); returns it and the tracked
/// allocations it uses.
fn prepare(
    rt: &mut Rt,
    call: &str,
    model_id: u32,
    input: usize,
    output: usize,
    sid: Option<u64>,
) -> Result<(Exec, Vec<usize>), i32> {
    same_context(rt, model_id)?;
    let model = loaded(rt, model_id)?.model.clone();
    let din = dataset_id(rt, call, input)?;
    let dout = dataset_id(rt, call, output)?;
    let ranges = io_buffers(rt, call, model_id, &model, din, dout)?;
    let allocs = device_allocs(rt, call, &ranges)?;
    if let Some(sid) = sid {
        check_stream_device(rt, call, sid, &allocs)?;
    }
    // MD2 / MD3: model I/O in memory a loaded model holds.
    for (_, b, data, size) in &ranges {
        touch_model_memory(
            rt,
            call,
            *data,
            *size,
            &format!("uses data buffer {:#x} over", handle(DATABUF_BASE, *b)),
        );
    }
    let (batch, batch_at) = batch_of(rt, call, model_id, &model, din, &ranges);
    // A synchronous execution runs now: any execution of the model not done runs beside it.
    // An asynchronous one is checked when it reaches the front of its stream (`must_wait`),
    // since an event may order it after the others.
    if sid.is_none() {
        report_pending(rt, call, model_id)?;
    }
    // The ranges: the data inputs, the dynamic-batch buffer (dynamic models), the outputs.
    let inputs = model
        .inputs
        .iter()
        .zip(&ranges)
        .map(|(t, r)| (r.2, t.bytes()))
        .collect();
    let outputs = model
        .outputs
        .iter()
        .zip(&ranges[model.input_count()..])
        .map(|(t, r)| (r.2, t.bytes()))
        .collect();
    Ok((
        Exec {
            model_id,
            inputs,
            outputs,
            model,
            datasets: [din, dout],
            bufs: ranges.iter().map(|r| r.1).collect(),
            batch,
            batch_at,
        },
        allocs,
    ))
}

/// The data buffers of the input and output datasets, checked against the model's inputs
/// and output (counts, MD10 sizes): (index, buffer id, address, bytes), the inputs first.
fn io_buffers(
    rt: &mut Rt,
    call: &str,
    model_id: u32,
    model: &Model,
    din: u64,
    dout: u64,
) -> Result<Vec<(usize, u64, usize, usize)>, i32> {
    let mut need_in: Vec<usize> = model.inputs.iter().map(|t| t.bytes()).collect();
    if model.dynamic() {
        need_in.push(8);
    }
    let bufs_in = rt.models.datasets[&din].bufs.clone();
    let bufs_out = rt.models.datasets[&dout].bufs.clone();
    if bufs_in.len() != need_in.len() {
        return Err(errmsg::why(
            code::MODEL_INPUT_NOT_MATCH,
            format!(
                "the input dataset has {} buffer(s), model {model_id} has {} input(s)",
                bufs_in.len(),
                need_in.len()
            ),
        ));
    }
    let outputs: Vec<usize> = model.outputs.iter().map(|t| t.bytes()).collect();
    if bufs_out.len() != outputs.len() {
        return Err(errmsg::why(
            code::MODEL_OUTPUT_NOT_MATCH,
            format!(
                "the output dataset has {} buffer(s), model {model_id} has {} output(s)",
                bufs_out.len(),
                outputs.len()
            ),
        ));
    }
    let all = bufs_in
        .iter()
        .zip(&need_in)
        .map(|(b, n)| (din, *b, *n, code::MODEL_INPUT_NOT_MATCH, "input"))
        .chain(
            bufs_out
                .iter()
                .zip(&outputs)
                .map(|(b, n)| (dout, *b, *n, code::MODEL_OUTPUT_NOT_MATCH, "output")),
        );
    let mut ranges = Vec::new();
    for (i, (ds, b, need, err, role)) in all.enumerate() {
        let (data, size) = held_buf(rt, call, ds, b)?;
        if size < need {
            return Err(errmsg::why(
                err,
                format!(
                    "{role} data buffer {:#x} holds {size} B, the model's {role} needs {need} B (MD10)",
                    handle(DATABUF_BASE, b),
                ),
            ));
        }
        ranges.push((i, b, data, size));
    }
    Ok(ranges)
}

/// MD9: every data buffer lies in device memory from `aclrtMalloc`; returns the tracked
/// allocations they lie in.
fn device_allocs(
    rt: &mut Rt,
    call: &str,
    ranges: &[(usize, u64, usize, usize)],
) -> Result<Vec<usize>, i32> {
    let mut allocs = Vec::new();
    for (_, b, data, size) in ranges {
        match locate(rt, *data, *size) {
            Loc::Device(s) => allocs.push(s),
            other => {
                let is = match other {
                    Loc::Host(_) => "host memory".to_string(),
                    Loc::Bad(m) => m,
                    _ => "not memory of aclrtMalloc".to_string(),
                };
                rt.report(
                    "MD9",
                    format!(
                        "{call}: data buffer {:#x} ([{data:#x}, +{size})): {is}; model I/O memory must be device memory from aclrtMalloc; the call returns 100000",
                        handle(DATABUF_BASE, *b)
                    ),
                );
                return Err(errmsg::why(
                    code::INVALID_PARAM,
                    "a data buffer is not device memory (MD9)",
                ));
            }
        }
    }
    Ok(allocs)
}

/// The batch of an execution (MD11): the one set on the input dataset for this model, with
/// the address of the dynamic-batch buffer; else the largest gear (an MD11 finding for a
/// dynamic model); 1 for a static model.
fn batch_of(
    rt: &mut Rt,
    call: &str,
    model_id: u32,
    model: &Model,
    din: u64,
    ranges: &[(usize, u64, usize, usize)],
) -> (u64, Option<usize>) {
    if !model.dynamic() {
        return (1, None);
    }
    match rt.models.datasets[&din].batch {
        Some((m, b)) if m == model_id => (b, ranges.get(model.inputs.len()).map(|r| r.2)),
        _ => {
            rt.report(
                "MD11",
                format!(
                    "{call}: dynamic model {model_id} executed without aclmdlSetDynamicBatchSize on its input dataset {:#x}: set the batch before executing; the simulator uses the largest gear ({})",
                    handle(DATASET_BASE, din),
                    model.max_batch()
                ),
            );
            (model.max_batch(), None)
        }
    }
}

/// MD8 for a synchronous execution: an execution of the model not done runs beside it.
fn report_pending(rt: &mut Rt, call: &str, model_id: u32) -> Result<(), i32> {
    let others: Vec<String> = loaded(rt, model_id)?
        .pending
        .values()
        .copied()
        .map(pending_on)
        .collect();
    if !others.is_empty() {
        rt.report(
            "MD8",
            format!(
                "{call}: model {model_id} executed synchronously while an execution of it is pending on {}: never run one model concurrently (synchronize first, or load it twice); the simulator runs it now",
                others.join(", "),
            ),
        );
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlExecute(modelId: u32, input: *const c_void, output: *mut c_void) -> i32 {
    calls::count(CallId::aclmdlExecute);
    ffi(|| {
        non_null(&[input as usize, output as usize])?;
        let mut g = enter("aclmdlExecute", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let (x, allocs) = prepare(
            rt,
            "aclmdlExecute",
            modelId,
            input as usize,
            output as usize,
            None,
        )?;
        let id = rt.new_id();
        let held = rt.take_uses(&allocs);
        acquire(rt, id, &x, None);
        exec_starts(rt, id);
        let run = x.run();
        // The batch is read when the execution starts (under the lock). Then, all without
        // the lock: the model's time passes, the input is copied, the model evaluated on the
        // copy, the output written. Each copy first checks (under the lock) that the memory
        // is still there, since a device reset may have freed it meanwhile (then 507011),
        // and pins it (a device reset or aclFinalize waits for the copy, `exec::pinned`);
        // the evaluation touches no runtime memory, so nothing waits for it.
        let batch = run.batch();
        g.unlocked(|| run.sleep(batch));
        let starts: Vec<usize> = held.iter().map(|h| h.0).collect();
        let mut intact = rt_of(&mut g)?.still_there(&held);
        if intact {
            let input = exec::pinned(&mut g, &starts, || run.read_input());
            let output = g.unlocked(|| {
                // The copies are dropped without the lock too (a large one takes
                // milliseconds).
                let input = input;
                run.compute(&input, batch)
            });
            intact = rt_of(&mut g)?.still_there(&held);
            let pins: &[usize] = if intact { &starts } else { &[] };
            exec::pinned(&mut g, pins, || {
                let output = output;
                if intact {
                    run.write_output(&output);
                }
            });
        }
        let rt = rt_of(&mut g)?;
        rt.drop_uses(&held);
        release(rt, id, &x);
        if intact {
            Ok(())
        } else {
            Err(errmsg::why(
                code::RT_MODEL_EXECUTE,
                "the model's memory was released during the execution",
            ))
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlExecuteAsync(
    modelId: u32,
    input: *const c_void,
    output: *mut c_void,
    stream: *mut c_void,
) -> i32 {
    calls::count(CallId::aclmdlExecuteAsync);
    ffi(|| {
        non_null(&[input as usize, output as usize])?;
        let mut g = enter("aclmdlExecuteAsync", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, true)?;
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        let (x, allocs) = prepare(
            rt,
            "aclmdlExecuteAsync",
            modelId,
            input as usize,
            output as usize,
            Some(sid),
        )?;
        // The task id is the next id: the execution is pending from its issue on.
        let id = rt.next_id;
        acquire(rt, id, &x, Some(sid));
        let issued = exec::enqueue(rt, sid, TaskKind::Model(Box::new(x)), allocs);
        debug_assert_eq!(issued, id);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlSetDynamicBatchSize(
    modelId: u32,
    dataset: *mut c_void,
    index: usize,
    batchSize: u64,
) -> i32 {
    calls::count(CallId::aclmdlSetDynamicBatchSize);
    ffi(|| {
        non_null(&[dataset as usize])?;
        let mut g = enter("aclmdlSetDynamicBatchSize", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let model = loaded(rt, modelId)?.model.clone();
        if !model.dynamic() {
            return Err(errmsg::why(
                code::MODEL_NOT_DYNAMIC,
                format!("model {modelId} has no batch gears (MD11)"),
            ));
        }
        let ds = dataset_id(rt, "aclmdlSetDynamicBatchSize", dataset as usize)?;
        let md11 = |rt: &mut Rt, msg: String| {
            rt.report(
                "MD11",
                format!(
                    "aclmdlSetDynamicBatchSize(model {modelId}): {msg}; the call returns 100000"
                ),
            );
            Err(errmsg::why(code::INVALID_PARAM, format!("{msg} (MD11)")))
        };
        let at = model.inputs.len();
        if index != at {
            return md11(
                rt,
                format!("index {index} is not the index of {DYNAMIC_INPUT} ({at})"),
            );
        }
        if !model.gears.contains(&batchSize) {
            return md11(
                rt,
                format!(
                    "batch {batchSize} is not one of the gears {:?}",
                    model.gears
                ),
            );
        }
        let Some(b) = rt.models.datasets[&ds].bufs.get(at).copied() else {
            return md11(
                rt,
                format!("the dataset has no buffer for {DYNAMIC_INPUT} (index {at}) yet"),
            );
        };
        let (data, size) = held_buf(rt, "aclmdlSetDynamicBatchSize", ds, b)?;
        if size < 8 {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("the {DYNAMIC_INPUT} buffer holds {size} B, it needs 8"),
            ));
        }
        if !matches!(locate(rt, data, 8), Loc::Device(_)) {
            rt.report(
                "MD9",
                format!(
                    "aclmdlSetDynamicBatchSize: the {DYNAMIC_INPUT} data buffer {:#x} ({data:#x}) is not device memory from aclrtMalloc; the call returns 100000",
                    handle(DATABUF_BASE, b)
                ),
            );
            return Err(errmsg::why(
                code::INVALID_PARAM,
                "a data buffer is not device memory (MD9)",
            ));
        }
        // MD6: the batch buffer of a pending execution (it reads the batch when it starts,
        // so a pending one may see this batch, a running one not). The write goes on, as
        // on the device.
        host_access(rt, "aclmdlSetDynamicBatchSize", (data, 8), None);
        // SAFETY: 8 bytes inside a live device allocation (checked above), under the lock.
        unsafe { std::ptr::copy(batchSize.to_ne_bytes().as_ptr(), data as *mut u8, 8) };
        if let Some(d) = rt.models.datasets.get_mut(&ds) {
            d.batch = Some((modelId, batchSize));
        }
        if let Some(l) = rt.models.loaded.get_mut(&modelId) {
            l.cur_batch = Some(batchSize);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlSetDynamicHWSize(
    modelId: u32,
    dataset: *mut c_void,
    index: usize,
    height: u64,
    width: u64,
) -> i32 {
    calls::count(CallId::aclmdlSetDynamicHWSize);
    ffi(|| {
        let _ = (index, height, width);
        non_null(&[dataset as usize])?;
        let mut g = enter("aclmdlSetDynamicHWSize", Call::Action)?;
        let rt = rt_of(&mut g)?;
        loaded(rt, modelId)?;
        Err(errmsg::why(
            code::MODEL_NOT_DYNAMIC,
            format!("model {modelId} has no HW gears (the simulator's models have none)"),
        ))
    })
}
