//! D6 (class 7): a `Pending` result read in a nested async scope of another context or
//! device is refused before any runtime call.

use ascend_typestate::{Error, MallocPolicy};

use crate::support::isolated::isolated;
use crate::support::sim::{Session, assert_no_findings};

/// Hole: a `PendingDevice` of an outer scope (context A) read by a copy in a nested scope
/// of context B on the same device. The copy joined B's stream after A's writer with an
/// event of B recorded on A's stream, which the runtime refuses (107003, D6). The mismatch
/// must be `Error::ContextMismatch`, before any runtime call.
#[test]
fn d6_pending_device_read_in_a_nested_scope_of_another_context_is_a_typed_error() {
    isolated(|| {
        let session = Session::start();
        {
            let device = session.acl().set_device(0).unwrap();
            let ctx_a = device.create_context().unwrap();
            let ctx_b = device.create_context().unwrap();
            let (stream_a, stream_b) = (
                ctx_a.create_stream().unwrap(),
                ctx_b.create_stream().unwrap(),
            );
            let input = [1u32, 2, 3, 4];
            let mut on_a = ctx_a.alloc::<u32>(4, MallocPolicy::default()).unwrap();
            let mut out = [0u32; 4];
            let inner = ctx_a
                .async_scope(|outer| {
                    let pending = outer.copy(&stream_a, &mut on_a, &input[..])?;
                    Ok(ctx_b.async_scope(|inner| {
                        inner.copy(&stream_b, &mut out[..], pending)?;
                        Ok(())
                    }))
                })
                .unwrap();
            assert!(
                matches!(inner, Err(Error::ContextMismatch { .. })),
                "expected ContextMismatch, got {inner:?}"
            );
            on_a.free().unwrap();
            stream_a.destroy().unwrap();
            stream_b.destroy().unwrap();
            ctx_a.destroy().unwrap();
            ctx_b.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_no_findings(&session.finish());
    });
}

/// Hole: a `PendingHost` of a scope on device 0 read in a nested scope of a context on
/// device 1. Host memory carries no device, so the copy's checks passed and the crate
/// joined device 1's stream after device 0's writer, which the runtime refuses (107003).
/// The mismatch must be `Error::DeviceMismatch`, before any runtime call.
#[test]
fn d6_pending_host_read_in_a_nested_scope_of_another_device_is_a_typed_error() {
    isolated(|| {
        let session = Session::start();
        {
            let device0 = session.acl().set_device(0).unwrap();
            let device1 = session.acl().set_device(1).unwrap();
            let ctx0 = device0.create_context().unwrap();
            let ctx1 = device1.create_context().unwrap();
            let (stream0, stream1) = (ctx0.create_stream().unwrap(), ctx1.create_stream().unwrap());
            let mut on0 = ctx0.alloc::<u32>(4, MallocPolicy::default()).unwrap();
            ctx0.copy(&mut on0, &[1u32, 2, 3, 4][..]).unwrap();
            let mut on1 = ctx1.alloc::<u32>(4, MallocPolicy::default()).unwrap();
            let mut staging = [0u32; 4];
            let inner = ctx0
                .async_scope(|outer| {
                    let pending = outer.copy(&stream0, &mut staging[..], &on0)?;
                    Ok(ctx1.async_scope(|inner| {
                        inner.copy(&stream1, &mut on1, pending)?;
                        Ok(())
                    }))
                })
                .unwrap();
            assert!(
                matches!(inner, Err(Error::DeviceMismatch { .. })),
                "expected DeviceMismatch, got {inner:?}"
            );
            assert_eq!(staging, [1, 2, 3, 4]);
            on0.free().unwrap();
            on1.free().unwrap();
            stream0.destroy().unwrap();
            stream1.destroy().unwrap();
            ctx0.destroy().unwrap();
            ctx1.destroy().unwrap();
            device0.reset().unwrap();
            device1.reset().unwrap();
        }
        assert_no_findings(&session.finish());
    });
}
