//! Arbitrary bytes as a model file: the parser directly (`ascendcl::model::parse`), then the
//! runtime's path through the C ABI (`aclmdlLoadFromMem`, one in eight also through a file:
//! `aclmdlQuerySize`, `aclmdlLoadFromFile`). A model that loads is described
//! (`aclmdlGetDesc` and every query of the description) and, when it is small and fast,
//! executed once with buffers of the sizes its description gives, then unloaded.
//!
//! Asserts: no crash, panic or sanitizer error; the parser and the runtime agree (a model
//! the parser refuses never loads); the description matches what the parser read; after
//! the unload nothing is left (the live objects are those before the input). Hangs and
//! unbounded allocations are libFuzzer's `-timeout` and `-rss_limit_mb`.
#![no_main]

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::Once;

use ascendcl as sim;
use libfuzzer_sys::fuzz_target;

/// Device 0 set in its default context, once per process; findings are not printed.
fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        sim::aclsimSetQuiet(1);
        assert_eq!(sim::aclInit(null()), 0, "aclInit");
        assert_eq!(sim::aclrtSetDevice(0), 0, "aclrtSetDevice");
    });
}

/// Every query of a loaded model's description; checks it against the parsed model.
fn describe(id: u32, model: &sim::model::Model) {
    let desc = sim::aclmdlCreateDesc();
    assert!(!desc.is_null(), "aclmdlCreateDesc");
    assert_eq!(sim::aclmdlGetDesc(desc, id), 0, "aclmdlGetDesc");
    let inputs = sim::aclmdlGetNumInputs(desc);
    let outputs = sim::aclmdlGetNumOutputs(desc);
    assert_eq!(inputs, model.input_count());
    assert_eq!(outputs, model.outputs.len());
    let mut dims: Box<sim::IODims> = Box::new(unsafe { std::mem::zeroed() });
    // One past the end too: the queries must refuse it.
    for i in 0..=inputs {
        let size = sim::aclmdlGetInputSizeByIndex(desc, i);
        let rc = sim::aclmdlGetInputDims(desc, i, &mut *dims);
        sim::aclmdlGetInputDataType(desc, i);
        sim::aclmdlGetInputFormat(desc, i);
        if i == inputs {
            assert_ne!(rc, 0, "dims of input {i} of {inputs}");
            assert_eq!(size, 0);
        } else if rc == 0 {
            let mut index = usize::MAX;
            let name = dims.name;
            let rc = sim::aclmdlGetInputIndexByName(desc, name.as_ptr(), &mut index);
            assert!(rc != 0 || index < inputs, "index {index} of {inputs}");
        }
    }
    for i in 0..=outputs {
        let size = sim::aclmdlGetOutputSizeByIndex(desc, i);
        let rc = sim::aclmdlGetOutputDims(desc, i, &mut *dims);
        sim::aclmdlGetCurOutputDims(desc, i, &mut *dims);
        sim::aclmdlGetOutputDataType(desc, i);
        sim::aclmdlGetOutputFormat(desc, i);
        if i == outputs {
            assert_ne!(rc, 0, "dims of output {i} of {outputs}");
            assert_eq!(size, 0);
        } else {
            assert_eq!(size, model.outputs[i].bytes(), "size of output {i}");
        }
    }
    let mut batch: Box<sim::Batch> = Box::new(unsafe { std::mem::zeroed() });
    if sim::aclmdlGetDynamicBatch(desc, &mut *batch) == 0 {
        assert_eq!(batch.batch_count, model.gears.len());
    }
    assert_eq!(sim::aclmdlDestroyDesc(desc), 0, "aclmdlDestroyDesc");
}

/// A dataset of device buffers of `sizes` bytes each; their addresses are pushed on `mem`.
fn dataset(sizes: &[usize], mem: &mut Vec<*mut c_void>) -> *mut c_void {
    let ds = sim::aclmdlCreateDataset();
    assert!(!ds.is_null(), "aclmdlCreateDataset");
    for &size in sizes {
        let mut p = null_mut();
        assert_eq!(sim::aclrtMalloc(&mut p, size.max(1), 0), 0, "aclrtMalloc");
        mem.push(p);
        let buf = sim::aclCreateDataBuffer(p, size);
        assert!(!buf.is_null(), "aclCreateDataBuffer");
        assert_eq!(
            sim::aclmdlAddDatasetBuffer(ds, buf),
            0,
            "aclmdlAddDatasetBuffer"
        );
    }
    ds
}

fn destroy_dataset(ds: *mut c_void) {
    for i in 0..sim::aclmdlGetDatasetNumBuffers(ds) {
        let buf = sim::aclmdlGetDatasetBuffer(ds, i);
        assert_eq!(sim::aclDestroyDataBuffer(buf), 0, "aclDestroyDataBuffer");
    }
    assert_eq!(sim::aclmdlDestroyDataset(ds), 0, "aclmdlDestroyDataset");
}

/// One synchronous execution, its largest gear for a dynamic model.
fn execute(id: u32, model: &sim::model::Model) {
    let desc = sim::aclmdlCreateDesc();
    assert_eq!(sim::aclmdlGetDesc(desc, id), 0, "aclmdlGetDesc");
    let ins: Vec<usize> = (0..model.input_count())
        .map(|i| sim::aclmdlGetInputSizeByIndex(desc, i))
        .collect();
    let outs: Vec<usize> = (0..model.outputs.len())
        .map(|i| sim::aclmdlGetOutputSizeByIndex(desc, i))
        .collect();
    assert_eq!(sim::aclmdlDestroyDesc(desc), 0, "aclmdlDestroyDesc");
    let mut mem = Vec::new();
    let input = dataset(&ins, &mut mem);
    let output = dataset(&outs, &mut mem);
    if model.dynamic() {
        let index = model.inputs.len();
        let rc = sim::aclmdlSetDynamicBatchSize(id, input, index, model.max_batch());
        assert_eq!(rc, 0, "aclmdlSetDynamicBatchSize");
    }
    assert_eq!(sim::aclmdlExecute(id, input, output), 0, "aclmdlExecute");
    destroy_dataset(input);
    destroy_dataset(output);
    for p in mem {
        assert_eq!(sim::aclrtFree(p), 0, "aclrtFree");
    }
}

/// Small enough to execute at every input: 1 MiB of device memory, 1 ms, 10^6 operations.
fn small(model: &sim::model::Model) -> bool {
    model.device_bytes().is_some_and(|b| b <= 1 << 20)
        && model.time_us.saturating_mul(model.max_batch().max(1)) <= 1000
        && model.eval_ops <= 1_000_000
}

/// The file path: once per process, for the one in eight inputs that go through a file.
fn file_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("model_load-{}.model", std::process::id()))
}

fn through_file(data: &[u8], parsed: bool) {
    let path = file_path();
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL");
    let (mut work, mut weight) = (0, 0);
    let rc = sim::aclmdlQuerySize(c.as_ptr(), &mut work, &mut weight);
    assert!(
        rc != 0 || parsed,
        "aclmdlQuerySize accepted what the parser refused"
    );
    let mut id = 0;
    if sim::aclmdlLoadFromFile(c.as_ptr(), &mut id) == 0 {
        assert!(
            parsed,
            "aclmdlLoadFromFile accepted what the parser refused"
        );
        assert_eq!(sim::aclmdlUnload(id), 0, "aclmdlUnload");
    }
    let _ = std::fs::remove_file(&path);
}

fuzz_target!(|data: &[u8]| {
    setup();
    let before = sim::aclsimLiveObjectCount();
    let parsed = sim::model::parse(data).ok();
    if data.len() % 8 == 0 {
        through_file(data, parsed.is_some());
    }
    let mut id = 0;
    // A NULL pointer is refused before the bytes are read: pass a valid one for no bytes.
    let bytes = if data.is_empty() {
        b"".as_ptr()
    } else {
        data.as_ptr()
    };
    let rc = sim::aclmdlLoadFromMem(bytes.cast(), data.len(), &mut id);
    if rc == 0 {
        let model = parsed.expect("aclmdlLoadFromMem accepted what the parser refused");
        describe(id, &model);
        if small(&model) {
            execute(id, &model);
        }
        assert_eq!(sim::aclmdlUnload(id), 0, "aclmdlUnload");
    }
    sim::aclsimClearFindings();
    assert_eq!(
        sim::aclsimLiveObjectCount(),
        before,
        "objects left by the input"
    );
});
