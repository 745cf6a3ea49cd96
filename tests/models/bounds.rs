//! Bounds: what the simulator refuses at load or allocation, at once: a model
//! larger than the device, one that never finishes (P5), a path that is not a regular file,
//! an allocation beyond the device memory.

use crate::support;

use std::time::{Duration, Instant};

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{AclError, MallocPolicy, MemoryKind, ModelSource};
use support::sim::Session;

use super::common::{ends_clean, model_file};

/// Refused quickly: no buffer of the declared size is built, nothing waits.
fn quickly<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let r = f();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{what} took {:?}",
        start.elapsed()
    );
    r
}

/// A model declaring 2^31 elements (8 GiB of f32 input alone) does not fit in the device:
/// 100015 (`ACL_ERROR_MODEL_SIZE_INVALID`) at load, from bytes and from a file, and from
/// `aclmdlQuerySize`; nothing is loaded or allocated.
#[test]
fn md_a_model_larger_than_the_device_is_refused_at_load() {
    let huge = SimModel::new(SimDtype::F32, &[1 << 31], SimDtype::F32, &[1 << 31]);
    let path = model_file("huge", &huge);
    let session = Session::start();
    {
        let device = session.default_device(0);
        let free = device.memory_info(MemoryKind::Hbm).unwrap().free;
        let err = quickly("load from bytes", || {
            device
                .load_model(ModelSource::bytes(huge.to_text().into_bytes()))
                .unwrap_err()
        });
        assert_eq!(err.code(), Some(AclError::ModelSizeInvalid), "{err:?}");
        let err = quickly("load from a file", || device.load_model(&path).unwrap_err());
        assert_eq!(err.code(), Some(AclError::ModelSizeInvalid), "{err:?}");
        let err = quickly("query size", || {
            device.model_memory_size(&path).unwrap_err()
        });
        assert_eq!(err.code(), Some(AclError::ModelSizeInvalid), "{err:?}");
        assert_eq!(device.memory_info(MemoryKind::Hbm).unwrap().free, free);
        assert_eq!(session.sim.live_objects(), 0);
    }
    ends_clean(session);
}

/// A model whose execution could never complete (a time beyond the longest operator
/// execution timeout, P5: 2176 s) is refused at load with 100013 (`ACL_ERROR_PARSE_MODEL`);
/// one at the limit loads.
#[test]
fn md_a_model_that_never_finishes_is_refused_at_load() {
    let tiny = || SimModel::new(SimDtype::F32, &[4], SimDtype::F32, &[4]);
    let forever = tiny().time_per_item(Duration::MAX);
    let path = model_file("forever", &forever);
    let session = Session::start();
    {
        let device = session.default_device(0);
        let err = quickly("load from bytes", || {
            device
                .load_model(ModelSource::bytes(forever.to_text().into_bytes()))
                .unwrap_err()
        });
        assert_eq!(err.code(), Some(AclError::ParseModel), "{err:?}");
        let err = quickly("load from a file", || device.load_model(&path).unwrap_err());
        assert_eq!(err.code(), Some(AclError::ParseModel), "{err:?}");
        let over = tiny().time_per_item(Duration::from_secs(2176) + Duration::from_micros(1));
        let err = device
            .load_model(ModelSource::bytes(over.to_text().into_bytes()))
            .unwrap_err();
        assert_eq!(err.code(), Some(AclError::ParseModel), "{err:?}");
        let at_limit = tiny().time_per_item(Duration::from_secs(2176));
        let model = device
            .load_model(ModelSource::bytes(at_limit.to_text().into_bytes()))
            .unwrap();
        model.unload().unwrap();
    }
    ends_clean(session);
}

/// A directory or a FIFO as a model path, given to the runtime itself (the raw layer; the
/// typed layer refuses both first, `md_a_real_om_is_a_runtime_error_and_a_bad_path_names_the_file`):
/// 100014 (`ACL_ERROR_READ_MODEL_FAILURE`) at once; a FIFO with no writer is never waited for.
#[test]
fn md_a_model_path_that_is_not_a_regular_file_is_refused_by_the_runtime() {
    let dir = support::scratch_dir("typed_models_not_regular");
    let fifo = dir.join("model.fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let c_dir = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    let session = Session::start();
    {
        let _device = session.default_device(0);
        let api = session.acl().api();
        for path in [&c_dir, &c_path] {
            // SAFETY: the device's default context is current; a model loaded by mistake
            // would be unloaded below.
            let loaded = quickly("load", || unsafe { api.model_load_from_file(path) });
            match loaded {
                Err(err) => assert_eq!(err.code(), Some(AclError::ReadModelFailure), "{err:?}"),
                Ok(id) => panic!("loaded {id} from {path:?}"),
            }
            let err = quickly("query size", || api.model_query_size(path).unwrap_err());
            assert_eq!(err.code(), Some(AclError::ReadModelFailure), "{err:?}");
        }
    }
    ends_clean(session);
}

/// Device memory is enforced (D8): a request beyond the device's free memory fails in
/// `aclrtMalloc` with 207001 before anything is allocated or zeroed, so `Context::alloc`
/// (which zeroes) never touches the memory; the free memory is unchanged.
#[test]
fn m_an_allocation_beyond_the_device_memory_fails_before_touching_it() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let before = device.memory_info(MemoryKind::Hbm).unwrap();
        let err = quickly("alloc 1 TiB", || {
            device
                .alloc::<u8>(1 << 40, MallocPolicy::HugeFirst)
                .unwrap_err()
        });
        assert_eq!(err.code(), Some(AclError::RtMemoryAllocation), "{err:?}");
        let err = quickly("alloc total + 1", || {
            device
                .alloc::<u8>(before.total + 1, MallocPolicy::HugeFirst)
                .unwrap_err()
        });
        assert_eq!(err.code(), Some(AclError::RtMemoryAllocation), "{err:?}");
        let buffer = device
            .alloc::<u8>(1 << 20, MallocPolicy::HugeFirst)
            .unwrap();
        let during = device.memory_info(MemoryKind::Hbm).unwrap();
        assert_eq!(during.free, before.free - (1 << 20));
        drop(buffer);
        assert_eq!(device.memory_info(MemoryKind::Hbm).unwrap(), before);
        assert_eq!(session.sim.live_objects(), 0);
    }
    ends_clean(session);
}
