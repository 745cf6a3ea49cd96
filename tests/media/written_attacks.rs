//! The scope's list of the frames its media tasks write (DV6), pushed at its edges: many
//! frames in one failed scope, links left over from an earlier scope to a frame since
//! dropped, an outer scope's tasks issued from inside an inner scope, frames that were only
//! read, failures another synchronisation saw first. A frame reports a layout exactly when
//! the last task that wrote it is known to have succeeded. Each ends with no finding and
//! nothing alive.

use crate::common::{assert_luma, ends_clean, jpeg};
use crate::support;

use ascend_typestate::{Error, FrameLayout, JpegdVpc, PixelFormat, Vpc};
use support::sim::Session;

/// A task error the simulator reports when the next task on a stream runs (P3b).
const TASK_FAILURE: i32 = 507_000;

fn target() -> FrameLayout {
    FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap()
}

/// Eight resizes of one decode into eight frames, in one scope whose decode fails: every
/// frame of the list is forgotten (no frame is skipped, the walk ends), and a later scope
/// writing them all again gives every one its layout back, with the right picture.
#[test]
fn dv6_every_frame_of_a_long_list_is_forgotten_and_written_again() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        let mut frames: Vec<_> = (0..8)
            .map(|_| ctx.alloc_frame(&media, target().byte_len()).unwrap())
            .collect();
        input.load(&jpeg(128, 96, false)).unwrap();
        let write_all = |channel: &mut _, decoded: &mut _, frames: &mut Vec<_>| {
            ctx.async_scope(|scope| {
                let tasks = scope.media(channel, &stream)?;
                let picture = tasks.decode_jpeg(&input, decoded, PixelFormat::Nv12)?;
                for frame in frames.iter_mut() {
                    tasks.resize(picture, frame, target())?;
                }
                Ok(())
            })
        };
        write_all(&mut channel, &mut decoded, &mut frames).unwrap();
        assert!(frames.iter().all(|f| f.layout() == Some(target())));
        session
            .sim
            .inject_task_failure(stream.as_raw(), TASK_FAILURE);
        let failed = write_all(&mut channel, &mut decoded, &mut frames);
        assert!(failed.is_err(), "{failed:?}");
        assert_eq!(decoded.layout(), None);
        for (n, frame) in frames.iter().enumerate() {
            assert_eq!(frame.layout(), None, "frame {n} of the failed scope");
        }
        // Twice in a row: a list whose links the failed walk took is built again.
        session
            .sim
            .inject_task_failure(stream.as_raw(), TASK_FAILURE);
        assert!(write_all(&mut channel, &mut decoded, &mut frames).is_err());
        assert!(frames.iter().all(|f| f.layout().is_none()));
        write_all(&mut channel, &mut decoded, &mut frames).unwrap();
        for frame in &frames {
            assert_eq!(frame.layout(), Some(target()));
            let mut bytes = vec![0u8; target().byte_len()];
            ctx.copy(&mut bytes[..], frame).unwrap();
            assert_luma(&bytes, 32, 32, 32);
        }
    }
    ends_clean(session);
}

/// A successful scope leaves its list's links in the frames (`resized` linked to
/// `decoded`); `decoded` is then dropped, and a later scope that writes only `resized`
/// fails: its walk starts afresh at `resized` and never reaches the dropped frame (a stale
/// link followed would read freed memory: run under AddressSanitizer or memcheck to see
/// it). The frame it only read keeps its layout.
#[test]
fn dv6_a_link_left_by_an_earlier_scope_to_a_dropped_frame_is_never_followed() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut source = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, target().byte_len()).unwrap();
        input.load(&jpeg(128, 96, false)).unwrap();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            tasks.decode_jpeg(&input, &mut source, PixelFormat::Nv12)?;
            Ok(())
        })
        .unwrap();
        for _ in 0..3 {
            // Boxed: its drop frees the memory the stale link points to.
            let mut decoded = Box::new(ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap());
            ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                let picture = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                tasks.resize(picture, &mut resized, target())?;
                Ok(())
            })
            .unwrap();
            drop(decoded);
            // Some other allocations where the dropped frame was.
            let reuse: Vec<_> = (0..4)
                .map(|_| ctx.alloc_frame(&media, 64).unwrap())
                .collect();
            session
                .sim
                .inject_task_failure(stream.as_raw(), TASK_FAILURE);
            let failed = ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                tasks.resize(&source, &mut resized, target())?;
                Ok(())
            });
            assert!(failed.is_err(), "{failed:?}");
            assert_eq!(resized.layout(), None);
            assert!(source.layout().is_some(), "only read: its picture stands");
            assert!(reuse.iter().all(|f| f.layout().is_none()));
        }
    }
    ends_clean(session);
}

/// An outer scope's tasks issued from inside an inner scope link into the outer list, the
/// inner scope's into its own: a failure on the outer stream forgets only the outer
/// scope's output (the inner scope ended before it was reported); a failure on the inner
/// stream forgets the inner one's, and the outer one's too, conservatively: the inner
/// scope's failed synchronisation happened while the outer scope's tasks were pending, and
/// a scope cannot tell which task an error belonged to (DV6).
#[test]
fn dv6_outer_tasks_issued_inside_an_inner_scope_stay_on_the_outer_list() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let outer_stream = ctx.create_stream().unwrap();
        let inner_stream = ctx.create_stream().unwrap();
        let mut jpegd = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut vpc = ctx.create_media_channel::<Vpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut source = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        let mut outer_out = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        let mut outer_first = ctx.alloc_frame(&media, target().byte_len()).unwrap();
        let mut inner_out = ctx.alloc_frame(&media, target().byte_len()).unwrap();
        input.load(&jpeg(128, 96, false)).unwrap();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut jpegd, &outer_stream)?;
            tasks.decode_jpeg(&input, &mut source, PixelFormat::Nv12)?;
            Ok(())
        })
        .unwrap();
        for fail_outer in [true, false] {
            let (source, input) = (&source, &input);
            let (written_outer, written_first, written_inner) =
                (&mut outer_out, &mut outer_first, &mut inner_out);
            let (jpegd, vpc) = (&mut jpegd, &mut vpc);
            let (outer_stream, inner_stream) = (&outer_stream, &inner_stream);
            let sim = &session.sim;
            let ctx = &ctx;
            let outcome = ctx.async_scope(move |outer| {
                let outer_tasks = outer.media(jpegd, outer_stream)?;
                outer_tasks.resize(source, written_first, target())?;
                let inner = ctx.async_scope(move |inner| {
                    let inner_tasks = inner.media(vpc, inner_stream)?;
                    if !fail_outer {
                        sim.inject_task_failure(inner_stream.as_raw(), TASK_FAILURE);
                    }
                    inner_tasks.resize(source, written_inner, target())?;
                    if fail_outer {
                        sim.inject_task_failure(outer_stream.as_raw(), TASK_FAILURE);
                    }
                    // The outer scope's decode, issued while the inner scope is open.
                    outer_tasks.decode_jpeg(input, written_outer, PixelFormat::Nv12)?;
                    Ok(())
                });
                assert_eq!(inner.is_err(), !fail_outer, "{inner:?}");
                Ok(())
            });
            assert_eq!(outcome.is_err(), fail_outer, "{outcome:?}");
            if fail_outer {
                assert_eq!(outer_out.layout(), None);
                assert_eq!(outer_first.layout(), None);
                assert_eq!(inner_out.layout(), Some(target()));
            } else {
                assert_eq!(outer_out.layout(), None);
                assert_eq!(outer_first.layout(), None);
                assert_eq!(inner_out.layout(), None);
            }
        }
    }
    ends_clean(session);
}

/// A decode whose task succeeded keeps its layout when the body then returns an error of
/// its own, and when a later task of the scope, on another frame, is refused before any
/// call: only a failed synchronisation says a task may have failed.
#[test]
fn dv6_a_body_error_after_successful_tasks_keeps_their_layouts() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        let mut small = ctx.alloc_frame(&media, 64).unwrap();
        input.load(&jpeg(128, 96, false)).unwrap();
        let outcome = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let picture = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            // Refused before any call: the frame is too small for the target.
            tasks.resize(picture, &mut small, target())?;
            Ok(())
        });
        assert!(
            matches!(outcome, Err(Error::PictureLayout(_))),
            "{outcome:?}"
        );
        assert!(decoded.layout().is_some(), "its task succeeded");
        assert_eq!(small.layout(), None, "never written");
        let layout = decoded.layout().unwrap();
        let mut bytes = vec![0u8; layout.byte_len()];
        ctx.copy(&mut bytes[..], &decoded).unwrap();
        assert_luma(&bytes, 128, 96, layout.width_stride());
    }
    ends_clean(session);
}

/// The body synchronises its stream itself (`AsyncScope::synchronize`) and sees the
/// decode's failure there; the scope's own synchronisation then succeeds (the runtime
/// reports a task's error once). Whether the body goes on (`Ok`) or returns the error, the
/// frame whose task failed must report no picture.
#[test]
fn dv6_a_failure_seen_by_the_bodys_own_synchronisation_still_forgets_the_layout() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        input.load(&jpeg(128, 96, false)).unwrap();
        for propagate in [true, false] {
            session
                .sim
                .inject_task_failure(stream.as_raw(), TASK_FAILURE);
            let mut seen = None;
            let outcome = ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                let synchronized = scope.synchronize(&stream);
                seen = Some(synchronized.is_err());
                if propagate {
                    synchronized?;
                }
                Ok(())
            });
            assert_eq!(seen, Some(true), "the body saw the task's failure");
            assert_eq!(outcome.is_err(), propagate, "{outcome:?}");
            assert_eq!(
                decoded.layout(),
                None,
                "propagate: {propagate}: the layout of a decode that failed"
            );
        }
    }
    ends_clean(session);
}

/// An outer scope's decode fails; an inner scope resizes it on the same stream, so the
/// inner scope's synchronisation sees the failure (its output is forgotten, its error
/// returned) and the outer one's then succeeds. The body returns the inner scope's error,
/// so the outer scope returns it too: the decoded frame must report no picture.
#[test]
fn dv6_an_outer_decode_failure_seen_by_an_inner_scope_forgets_the_outer_layout() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut vpc = ctx.create_media_channel::<Vpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, target().byte_len()).unwrap();
        input.load(&jpeg(128, 96, false)).unwrap();
        session
            .sim
            .inject_task_failure(stream.as_raw(), TASK_FAILURE);
        let outcome = ctx.async_scope(|outer| {
            let tasks = outer.media(&mut channel, &stream)?;
            let picture = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            ctx.async_scope(|inner| {
                let tasks = inner.media(&mut vpc, &stream)?;
                tasks.resize(picture, &mut resized, target())?;
                Ok(())
            })?;
            Ok(())
        });
        assert!(outcome.is_err(), "the outer scope returns the task's error");
        assert_eq!(resized.layout(), None, "the inner scope forgot its output");
        assert_eq!(
            decoded.layout(),
            None,
            "the layout of a decode that failed, in a scope that returned its error"
        );
    }
    ends_clean(session);
}
