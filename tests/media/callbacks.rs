//! Media tasks and host callbacks together (C1, C5, C8, DV6, DV10, M1): a subscribed stream
//! used by an async scope's decode and resize with callbacks between them, what a callback
//! body can do with media handles (nothing that reaches the runtime: C8), a scope ending
//! while a blocking callback holds its media work, every drop order afterwards, and
//! injected failures of the callback launch and of the decode.
//!
//! A callback observes the frames through their raw addresses: the simulator's media memory
//! is host memory (`acldvppMalloc` is a `calloc`), and a task's writes happen before the
//! runtime runs a callback queued after it on the same stream (S1, C1).

use crate::common::{LUMA, assert_luma, ends_clean, jpeg};
use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use ascend_typestate::{
    CallbackMode, Context, Error, FrameLayout, JpegBuffer, JpegdVpc, MediaChannel, MediaFrame,
    MediaV1, Memory, PixelFormat, ReportThread, Stream, Vpc,
};
use support::isolated::{Reports, isolated};
use support::sim::{Session, assert_no_findings, leaked_runtime};

/// Not read yet by a callback.
const UNSEEN: usize = usize::MAX;

/// The first byte of a frame's media memory, as an address a callback can carry.
fn address(frame: &MediaFrame<'_>) -> usize {
    Memory::<u8>::as_ptr(frame) as usize
}

/// The byte at `address` (the simulator's media memory, see the module docs).
fn peek(address: usize) -> usize {
    // SAFETY: the address of a live `acldvppMalloc` allocation of the simulator (host
    // memory); the frame outlives every callback that reads it (the scope and `unsubscribe`
    // wait for them), and no task writes that byte concurrently: the callback runs between
    // the task that wrote it and the one after it on the same stream (C1, C5).
    usize::from(unsafe { std::ptr::read_volatile(address as *const u8) })
}

/// Decode, a blocking callback, resize, a non-blocking callback, all in one scope on one
/// subscribed stream (C1, C5, DV6): the first callback sees the decoded luma and an
/// untouched resize output (the resize waits for it), the second sees the resized luma;
/// both ran exactly once, and both pictures are right after the scope.
#[test]
fn c1_c5_dv6_a_callback_between_decode_and_resize_in_one_scope() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 256 * 256 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
        input.load(&jpeg(200, 150, false)).unwrap();
        let target = FrameLayout::resized(64, 64, PixelFormat::Nv12).unwrap();
        let (decoded_at, resized_at) = (address(&decoded), address(&resized));
        assert_eq!(peek(decoded_at), 0, "fresh media memory is zeroed");
        assert_eq!(peek(resized_at), 0, "fresh media memory is zeroed");
        let runs = Arc::new(AtomicUsize::new(0));
        let first_saw = Arc::new([AtomicUsize::new(UNSEEN), AtomicUsize::new(UNSEEN)]);
        let second_saw = Arc::new(AtomicUsize::new(UNSEEN));
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            let (r, saw) = (Arc::clone(&runs), Arc::clone(&first_saw));
            stream.launch(CallbackMode::Blocking, move || {
                saw[0].store(peek(decoded_at), Ordering::SeqCst);
                saw[1].store(peek(resized_at), Ordering::SeqCst);
                r.fetch_add(1, Ordering::SeqCst);
            })?;
            tasks.resize(frame, &mut resized, target)?;
            let (r, saw) = (Arc::clone(&runs), Arc::clone(&second_saw));
            stream.launch(CallbackMode::NonBlocking, move || {
                saw.store(peek(resized_at), Ordering::SeqCst);
                r.fetch_add(1, Ordering::SeqCst);
            })?;
            Ok(())
        })
        .unwrap();
        // The blocking callback held the resize, which the scope waited for: it has run.
        assert!(runs.load(Ordering::SeqCst) >= 1);
        let near = |y: usize| y.abs_diff(usize::from(LUMA)) <= 3;
        let saw = first_saw[0].load(Ordering::SeqCst);
        assert!(near(saw), "the callback after the decode saw luma {saw}");
        assert_eq!(
            first_saw[1].load(Ordering::SeqCst),
            0,
            "the resize ran before the blocking callback queued ahead of it"
        );
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2, "each callback ran once");
        let saw = second_saw.load(Ordering::SeqCst);
        assert!(near(saw), "the callback after the resize saw luma {saw}");
        let layout = decoded.layout().unwrap();
        let mut bytes = vec![0u8; layout.byte_len()];
        ctx.copy(&mut bytes[..], &decoded).unwrap();
        assert_luma(&bytes, 200, 150, layout.width_stride());
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 64, 64, 64);
        channel.destroy().unwrap();
        stream.destroy().unwrap();
        report.stop().unwrap();
    }
    ends_clean(session);
}

/// Media handles of a leaked (`'static`) context, which a callback can own.
struct Kit {
    stream: Stream<'static>,
    channel: MediaChannel<'static, JpegdVpc>,
    input: JpegBuffer<'static>,
    decoded: MediaFrame<'static>,
    resized: MediaFrame<'static>,
}

fn kit(ctx: &'static Context<'static>, media: &'static MediaV1<'static>) -> Kit {
    Kit {
        stream: ctx.create_stream().unwrap(),
        channel: ctx.create_media_channel::<JpegdVpc>(media).unwrap(),
        input: ctx.alloc_jpeg(media, 16 * 1024).unwrap(),
        decoded: ctx.alloc_frame(media, 64 * 64 * 3 / 2).unwrap(),
        resized: ctx.alloc_frame(media, 32 * 32 * 3 / 2).unwrap(),
    }
}

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// Runs `body` in a blocking callback on a stream of `ctx` subscribed to a fresh report
/// thread, and returns what it returned.
fn in_callback<R: Send + 'static>(
    ctx: &'static Context<'static>,
    body: impl FnOnce() -> R + Send + 'static,
) -> R {
    let report = ReportThread::spawn(ctx).unwrap();
    let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
    let (tx, rx) = mpsc::channel();
    stream
        .launch(CallbackMode::Blocking, move || tx.send(body()).unwrap())
        .unwrap();
    let value = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the callback did not run");
    stream.unsubscribe().unwrap().destroy().unwrap();
    report.stop().unwrap();
    value
}

/// Decode and resize with a kit outside any callback; the resized luma is checked.
fn decode_and_resize(ctx: &Context<'_>, kit: &mut Kit) {
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
    ctx.async_scope(|scope| {
        let tasks = scope.media(&mut kit.channel, &kit.stream)?;
        let frame = tasks.decode_jpeg(&kit.input, &mut kit.decoded, PixelFormat::Nv12)?;
        tasks.resize(frame, &mut kit.resized, target)?;
        Ok(())
    })
    .unwrap();
    let mut small = vec![0u8; target.byte_len()];
    ctx.copy(&mut small[..], &kit.resized).unwrap();
    assert_luma(&small, 32, 32, 32);
}

/// C8: media handles moved into a callback. An async scope's media tasks there are
/// refused with `Error::InsideCallback` (the stream's binding fails: nothing issued), and
/// so are loading a JPEG, allocating a frame and creating a channel; no runtime call is
/// made (no finding, no decode counted, no object created). Sent back, the same handles
/// decode and resize correctly and are released: nothing is left alive.
#[test]
fn c8_media_tasks_issued_inside_a_callback_are_refused() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let media = leak(acl.media_v1().unwrap());
        let bytes = jpeg(64, 64, false);
        let baseline = sim.live_objects();
        let mut kit = kit(ctx, media);
        kit.input.load(&bytes).unwrap();
        let with_kit = sim.live_objects();
        sim.reset_call_counts();
        let (mut kit, scoped, loaded, allocated, created) = in_callback(ctx, move || {
            let mut kit = kit;
            let scoped = ctx.async_scope(|scope| {
                let tasks = scope.media(&mut kit.channel, &kit.stream)?;
                tasks.decode_jpeg(&kit.input, &mut kit.decoded, PixelFormat::Nv12)?;
                Ok(())
            });
            let loaded = kit.input.load(&bytes).map(drop);
            let allocated = ctx.alloc_frame(media, 1024).map(drop);
            let created = ctx.create_media_channel::<Vpc>(media).map(drop);
            (kit, scoped, loaded, allocated, created)
        });
        for (what, outcome) in [
            ("the scope's decode", scoped),
            ("a JPEG load", loaded),
            ("a frame allocation", allocated),
            ("a channel creation", created),
        ] {
            assert!(
                matches!(outcome, Err(Error::InsideCallback)),
                "{what} inside a callback: {outcome:?}"
            );
        }
        for call in [
            "acldvppJpegDecodeAsync",
            "acldvppMalloc",
            "acldvppCreateChannel",
            "aclrtMemcpy",
        ] {
            assert_eq!(sim.call_count(call), 0, "{call} inside a callback");
        }
        assert_eq!(kit.decoded.layout(), None, "nothing was decoded");
        assert_eq!(sim.live_objects(), with_kit, "nothing created inside");
        assert_no_findings(&sim.findings());
        // The refused load left the buffer empty (`load` forgets the old file first).
        assert_eq!(kit.input.header(), None);
        kit.input.load(&jpeg(64, 64, false)).unwrap();
        decode_and_resize(ctx, &mut kit);
        kit.channel.destroy().unwrap();
        kit.stream.destroy().unwrap();
        drop((kit.input, kit.decoded, kit.resized));
        assert_eq!(sim.live_objects(), baseline, "everything released");
        assert_no_findings(&sim.findings());
    });
}

/// How `Error::InsideCallback` is reported (its `Debug` form).
fn inside_callback() -> String {
    format!("{:?}", Error::InsideCallback)
}

/// C8, DV10: media handles dropped inside a callback. Each release needs the runtime, so
/// each is refused where it happens: every `Drop` reports `Error::InsideCallback` to the
/// drop-error handler (a channel once, a JPEG buffer once, a frame three times: its two
/// descriptions and its memory), makes no runtime call (no finding, no destroy or free
/// counted), and keeps what it could not release: the objects stay alive, not deferred.
#[test]
fn c8_dv10_media_handles_dropped_inside_a_callback_are_reported_and_kept() {
    isolated(|| {
        let (acl, sim) = leaked_runtime();
        let device = leak(acl.set_device(0).unwrap());
        let ctx = leak(device.create_context().unwrap());
        let media = leak(acl.media_v1().unwrap());
        let mut kit = kit(ctx, media);
        kit.input.load(&jpeg(64, 64, false)).unwrap();
        decode_and_resize(ctx, &mut kit);
        let Kit {
            stream,
            channel,
            input,
            decoded,
            resized,
        } = kit;
        let alive = sim.live_objects();
        let reports = Reports::capture();
        sim.reset_call_counts();
        in_callback(ctx, move || drop((channel, input, decoded, resized)));
        let mut reported = reports.take();
        for (what, error) in &reported {
            assert_eq!(*error, inside_callback(), "{what}");
        }
        reported.sort();
        let whats: Vec<&str> = reported.iter().map(|(what, _)| *what).collect();
        assert_eq!(
            whats,
            [
                "MediaBuffer",
                "MediaBuffer",
                "MediaBuffer",
                "MediaChannel",
                "MediaFrame (a picture description)",
                "MediaFrame (a picture description)",
                "MediaFrame (a picture description)",
                "MediaFrame (a picture description)",
            ],
            "{reported:#?}"
        );
        for call in [
            "acldvppFree",
            "acldvppDestroyPicDesc",
            "acldvppDestroyChannel",
            "acldvppDestroyChannelDesc",
            "acldvppDestroyResizeConfig",
        ] {
            assert_eq!(sim.call_count(call), 0, "{call} inside a callback");
        }
        // In the callback's report thread's streams: one stream made and destroyed.
        assert_eq!(sim.live_objects(), alive, "kept, not released or deferred");
        assert_no_findings(&sim.findings());
        stream.destroy().unwrap();
    });
}

/// A blocking callback waiting for the test, a decode and a resize queued behind it on the
/// same stream, the scope ended: it returns only once the callback is released (a timer
/// thread, after about 100 ms), with both pictures right (C5, DV6, M1).
#[test]
fn c5_m1_a_scope_waits_for_a_blocked_callback_holding_its_media_work() {
    let bytes = jpeg(120, 90, false);
    let session = Session::start();
    let errors = support::DropErrors::capture();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 96 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        input.load(&bytes).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        let decoded_at = address(&decoded);
        let (release, released) = mpsc::channel::<()>();
        let saw = Arc::new(AtomicUsize::new(UNSEEN));
        let started = Instant::now();
        let timer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            release.send(()).unwrap();
        });
        ctx.async_scope(|scope| {
            let s = Arc::clone(&saw);
            stream.launch(CallbackMode::Blocking, move || {
                released.recv().unwrap();
                s.store(peek(decoded_at), Ordering::SeqCst);
            })?;
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(100),
            "the scope ended after {elapsed:?}, before the callback was released"
        );
        assert_eq!(
            saw.load(Ordering::SeqCst),
            0,
            "the decode queued behind the blocking callback ran before it"
        );
        timer.join().unwrap();
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 32, 32, 32);
        let layout = decoded.layout().unwrap();
        let mut bytes = vec![0u8; layout.byte_len()];
        ctx.copy(&mut bytes[..], &decoded).unwrap();
        assert_luma(&bytes, 120, 90, layout.width_stride());
        drop((stream, channel, input, decoded, resized));
        report.stop().unwrap();
    }
    let reports = errors.take();
    assert!(reports.is_empty(), "{reports:#?}");
    ends_clean(session);
}

/// The permutations of `0..n`.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut all = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..=rest.len() {
            let mut p = rest.clone();
            p.insert(at, n - 1);
            all.push(p);
        }
    }
    all
}

/// How the scope with the held media work ends.
#[derive(Clone, Copy, Debug)]
enum End {
    Done,
    Error,
    Panic,
}

const SUBSCRIBED: usize = 0;
const REPORT: usize = 1;

/// One run of [`c1_dv10_every_drop_order_after_a_blocked_callback`]: a scope whose media
/// work waits for a blocking callback released by a timer after `hold`, its body ending as
/// `end` says (the scope waits all the same, M1), then the handles
/// dropped in `order` (0 the subscribed stream, 1 the report thread, 2 the channel, 3 the
/// JPEG buffer, 4 and 5 the frames).
fn blocked_then_dropped(
    session: &Session,
    order: &[usize],
    end: End,
    hold: Duration,
    bytes: &[u8],
) {
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let media = session.acl().media_v1().unwrap();
    let report = ReportThread::spawn(&ctx).unwrap();
    let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
    let mut input = ctx.alloc_jpeg(&media, 16 * 1024).unwrap();
    let mut decoded = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
    let mut resized = ctx.alloc_frame(&media, 16 * 16 * 3 / 2).unwrap();
    input.load(bytes).unwrap();
    let target = FrameLayout::resized(16, 16, PixelFormat::Nv21).unwrap();
    let (release, released) = mpsc::channel::<()>();
    let ran = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let timer = std::thread::spawn(move || {
        std::thread::sleep(hold);
        release.send(()).unwrap();
    });
    let body = || {
        ctx.async_scope(|scope| {
            let r = Arc::clone(&ran);
            stream.launch(CallbackMode::Blocking, move || {
                released.recv().unwrap();
                r.fetch_add(1, Ordering::SeqCst);
            })?;
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            match end {
                End::Done => Ok(()),
                End::Error => Err(Error::InvalidArgument("the body's own error")),
                End::Panic => panic!("the body panics with a callback holding media work"),
            }
        })
    };
    match end {
        End::Done => body().unwrap(),
        End::Error => assert!(matches!(body(), Err(Error::InvalidArgument(_)))),
        End::Panic => {
            assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err())
        }
    }
    // Even when the body failed or panicked, the scope waited for the stream (M1).
    assert!(started.elapsed() >= hold, "{order:?} {end:?}");
    assert_eq!(ran.load(Ordering::SeqCst), 1, "{order:?} {end:?}");
    timer.join().unwrap();
    let mut small = vec![0u8; target.byte_len()];
    ctx.copy(&mut small[..], &resized).unwrap();
    assert_luma(&small, 16, 16, 16);
    let mut channel = Some(channel);
    let mut input = Some(input);
    let mut decoded = Some(decoded);
    let mut resized = Some(resized);
    let mut drop_media = |which: usize| match which {
        2 => drop(channel.take()),
        3 => drop(input.take()),
        4 => drop(decoded.take()),
        _ => drop(resized.take()),
    };
    // `Subscribed` borrows the report thread, which cannot move before it is dropped.
    let split = order.iter().position(|&o| o == SUBSCRIBED).unwrap();
    order[..split].iter().for_each(|&which| drop_media(which));
    drop(stream);
    let mut report = Some(report);
    for &which in &order[split + 1..] {
        match which {
            REPORT => drop(report.take()),
            _ => drop_media(which),
        }
    }
    // The token, the context, then the device: borrowed, they go last.
}

/// Every order of dropping the subscribed stream, the report thread, the channel, the JPEG
/// buffer and both frames that the borrows allow (the subscription before its report
/// thread: 360 of the 720), after a scope whose decode and resize waited for a blocking
/// callback and whose body returned, failed or panicked (C1, C5, DV10, M1): no drop-error
/// report, nothing alive, no finding.
#[test]
fn c1_dv10_every_drop_order_after_a_blocked_callback() {
    support::quiet_panics(&["the body panics with a callback holding media work"]);
    let bytes = jpeg(64, 48, false);
    let session = Session::start();
    let errors = support::DropErrors::capture();
    let mut runs = 0;
    for order in permutations(6) {
        let at = |x: usize| order.iter().position(|&o| o == x).unwrap();
        if at(REPORT) < at(SUBSCRIBED) {
            continue;
        }
        // Every 60th run holds the callback for 100 ms, the others for 2 ms.
        let hold = Duration::from_millis(if runs % 60 == 0 { 100 } else { 2 });
        let end = [End::Done, End::Error, End::Panic][runs % 3];
        blocked_then_dropped(&session, &order, end, hold, &bytes);
        assert_eq!(session.sim.live_objects(), 0, "{order:?}");
        runs += 1;
    }
    assert_eq!(runs, 360);
    let reports = errors.take();
    assert!(reports.is_empty(), "{reports:#?}");
    ends_clean(session);
}

/// Display of an injected failure of `call`.
fn failed(error: &Error, call: &str) -> bool {
    matches!(error, Error::Runtime { call: c, .. } if *c == call)
        && error.to_string().contains("(507000)")
}

/// Faults in a scope that has both media tasks and callbacks (C1, DV6, M1): a failed
/// `aclrtLaunchCallback` after a decode is returned typed, its closure dropped and never
/// run, the decode synchronised; a failed `acldvppJpegDecodeAsync` after a launched
/// callback is returned typed, nothing decoded, and the callback still runs once. Then a
/// clean scope works, and everything is released: no report, nothing alive, no finding.
#[test]
fn c1_dv6_injected_launch_and_decode_failures_in_one_scope() {
    let bytes = jpeg(96, 64, false);
    let session = Session::start();
    let errors = support::DropErrors::capture();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 16 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        input.load(&bytes).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        struct CountDrop(Arc<AtomicUsize>);
        impl Drop for CountDrop {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }

        // The launch fails after the decode was queued.
        session.sim.inject_fault("aclrtLaunchCallback", 507000, 1);
        let outcome = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            let (r, guard) = (Arc::clone(&ran), CountDrop(Arc::clone(&dropped)));
            stream.launch(CallbackMode::Blocking, move || {
                let _guard = &guard;
                r.fetch_add(1, Ordering::SeqCst);
            })?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        });
        let error = outcome.unwrap_err();
        assert!(failed(&error, "aclrtLaunchCallback"), "{error:?}");
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the closure dropped once"
        );
        assert_eq!(stream.pending_callbacks(), 0);
        assert_eq!(resized.layout(), None, "no resize was issued");

        // The decode fails after a callback was launched.
        session
            .sim
            .inject_fault("acldvppJpegDecodeAsync", 507000, 1);
        let outcome = ctx.async_scope(|scope| {
            let r = Arc::clone(&ran);
            stream.launch(CallbackMode::Blocking, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })?;
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        });
        let error = outcome.unwrap_err();
        assert!(failed(&error, "acldvppJpegDecodeAsync"), "{error:?}");
        assert_eq!(decoded.layout(), None, "the failed decode wrote no picture");
        // The scope synchronised the stream: the blocking callback queued before has run.
        assert_eq!(
            ran.load(Ordering::SeqCst),
            1,
            "the launched callback ran once"
        );

        // A clean scope afterwards.
        let r = Arc::clone(&ran);
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            stream.launch(CallbackMode::Blocking, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 32, 32, 32);
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        channel.destroy().unwrap();
        stream.destroy().unwrap();
        drop((input, decoded, resized));
        report.stop().unwrap();
    }
    let reports = errors.take();
    assert!(reports.is_empty(), "{reports:#?}");
    ends_clean(session);
}

/// A decode that fails when it runs (`aclsimInjectTaskFailure`, as bytes that do not
/// decode do), a blocking callback and a resize behind it (C1, DV6, P3b): the scope returns the
/// runtime's asynchronous error, both frames written in it report no layout, the callback
/// still runs once, and a clean decode afterwards on the same stream and channel works.
#[test]
fn c1_dv6_a_decode_failing_when_it_runs_before_a_callback() {
    let good = jpeg(96, 64, false);
    let session = Session::start();
    let errors = support::DropErrors::capture();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 16 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        input.load(&good).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = Arc::clone(&ran);
        session.sim.inject_task_failure(stream.as_raw(), 507_000);
        let outcome = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            stream.launch(CallbackMode::Blocking, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        });
        let error = outcome.unwrap_err();
        assert!(error.to_string().contains("(507000)"), "{error:?}");
        assert_eq!(decoded.layout(), None);
        assert_eq!(resized.layout(), None);
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 32, 32, 32);
        let stream = stream.unsubscribe().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1, "the callback ran once");
        channel.destroy().unwrap();
        stream.destroy().unwrap();
        drop((input, decoded, resized));
        report.stop().unwrap();
    }
    let reports = errors.take();
    assert!(reports.is_empty(), "{reports:#?}");
    ends_clean(session);
}

/// An injected `aclrtSynchronizeStream` failure at the end of a scope whose decode and
/// resize wait behind a blocked callback (M1, DV6, C5): the scope returns the typed error
/// only once the stream is done (it synchronises again: the callback's release, about
/// 100 ms later, comes first), the frames it wrote report no layout, and the handles drop
/// right away with no finding; the next scope on the same stream works.
#[test]
fn m1_c5_a_failed_synchronisation_behind_a_blocked_callback_still_waits() {
    let bytes = jpeg(96, 64, false);
    let session = Session::start();
    let errors = support::DropErrors::capture();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 16 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        input.load(&bytes).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        let (release, released) = mpsc::channel::<()>();
        let started = Instant::now();
        let timer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            release.send(()).unwrap();
        });
        session
            .sim
            .inject_fault("aclrtSynchronizeStream", 507000, 1);
        let outcome = ctx.async_scope(|scope| {
            stream.launch(CallbackMode::Blocking, move || released.recv().unwrap())?;
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        });
        let elapsed = started.elapsed();
        let error = outcome.unwrap_err();
        assert!(failed(&error, "aclrtSynchronizeStream"), "{error:?}");
        assert!(
            elapsed >= Duration::from_millis(100),
            "the scope ended after {elapsed:?}, with its media work held by the callback"
        );
        assert_eq!(decoded.layout(), None);
        assert_eq!(resized.layout(), None);
        timer.join().unwrap();
        // Dropped at once: no task uses them any more (no DV10 finding below).
        drop((decoded, resized));
        let mut decoded = ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 32, 32, 32);
        drop((stream, channel, input, decoded, resized));
        report.stop().unwrap();
    }
    let reports = errors.take();
    assert!(reports.is_empty(), "{reports:#?}");
    ends_clean(session);
}

/// `aclrtProcessReport` failing (injected, three times) before a blocking callback holds a
/// scope's resize (C1, C6): the report thread goes on, the callback runs once, the scope
/// ends with the right picture, and `stop` returns the first failure, typed, and reports
/// the two others.
#[test]
fn c1_c6_a_failing_report_thread_delays_but_does_not_lose_the_media_work() {
    let bytes = jpeg(96, 64, false);
    let session = Session::start();
    let errors = support::DropErrors::capture();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 16 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        input.load(&bytes).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = Arc::clone(&ran);
        // The three failures happen before the scope: a poll already waiting when they are
        // armed could otherwise run the callback, and the thread stop before failing again.
        session.sim.reset_call_counts();
        session.sim.inject_fault("aclrtProcessReport", 507000, 3);
        let armed = Instant::now();
        while session.sim.call_count("aclrtProcessReport") < 3 {
            assert!(
                armed.elapsed() < Duration::from_secs(10),
                "the report thread polls"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            stream.launch(CallbackMode::Blocking, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 32, 32, 32);
        drop((stream, channel, input, decoded, resized));
        let stopped = report.stop();
        let error = stopped.unwrap_err();
        assert!(failed(&error, "aclrtProcessReport"), "{error:?}");
    }
    // The two other failures went to the drop-error handler ("a further error").
    let reports = errors.take();
    assert_eq!(reports.len(), 2, "{reports:#?}");
    assert!(reports.iter().all(|r| r.contains("507000")), "{reports:#?}");
    ends_clean(session);
}

/// A callback between a decode and a resize panics (C1): the panic is caught, the resize
/// after it still runs and is right, and `stop` reports the panic, typed.
#[test]
fn c1_a_panicking_callback_between_decode_and_resize() {
    support::quiet_panics(&["a callback panics between decode and resize"]);
    let bytes = jpeg(96, 64, false);
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let report = ReportThread::spawn(&ctx).unwrap();
        let stream = report.subscribe(ctx.create_stream().unwrap()).unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 16 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        input.load(&bytes).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            stream.launch(CallbackMode::Blocking, || {
                panic!("a callback panics between decode and resize")
            })?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 32, 32, 32);
        drop((stream, channel, input, decoded, resized));
        match report.stop() {
            Err(Error::CallbackPanicked { count: 1, first }) => {
                assert!(first.contains("between decode and resize"), "{first}")
            }
            other => panic!("expected the panic, typed: {other:?}"),
        }
    }
    ends_clean(session);
}

/// The same between-the-tasks observation with a host function (C10, DV6): a decode, a
/// host function, a resize in one scope on a `HostFnStream`; the host function sees the
/// decoded luma and an untouched resize output (later tasks wait for it), and the resized
/// picture is right after the scope.
#[test]
fn c10_dv6_a_host_function_between_decode_and_resize_in_one_scope() {
    let bytes = jpeg(96, 64, false);
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap().with_host_functions();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 16 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        input.load(&bytes).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        let (decoded_at, resized_at) = (address(&decoded), address(&resized));
        let saw = Arc::new([AtomicUsize::new(UNSEEN), AtomicUsize::new(UNSEEN)]);
        let s = Arc::clone(&saw);
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            stream.launch(move || {
                s[0].store(peek(decoded_at), Ordering::SeqCst);
                s[1].store(peek(resized_at), Ordering::SeqCst);
            })?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        let luma = saw[0].load(Ordering::SeqCst);
        assert!(luma.abs_diff(usize::from(LUMA)) <= 3, "saw luma {luma}");
        assert_eq!(saw[1].load(Ordering::SeqCst), 0, "the resize ran first");
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 32, 32, 32);
        channel.destroy().unwrap();
        stream.destroy().unwrap();
        drop((input, decoded, resized));
    }
    ends_clean(session);
}

/// How many callbacks a `callback_flow` run saw run (its self-check).
static FLOW_CALLBACKS: AtomicUsize = AtomicUsize::new(0);

/// A sweep program: a report thread and a subscribed stream whose scopes decode, run a
/// blocking callback, resize and run a non-blocking one; each picture and the callbacks
/// checked; explicit teardown.
fn callback_flow(
    path: &std::path::Path,
    fault: Option<&support::sweep::Fault>,
) -> ascend_typestate::Result<()> {
    use support::sweep::{self, self_check};
    let bytes = jpeg(130, 98, false);
    let acl =
        ascend_typestate::Acl::init_with(&ascend_typestate::InitOptions::default().library(path))?;
    sweep::arm(&acl, fault);
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let media = acl.media_v1()?;
    let report = ReportThread::spawn(&ctx)?;
    let stream = report.subscribe(ctx.create_stream()?)?;
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
    let mut input = ctx.alloc_jpeg(&media, 16 * 1024)?;
    let mut decoded = ctx.alloc_frame(&media, 192 * 112 * 3 / 2)?;
    let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2)?;
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12)?;
    FLOW_CALLBACKS.store(0, Ordering::SeqCst);
    for _ in 0..2 {
        input.load(&bytes)?;
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            stream.launch(CallbackMode::Blocking, || {
                FLOW_CALLBACKS.fetch_add(1, Ordering::SeqCst);
            })?;
            tasks.resize(frame, &mut resized, target)?;
            stream.launch(CallbackMode::NonBlocking, || {
                FLOW_CALLBACKS.fetch_add(1, Ordering::SeqCst);
            })?;
            Ok(())
        })?;
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized)?;
        self_check(
            small[..32 * 32].iter().all(|y| y.abs_diff(LUMA) <= 3),
            "self-check: the resized picture's luma",
        )?;
    }
    let stream = stream.unsubscribe()?;
    self_check(
        FLOW_CALLBACKS.load(Ordering::SeqCst) == 4,
        "self-check: every callback ran once",
    )?;
    channel.destroy()?;
    drop((input, decoded, resized));
    stream.destroy()?;
    report.stop()?;
    drop(media);
    ctx.destroy()?;
    device.reset()?;
    acl.finalize()?;
    Ok(())
}

/// A sweep program: the same handles, ended by `Drop` right after a scope whose body fails
/// with a decode, a blocking callback and a resize pending on the subscribed stream.
fn callback_drops(
    path: &std::path::Path,
    fault: Option<&support::sweep::Fault>,
) -> ascend_typestate::Result<()> {
    use support::sweep::{self, self_check};
    let bytes = jpeg(64, 64, false);
    let acl =
        ascend_typestate::Acl::init_with(&ascend_typestate::InitOptions::default().library(path))?;
    sweep::arm(&acl, fault);
    {
        let device = acl.set_device(0)?;
        let ctx = device.create_context()?;
        let media = acl.media_v1()?;
        let report = ReportThread::spawn(&ctx)?;
        let stream = report.subscribe(ctx.create_stream()?)?;
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media)?;
        let mut input = ctx.alloc_jpeg(&media, 16 * 1024)?;
        let mut decoded = ctx.alloc_frame(&media, 64 * 64 * 3 / 2)?;
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2)?;
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv21)?;
        input.load(&bytes)?;
        let ended = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            stream.launch(CallbackMode::Blocking, || {
                std::thread::sleep(Duration::from_millis(2))
            })?;
            tasks.resize(frame, &mut resized, target)?;
            Err::<(), _>(Error::InvalidArgument("self-check: the body's own error"))
        });
        match ended {
            Err(Error::InvalidArgument("self-check: the body's own error")) => {}
            Err(error) => return Err(error),
            Ok(()) => return self_check(false, "self-check: the body's error is returned"),
        }
    }
    acl.finalize()?;
    Ok(())
}

/// The media functions, the callback functions (but `aclrtProcessReport`, whose number of
/// calls depends on timing) and the runtime calls around them.
fn callback_flow_functions() -> Vec<&'static str> {
    let mut all = ascend_typestate::sys::dvpp::DVPP_SYMBOLS.to_vec();
    all.extend_from_slice(&[
        "aclrtSubscribeReport",
        "aclrtLaunchCallback",
        "aclrtUnSubscribeReport",
        "aclrtMemcpy",
        "aclrtSynchronizeStream",
        "aclrtCreateStream",
        "aclrtDestroyStream",
    ]);
    all
}

const CALLBACK_SWEEP: support::sweep::Sweep = support::sweep::Sweep {
    name: "media callback fault sweep",
    worker_test: "media_callback_fault_sweep_worker",
    programs: &[
        ("callback_flow", callback_flow),
        ("callback_drops", callback_drops),
    ],
    functions: callback_flow_functions,
    codes: support::sweep::default_codes,
    check: support::sweep::no_check,
    expected_reports: &["the body's own error"],
};

#[test]
fn media_callback_fault_sweep_worker() {
    support::sweep::worker(&CALLBACK_SWEEP);
}

/// Each media, callback and stream call of `callback_flow` fails once at each of its
/// occurrences (C1, C5, DV3-DV10, M1): the injected error is returned (or recovered from
/// and reported), with no finding, nothing alive and the runtime finalized.
#[test]
fn media_callback_fault_sweep_once() {
    if std::env::var_os(support::sweep::WORKER_ENV).is_some() {
        return;
    }
    if support::child::own_process("media_callback_fault_sweep_once") {
        return;
    }
    support::sweep::run_and_assert(&CALLBACK_SWEEP, 1);
    support::child::passed("media_callback_fault_sweep_once");
}

/// As [`media_callback_fault_sweep_once`], each call failing twice in a row.
#[test]
fn media_callback_fault_sweep_twice() {
    if std::env::var_os(support::sweep::WORKER_ENV).is_some() {
        return;
    }
    if support::child::own_process("media_callback_fault_sweep_twice") {
        return;
    }
    support::sweep::run_and_assert(&CALLBACK_SWEEP, 2);
    support::child::passed("media_callback_fault_sweep_twice");
}

/// Media work on a stream subscribed to a host-function thread (C12, DV6): decode and
/// resize in a scope on it, the picture right, then the subscription ended with the
/// stream's tasks done and the thread stopped; nothing alive, no finding.
#[test]
fn c12_dv6_media_work_on_a_host_func_subscribed_stream() {
    let bytes = jpeg(96, 64, false);
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let thread = ascend_typestate::HostFuncThread::spawn(&ctx).unwrap();
        let stream = thread.subscribe(ctx.create_stream().unwrap()).unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 16 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        input.load(&bytes).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 32, 32, 32);
        stream.unsubscribe().unwrap().destroy().unwrap();
        channel.destroy().unwrap();
        drop((input, decoded, resized));
        thread.stop().unwrap();
    }
    ends_clean(session);
}
