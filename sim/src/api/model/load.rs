//! Loading and unloading models (`aclmdlLoadFrom*`, `aclmdlQuerySize`, `aclmdlUnload`;
//! MD1-MD4): reading and parsing the simulator's model format, checking the caller's work
//! and weight memory, registering the regions a loaded model holds.
//!
//! Layer: C entry points; imports its parent (`api::model`) and the layers below.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{NEXT_MODEL_ID, cstr, loaded, same_context};
use crate::api::memory::{Loc, locate};
use crate::calls::CallId;
use crate::model::Model;
use crate::rules::model::unuse;
use crate::state::models::{Loaded, Region};
use crate::state::{Rt, code};
use crate::{Call, R, calls, enter, errmsg, exec, ffi, non_null, out, rt_of};

/// How many bytes of a model file are read first: a file whose first bytes cannot start a
/// model of this format (`crate::model::may_be_ours`: a real .om, a file of zeros) is
/// refused without reading the rest.
const HEAD: u64 = 4096;

/// Reads a model file, without the global lock (a slow file must not block the other
/// threads): a regular file of at most `limit` bytes (the device's memory). A directory,
/// FIFO or device, or an unreadable file: 100014 (`ACL_ERROR_READ_MODEL_FAILURE`); a
/// larger file: 100015 (`ACL_ERROR_MODEL_SIZE_INVALID`). At most the file's size + 1 bytes
/// are read: a file yielding more than its size says (a `/proc` file of size 0 whose content
/// never ends, a file growing meanwhile) is 100014 too. Its first bytes are checked before
/// the rest is read: not this format, 100013 (`ACL_ERROR_PARSE_MODEL`, as a real .om).
fn read_file(path: &[u8], limit: u64) -> Result<Vec<u8>, i32> {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
    let fail = |e: String| {
        errmsg::why(
            code::READ_MODEL_FAILURE,
            format!("cannot read {}: {e}", path.display()),
        )
    };
    // O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused below).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| fail(e.to_string()))?;
    let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    let size = meta.len();
    if size > limit {
        return Err(errmsg::why(
            code::MODEL_SIZE_INVALID,
            format!(
                "{}: {size} B, more than the device's {limit} B of memory",
                path.display()
            ),
        ));
    }
    let mut file = file.take(size.saturating_add(1));
    let mut bytes = Vec::with_capacity(usize::try_from(size.min(HEAD)).unwrap_or(0));
    let longer = || {
        fail(format!(
            "it yields more bytes than its size ({size} B) says: not a file that can be read whole"
        ))
    };
    (&mut file)
        .take(HEAD)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > size {
        return Err(longer());
    }
    if !crate::model::may_be_ours(&bytes) {
        return Err(errmsg::why(code::PARSE_MODEL, crate::model::NOT_ACLSIM));
    }
    bytes.reserve_exact(
        usize::try_from(size)
            .unwrap_or(0)
            .saturating_sub(bytes.len()),
    );
    file.read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > size {
        return Err(longer());
    }
    Ok(bytes)
}

/// Parses model bytes and checks that the model fits in a device of `limit` bytes (100015)
/// and can complete (P5, 100013). Without the lock.
fn parse(bytes: &[u8], limit: u64) -> Result<Model, i32> {
    if bytes.is_empty() {
        return Err(errmsg::why(code::MODEL_SIZE_INVALID, "model size 0"));
    }
    let model = crate::model::parse(bytes).map_err(|e| errmsg::why(e.code, e.message))?;
    model
        .check_fits(limit)
        .map_err(|e| errmsg::why(e.code, e.message))?;
    Ok(model)
}

/// Checks `size` model bytes at `p` (M1, M2); the tracked allocation they lie in, if any
/// (MD3). They are copied afterwards, without the lock (`load`).
fn check_model_bytes(rt: &mut Rt, call: &str, p: usize, size: usize) -> Result<Option<usize>, i32> {
    if size == 0 {
        return Err(errmsg::why(code::MODEL_SIZE_INVALID, "model size 0"));
    }
    let limit = rt.extra.device_memory;
    if size as u64 > limit {
        return Err(errmsg::why(
            code::MODEL_SIZE_INVALID,
            format!("model size {size} B, more than the device's {limit} B of memory"),
        ));
    }
    match locate(rt, p, size) {
        Loc::Device(s) | Loc::Host(s) => Ok(Some(s)),
        Loc::Untracked => Ok(None),
        Loc::Bad(m) => {
            let rule = if m.contains("(M2)") { "M2" } else { "M1" };
            rt.report(
                rule,
                format!("{call}: model bytes {m}; the call returns 100000"),
            );
            Err(code::INVALID_PARAM)
        }
    }
}

/// A copy of `size` bytes at `p`.
fn copy_bytes(p: usize, size: usize) -> Vec<u8> {
    let mut v = vec![0u8; size];
    // SAFETY: a tracked range validated by `check_model_bytes` and pinned while this runs,
    // or untracked memory the caller gives as `size` readable bytes for the duration of the
    // call (aclmdlLoadFromMem's contract).
    unsafe { std::ptr::copy(p as *const u8, v.as_mut_ptr(), size) };
    v
}

/// MD2: work or weight memory of a `...WithMem` load.
fn check_mem(rt: &Rt, what: &str, p: usize, size: usize, need: usize) -> Result<usize, i32> {
    if size < need {
        return Err(errmsg::why(
            code::INVALID_PARAM,
            format!("{what} size {size} is less than the {need} B aclmdlQuerySize reports (MD2)"),
        ));
    }
    match locate(rt, p, size) {
        Loc::Device(s) => Ok(s),
        _ => Err(errmsg::why(
            code::INVALID_PARAM,
            format!("{what} memory [{p:#x}, +{size}) is not inside one device allocation (MD2)"),
        )),
    }
}

/// Registers a loaded model in the current context; returns its id. A model whose memory
/// the runtime allocates (no `...WithMem`) counts its work and weight against the device's
/// free memory: 207001 (`ACL_ERROR_RT_MEMORY_ALLOCATION`) beyond it.
fn register(
    rt: &mut Rt,
    model: Model,
    regions: Vec<Region>,
    runtime_memory: bool,
) -> Result<u32, i32> {
    let ctx = rt.cur_ctx()?;
    let memory = if runtime_memory {
        let device = rt.contexts.get(&ctx).map_or(-1, |c| c.device);
        // Fits in the device (checked at parse): no overflow.
        let bytes = (model.work as u64).saturating_add(model.weight as u64);
        rt.extra.charge(false, device, bytes)?;
        Some((device, bytes))
    } else {
        None
    };
    for r in &regions {
        if let Some(a) = rt.allocs.get_mut(&r.alloc) {
            a.uses += 1;
        }
    }
    let id = NEXT_MODEL_ID.fetch_add(1, Ordering::Relaxed);
    rt.models.loaded.insert(
        id,
        Loaded {
            model: Arc::new(model),
            ctx,
            pending: BTreeMap::new(),
            cur_batch: None,
            regions,
            memory,
        },
    );
    Ok(id)
}

enum Src {
    File(*const c_char),
    Mem(usize, usize),
}

/// Loads a model. The file is read, or the model bytes copied, and parsed without the global
/// lock (a FIFO, a slow file or a large copy must not block the other threads); the lock is
/// taken again to register it. Model bytes in a tracked allocation are checked under the
/// lock (M1, M2) and held and pinned while they are copied (a free is deferred, a device
/// reset or aclFinalize waits for the copy).
fn load(name: &str, src: Src, id_out: *mut u32, mem: Option<(usize, usize, usize, usize)>) -> R {
    let mut g = enter(name, Call::Action)?;
    let rt = rt_of(&mut g)?;
    rt.cur_ctx()?; // 107002
    let limit = rt.extra.device_memory;
    let (model, region) = match src {
        Src::File(path) => {
            let path = cstr(path);
            let model = g.unlocked(|| parse(&read_file(&path, limit)?, limit))?;
            (model, None)
        }
        Src::Mem(p, size) => {
            let tracked = check_model_bytes(rt, name, p, size)?;
            let held = rt.take_uses(&tracked.into_iter().collect::<Vec<_>>());
            let starts: Vec<usize> = held.iter().map(|h| h.0).collect();
            let bytes = exec::pinned(&mut g, &starts, || copy_bytes(p, size));
            if let Some(rt) = g.rt.as_deref_mut() {
                rt.drop_uses(&held);
            }
            // The copy is dropped without the lock too (a large one takes milliseconds).
            let model = g.unlocked(move || parse(&bytes, limit))?;
            // MD3: the allocation holding the bytes, if any.
            let region = held.first().map(|&(alloc, generation)| {
                (
                    Region {
                        alloc,
                        start: p,
                        len: size,
                        what: "model bytes",
                        rule: "MD3",
                    },
                    generation,
                )
            });
            (model, region)
        }
    };
    // The runtime may have been finalized meanwhile (100001), the context destroyed (107002).
    let rt = rt_of(&mut g)?;
    rt.cur_ctx()?;
    let mut regions = Vec::new();
    // MD3: the model bytes, if their allocation is still the same (not freed meanwhile).
    regions.extend(
        region
            .filter(|(r, generation)| {
                rt.alloc_generation(r.alloc) == Some(*generation) && !rt.allocs[&r.alloc].freed
            })
            .map(|(r, _)| r),
    );
    if let Some((work, work_size, weight, weight_size)) = mem {
        let w = check_mem(rt, "work", work, work_size, model.work)?;
        let wt = check_mem(rt, "weight", weight, weight_size, model.weight)?;
        regions.push(Region {
            alloc: w,
            start: work,
            len: work_size,
            what: "work memory",
            rule: "MD2",
        });
        regions.push(Region {
            alloc: wt,
            start: weight,
            len: weight_size,
            what: "weight memory",
            rule: "MD2",
        });
    }
    let id = register(rt, model, regions, mem.is_none())?;
    out(id_out, id)
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlQuerySize(
    fileName: *const c_char,
    workSize: *mut usize,
    weightSize: *mut usize,
) -> i32 {
    calls::count(CallId::aclmdlQuerySize);
    ffi(|| {
        non_null(&[fileName as usize, workSize as usize, weightSize as usize])?;
        let mut g = enter("aclmdlQuerySize", Call::Action)?;
        let limit = rt_of(&mut g)?.extra.device_memory;
        drop(g);
        // Without the lock (see `load`).
        let model = parse(&read_file(&cstr(fileName), limit)?, limit)?;
        out(workSize, model.work)?;
        out(weightSize, model.weight)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlLoadFromFile(modelPath: *const c_char, modelId: *mut u32) -> i32 {
    calls::count(CallId::aclmdlLoadFromFile);
    ffi(|| {
        non_null(&[modelPath as usize, modelId as usize])?;
        load("aclmdlLoadFromFile", Src::File(modelPath), modelId, None)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlLoadFromMem(
    model: *const c_void,
    modelSize: usize,
    modelId: *mut u32,
) -> i32 {
    calls::count(CallId::aclmdlLoadFromMem);
    ffi(|| {
        non_null(&[model as usize, modelId as usize])?;
        load(
            "aclmdlLoadFromMem",
            Src::Mem(model as usize, modelSize),
            modelId,
            None,
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlLoadFromFileWithMem(
    modelPath: *const c_char,
    modelId: *mut u32,
    workPtr: *mut c_void,
    workSize: usize,
    weightPtr: *mut c_void,
    weightSize: usize,
) -> i32 {
    calls::count(CallId::aclmdlLoadFromFileWithMem);
    ffi(|| {
        non_null(&[
            modelPath as usize,
            modelId as usize,
            workPtr as usize,
            weightPtr as usize,
        ])?;
        load(
            "aclmdlLoadFromFileWithMem",
            Src::File(modelPath),
            modelId,
            Some((workPtr as usize, workSize, weightPtr as usize, weightSize)),
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlLoadFromMemWithMem(
    model: *const c_void,
    modelSize: usize,
    modelId: *mut u32,
    workPtr: *mut c_void,
    workSize: usize,
    weightPtr: *mut c_void,
    weightSize: usize,
) -> i32 {
    calls::count(CallId::aclmdlLoadFromMemWithMem);
    ffi(|| {
        non_null(&[
            model as usize,
            modelId as usize,
            workPtr as usize,
            weightPtr as usize,
        ])?;
        load(
            "aclmdlLoadFromMemWithMem",
            Src::Mem(model as usize, modelSize),
            modelId,
            Some((workPtr as usize, workSize, weightPtr as usize, weightSize)),
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlUnload(modelId: u32) -> i32 {
    calls::count(CallId::aclmdlUnload);
    ffi(|| {
        let mut g = enter("aclmdlUnload", Call::Action)?;
        let rt = rt_of(&mut g)?;
        same_context(rt, modelId)?;
        let pending = loaded(rt, modelId)?.pending.len();
        if pending > 0 {
            rt.report(
                "MD7",
                format!(
                    "aclmdlUnload({modelId}) while {pending} execution(s) of it are pending: synchronize the stream first; the call returns 107037 and the model stays loaded"
                ),
            );
            return Err(errmsg::why(
                code::RT_MODEL_RUNNING,
                format!("{pending} execution(s) of model {modelId} are pending (MD7)"),
            ));
        }
        if let Some(l) = rt.models.loaded.remove(&modelId) {
            for r in l.regions {
                unuse(rt, r.alloc);
            }
            if let Some((device, bytes)) = l.memory {
                rt.extra.uncharge(false, device, bytes);
            }
        }
        Ok(())
    })
}
