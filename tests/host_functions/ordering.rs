//! Host functions (C10) through the typed API on the simulator: stream order, later tasks
//! waiting for them, panics reported, runtime calls refused inside them (C8), closures of
//! dropped host functions freed (S8). Every test asserts zero checker findings and zero leaks.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ascend_typestate::{Context, Error};
use support::sim::{Session, assert_no_findings, assert_only_discarded};

#[test]
fn host_functions_run_in_stream_order_on_a_runtime_thread_c10() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        let order = Arc::new(Mutex::new(Vec::new()));
        let caller = std::thread::current().id();
        for i in 0..10 {
            session.sim.sleep_kernel(stream.as_raw(), 500);
            let order = Arc::clone(&order);
            stream
                .launch(move || {
                    assert_ne!(std::thread::current().id(), caller);
                    order.lock().unwrap().push(i);
                })
                .unwrap();
        }
        stream.synchronize().unwrap();
        assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
        assert_eq!(stream.pending(), 0);
        assert!(stream.take_panics().is_empty());
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn later_tasks_wait_for_a_host_function_c10() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        let seen = Arc::new(AtomicUsize::new(0));
        let inner = Arc::clone(&seen);
        stream
            .launch(move || {
                std::thread::sleep(Duration::from_millis(30));
                inner.store(1, Ordering::SeqCst);
            })
            .unwrap();
        let event = ctx.create_event().unwrap().record(&stream).unwrap();
        event.synchronize().unwrap();
        assert_eq!(
            seen.load(Ordering::SeqCst),
            1,
            "the record ran before the host function"
        );
        event.destroy().unwrap();
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn a_panicking_host_function_is_reported_not_unwound_into_c_c10() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        stream.launch(|| panic!("host function boom")).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let inner = Arc::clone(&ran);
        stream
            .launch(move || _ = inner.fetch_add(1, Ordering::SeqCst))
            .unwrap();
        stream.synchronize().unwrap();
        assert_eq!(
            ran.load(Ordering::SeqCst),
            1,
            "the stream goes on after a panic"
        );
        assert_eq!(stream.take_panics(), vec!["host function boom".to_owned()]);
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// C8 inside a host function: a handle smuggled into the closure (here by a lifetime
/// transmute, which the test keeps sound by synchronising before the context goes) is
/// refused by the typed API before the runtime sees the call.
#[test]
fn a_runtime_call_from_a_host_function_is_refused_c8_c10() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        // SAFETY: the closure runs before `stream.synchronize()` returns, while `ctx` lives.
        let smuggled: &'static Context<'static> = unsafe { std::mem::transmute(&ctx) };
        let outcome = Arc::new(Mutex::new(None));
        let inner = Arc::clone(&outcome);
        stream
            .launch(move || {
                let result = smuggled.create_stream().map(|_| ());
                *inner.lock().unwrap() = Some(result);
            })
            .unwrap();
        stream.synchronize().unwrap();
        match outcome.lock().unwrap().take() {
            Some(Err(Error::InsideCallback)) => {}
            other => panic!("expected InsideCallback, got {other:?}"),
        }
        stream.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

/// Closures whose task the runtime dropped (S8) are freed once the stream is gone: nothing
/// they own is lost.
#[test]
fn closures_of_dropped_host_functions_are_freed_s8_c10() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        let owned = Arc::new(());
        session.expect_findings();
        session.sim.sleep_kernel(stream.as_raw(), 2_000_000);
        for _ in 0..5 {
            let owned = Arc::clone(&owned);
            stream.launch(move || drop(owned)).unwrap();
        }
        assert_eq!(Arc::strong_count(&owned), 6);
        assert_eq!(stream.pending(), 5);
        stream.destroy_force().unwrap();
        assert_eq!(
            Arc::strong_count(&owned),
            1,
            "dropped closures were not freed"
        );
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    // The five closures were discarded, each reported (S8); the kernel too unless running.
    assert_only_discarded(&session.finish(), 5..=6);
}
