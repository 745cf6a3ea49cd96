//! Memory on the simulator (M1, M2): round trips of every kind, the seed 000 stream sample,
//! two streams joined by an event through device memory, size checks, a large allocation.
//! Every test ends with zero checker findings (the simulator checks kinds and bounds).

use crate::support;

use ascend_typestate::{DeviceBuffer, MallocPolicy};
use ascend_typestate::{Error, Event, Reset};
use support::sim::{Session, assert_no_findings};

#[test]
fn round_trips_of_every_kind_m1() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let input: Vec<u32> = (0..4096).collect();
        // H2D, D2D, D2H, synchronous.
        let mut a: DeviceBuffer<'_, u32> = ctx.alloc(4096, MallocPolicy::HugeFirst).unwrap();
        let mut b = ctx.alloc::<u32>(4096, MallocPolicy::NormalOnly).unwrap();
        ctx.copy(&mut a, &input[..]).unwrap();
        ctx.copy(&mut b, &a).unwrap();
        let mut out = vec![0u32; 4096];
        ctx.copy(&mut out[..], &b).unwrap();
        assert_eq!(out, input);
        // H2H through pinned memory.
        let mut pinned = ctx.alloc_host::<u32>(4096).unwrap();
        ctx.copy(&mut *pinned, &input[..]).unwrap();
        assert_eq!(&pinned[..], &input[..]);
        // Asynchronous, with pinned memory, and through views.
        let stream = ctx.create_stream().unwrap();
        let mut back = vec![0u32; 1024];
        ctx.async_scope(|scope| {
            scope.memset(&stream, &mut b, 0)?;
            scope.copy(&stream, &mut a, &pinned)?;
            Ok(())
        })
        .unwrap();
        let tail = a.slice(3072..).unwrap();
        ctx.async_scope(|scope| {
            scope.copy(&stream, &mut back, &tail)?;
            Ok(())
        })
        .unwrap();
        assert_eq!(back, (3072..4096).collect::<Vec<u32>>());
        let mut zeros = vec![1u32; 16];
        ctx.copy(&mut zeros[..], &b.slice(..16).unwrap()).unwrap();
        assert_eq!(zeros, vec![0; 16]);
        stream.destroy().unwrap();
        pinned.free().unwrap();
        a.free().unwrap();
        b.free().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn seed000_stream_sample_memcpy_async_then_synchronize_m1_s2() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let host: Vec<u8> = (0..=255).cycle().take(1 << 20).collect();
        let mut dev = ctx
            .alloc::<u8>(host.len(), MallocPolicy::HugeFirst)
            .unwrap();
        ctx.async_scope(|scope| scope.copy(&stream, &mut dev, &host).map(drop))
            .unwrap();
        let mut check = vec![0u8; host.len()];
        ctx.copy(&mut check[..], &dev).unwrap();
        assert_eq!(check, host);
    }
    assert_no_findings(&session.finish());
}

#[test]
fn two_streams_joined_by_an_event_through_device_memory_e3_m1() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (upload, download) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut event: Event<'_, Reset> = ctx.create_event().unwrap().into();
        let mut staging = ctx.alloc::<u64>(1 << 16, MallocPolicy::HugeFirst).unwrap();
        for frame in 0..8u64 {
            let input: Vec<u64> = (0..1 << 16).map(|i| i * 31 + frame).collect();
            let mut output = vec![0u64; 1 << 16];
            event = ctx
                .async_scope(|scope| {
                    let staged = scope.copy(&upload, &mut staging, &input)?;
                    let uploaded = event.record(&upload)?;
                    let event = uploaded.wait(&download, |waited| waited.reset())?;
                    scope.copy(&download, &mut output, staged)?;
                    Ok(event)
                })
                .unwrap();
            assert_eq!(output, input, "frame {frame}");
        }
        event.destroy().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn source_longer_than_destination_is_a_typed_error_before_the_call_m1() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let mut small = ctx.alloc::<u16>(8, MallocPolicy::HugeFirst).unwrap();
        let big = [7u16; 9];
        let err = ctx.copy(&mut small, &big[..]).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        // A shorter source is a partial copy.
        ctx.copy(&mut small, &big[..4]).unwrap();
        let err = ctx.alloc::<u8>(0, MallocPolicy::HugeFirst).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)));
    }
    assert_no_findings(&session.finish());
}

#[test]
fn one_gib_device_allocation() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let big = ctx.alloc::<u8>(1 << 30, MallocPolicy::HugeFirst).unwrap();
        assert_eq!(big.byte_len(), 1 << 30);
        let mut tail = [1u8; 64];
        ctx.copy(&mut tail[..], &big.slice((1 << 30) - 64..).unwrap())
            .unwrap();
        assert_eq!(tail, [0u8; 64]);
        assert!(big.slice(..(1 << 30) + 1).is_none());
        big.free().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn panic_inside_an_async_scope_synchronises_before_unwinding_m1() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let host = vec![5u32; 1 << 18];
        let mut dev = ctx.alloc::<u32>(1 << 18, MallocPolicy::HugeFirst).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = ctx.async_scope(|scope| -> ascend_typestate::Result<()> {
                scope.copy(&stream, &mut dev, &host)?;
                panic!("a bug while the copy is pending");
            });
        }));
        assert!(caught.is_err());
        // The scope synchronised before unwinding: the copy is complete.
        let mut check = vec![0u32; 1 << 18];
        ctx.copy(&mut check[..], &dev).unwrap();
        assert_eq!(check, host);
    }
    assert_no_findings(&session.finish());
}

#[test]
fn reading_a_pending_result_on_another_stream_is_ordered_after_its_writer_e3_m1() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let (producer, consumer) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let input: Vec<u32> = (0..1024).collect();
        let mut staged = ctx.alloc::<u32>(1024, MallocPolicy::HugeFirst).unwrap();
        let mut doubled = ctx.alloc::<u32>(1024, MallocPolicy::HugeFirst).unwrap();
        let mut out = vec![0u32; 1024];
        ctx.async_scope(|scope| {
            let up = scope.copy(&producer, &mut staged, &input)?;
            // A slow kernel on the producer: an unordered read on the consumer would see zeros.
            let up = scope.simulated_map(
                &producer,
                std::time::Duration::from_millis(30),
                up,
                &mut doubled,
                |x| x * 2,
            )?;
            scope.copy(&consumer, &mut out, up)?;
            Ok(())
        })
        .unwrap();
        assert_eq!(out, input.iter().map(|x| x * 2).collect::<Vec<_>>());
    }
    assert_no_findings(&session.finish());
}

#[test]
fn panic_in_a_scope_of_three_streams_synchronises_each_before_unwinding_m1() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let streams = [
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
            ctx.create_stream().unwrap(),
        ];
        let host: Vec<Vec<u32>> = (0..3u32).map(|i| vec![i + 7; 1 << 18]).collect();
        let mut dev: Vec<DeviceBuffer<'_, u32>> = (0..3)
            .map(|_| ctx.alloc::<u32>(1 << 18, MallocPolicy::HugeFirst).unwrap())
            .collect();
        let mut small: Vec<DeviceBuffer<'_, u32>> = (0..3)
            .map(|_| ctx.alloc::<u32>(1, MallocPolicy::HugeFirst).unwrap())
            .collect();
        // Silent panics: printing a backtrace can take longer than the slow tasks below,
        // which would hide a scope that does not synchronise. (Tests of this binary run one
        // at a time: the session holds the runtime lock.)
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = ctx.async_scope(|scope| -> ascend_typestate::Result<()> {
                let pairs = dev.iter_mut().zip(small.iter_mut());
                for ((stream, (dst, one)), src) in streams.iter().zip(pairs).zip(&host) {
                    // The first stream every time: remembered once, synchronised once.
                    scope.copy(&streams[0], one, &src[..1])?;
                    // A slow task first on the other streams: without their synchronisation
                    // by the scope, the check below would read zeros.
                    if !std::ptr::eq(stream, &streams[0]) {
                        session.sim.sleep_kernel(stream.as_raw(), 50_000);
                    }
                    scope.copy(stream, dst, src)?;
                }
                panic!("a bug while three streams have copies pending");
            });
        }));
        std::panic::set_hook(hook);
        assert!(caught.is_err());
        for (dst, src) in dev.iter().zip(&host) {
            let mut check = vec![0u32; 1 << 18];
            ctx.copy(&mut check[..], dst).unwrap();
            assert_eq!(&check, src);
        }
    }
    assert_no_findings(&session.finish());
}

#[test]
fn copy_checks_report_the_first_failure_in_argument_order_m1() {
    let session = Session::start();
    {
        let device0 = session.acl().set_device(0).unwrap();
        let ctx = device0.create_context().unwrap();
        let other_ctx = device0.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let foreign_stream = other_ctx.create_stream().unwrap();
        let device1 = session.acl().set_device(1).unwrap();
        let ctx1 = device1.create_context().unwrap();
        let mut dev = ctx.alloc::<u8>(16, MallocPolicy::HugeFirst).unwrap();
        let mut dev1 = ctx1.alloc::<u8>(16, MallocPolicy::HugeFirst).unwrap();
        let long = [0u8; 32];
        let short = [0u8; 8];
        // Each attempt borrows its destination for the whole scope: one scope per attempt.
        // Too long and of another device and on a foreign stream: the size comes first.
        let e = ctx
            .async_scope(|scope| scope.copy(&foreign_stream, &mut dev1, &long[..]).map(drop))
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        let e = ctx
            .async_scope(|scope| scope.copy(&foreign_stream, &mut dev1, &short[..]).map(drop))
            .unwrap_err();
        assert!(matches!(e, Error::DeviceMismatch { found: 1, .. }), "{e:?}");
        let e = ctx
            .async_scope(|scope| scope.copy(&foreign_stream, &mut dev, &short[..]).map(drop))
            .unwrap_err();
        assert!(matches!(e, Error::ContextMismatch { .. }), "{e:?}");
        // Nothing was issued; a valid copy still works.
        ctx.async_scope(|scope| scope.copy(&stream, &mut dev, &short[..]).map(drop))
            .unwrap();
        dev1.free().unwrap();
        ctx1.destroy().unwrap();
        device1.reset().unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn a_scope_body_that_makes_another_context_current_is_still_synchronised_d6_m1() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let other = device.create_context().unwrap();
        let stream = ctx.create_stream().unwrap();
        let other_stream = other.create_stream().unwrap();
        let host = vec![3u32; 1 << 16];
        let mut dev = ctx.alloc::<u32>(1 << 16, MallocPolicy::HugeFirst).unwrap();
        ctx.async_scope(|scope| {
            scope.copy(&stream, &mut dev, &host)?;
            // Binds `other` on this thread: the scope's synchronisation binds `ctx` again.
            other_stream.synchronize()?;
            Ok(())
        })
        .unwrap();
        let mut check = vec![0u32; 1 << 16];
        ctx.copy(&mut check[..], &dev).unwrap();
        assert_eq!(check, host);
    }
    assert_no_findings(&session.finish());
}

#[test]
fn a_failed_task_surfaces_at_the_scope_end_and_nothing_is_lost_p3_m1() {
    let session = Session::start();
    {
        // SAFETY: the test arms a device-side timeout to make asynchronous tasks fail (an
        // environment fault): the data these waits order is not relied on, and every stream is
        // synchronised before the handles that it used are released.
        unsafe { session.acl().api().set_op_wait_timeout(1) }.unwrap();
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let s: Vec<_> = (0..4).map(|_| ctx.create_stream().unwrap()).collect();
        // s[1], s[2] and s[3] wait on an event s[0] records after 1.5 s: each wait times out
        // (1 s), and each stream's next synchronisation reports it (P3).
        session.sim.sleep_kernel(s[0].as_raw(), 1_500_000);
        let event = ctx.create_event().unwrap().record(&s[0]).unwrap();
        let event = event
            .wait(&s[1], |mut waited| {
                waited.also_wait(&s[2])?;
                waited.also_wait(&s[3])?;
                waited.reset()
            })
            .unwrap();
        let host = [1u8; 64];
        let mut dev: Vec<_> = (0..3)
            .map(|_| ctx.alloc::<u8>(64, MallocPolicy::HugeFirst).unwrap())
            .collect();
        let reports = support::DropErrors::capture();
        // The body succeeds on two failing streams: the scope returns the first stream's
        // error; the second's goes to the handler.
        let (a, rest) = dev.split_at_mut(1);
        let (b, c) = rest.split_at_mut(1);
        let err = ctx
            .async_scope(|scope| {
                scope.copy(&s[1], &mut a[0], &host[..])?;
                scope.copy(&s[2], &mut b[0], &host[..])?;
                Ok(())
            })
            .unwrap_err();
        assert_eq!(
            err.code(),
            Some(ascend_typestate::AclError::RtWaitTimeout),
            "{err}"
        );
        let reported = reports.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert!(reported[0].contains("further stream"), "{reported:?}");
        assert!(reported[0].contains("WAIT_TIMEOUT"), "{reported:?}");
        // The body fails: its error is returned, the synchronisation's goes to the handler.
        let err = ctx
            .async_scope(|scope| {
                scope.copy(&s[3], &mut c[0], &host[..])?;
                Err::<(), _>(Error::InvalidArgument("the body's own error"))
            })
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument("the body's own error")),
            "{err}"
        );
        let reported = reports.take();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert!(reported[0].starts_with("async scope"), "{reported:?}");
        assert!(reported[0].contains("WAIT_TIMEOUT"), "{reported:?}");
        s[0].synchronize().unwrap();
        event.destroy().unwrap();
        // SAFETY: disarms it again (never time out).
        unsafe { session.acl().api().set_op_wait_timeout(0) }.unwrap();
    }
    assert_no_findings(&session.finish());
}

#[test]
fn sizes_above_isize_max_are_refused_before_the_runtime_m1() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let live = session.sim.live_objects();
        let too_big = isize::MAX as usize + 1;
        let e = ctx
            .alloc::<u8>(too_big, MallocPolicy::HugeFirst)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        let e = ctx
            .alloc::<u64>(usize::MAX / 8, MallocPolicy::HugeFirst)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        let e = ctx.alloc_host::<u32>(too_big / 4 + 1).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert_eq!(
            session.sim.live_objects(),
            live,
            "nothing reached the runtime"
        );
    }
    assert_no_findings(&session.finish());
}
