//! E8 (class 11): `elapsed_since` between events the runtime cannot compare is a typed
//! error.

use ascend_typestate::Error;

use crate::support::isolated::isolated;
use crate::support::sim::{Session, assert_no_findings};

/// Hole: `elapsed_since` between recorded events of two devices was passed to the runtime
/// as is (the simulator even answered with a number: two clocks subtracted). It must be
/// `Error::DeviceMismatch`.
#[test]
fn e8_elapsed_since_between_events_of_two_devices_is_a_typed_error() {
    isolated(|| {
        let session = Session::start();
        {
            let device0 = session.acl().set_device(0).unwrap();
            let device1 = session.acl().set_device(1).unwrap();
            let ctx0 = device0.create_context().unwrap();
            let ctx1 = device1.create_context().unwrap();
            let (stream0, stream1) = (ctx0.create_stream().unwrap(), ctx1.create_stream().unwrap());
            let start = ctx0.create_event().unwrap().record(&stream0).unwrap();
            let end = ctx1.create_event().unwrap().record(&stream1).unwrap();
            start.synchronize().unwrap();
            end.synchronize().unwrap();
            let elapsed = end.elapsed_since(&start);
            assert!(
                matches!(elapsed, Err(Error::DeviceMismatch { .. })),
                "expected DeviceMismatch, got {elapsed:?}"
            );
            end.destroy().unwrap();
            start.destroy().unwrap();
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

/// Hole: `elapsed_since` between recorded events of two contexts of one device was passed
/// to the runtime as is; every other two-event or event-and-stream call of the typed API
/// keeps to one context. It must be `Error::ContextMismatch`.
#[test]
fn e8_elapsed_since_between_events_of_two_contexts_is_a_typed_error() {
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
            let start = ctx_a.create_event().unwrap().record(&stream_a).unwrap();
            let end = ctx_b.create_event().unwrap().record(&stream_b).unwrap();
            start.synchronize().unwrap();
            end.synchronize().unwrap();
            let elapsed = end.elapsed_since(&start);
            assert!(
                matches!(elapsed, Err(Error::ContextMismatch { .. })),
                "expected ContextMismatch, got {elapsed:?}"
            );
            end.destroy().unwrap();
            start.destroy().unwrap();
            stream_a.destroy().unwrap();
            stream_b.destroy().unwrap();
            ctx_a.destroy().unwrap();
            ctx_b.destroy().unwrap();
            device.reset().unwrap();
        }
        assert_no_findings(&session.finish());
    });
}
