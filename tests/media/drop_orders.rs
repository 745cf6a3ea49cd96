//! The ways media work ends with tasks still pending, and every order in which the handles
//! may then be dropped (DV3, DV10, M1): a scope body that returns an error or panics right
//! after issuing a decode and a resize is synchronised before its borrows end; the stream,
//! channel, JPEG buffer and frames then drop in each of their 120 orders, the token and the
//! context last (the borrows make any other order a compile error). Zero findings, nothing
//! alive.

use crate::common::{ends_clean, jpeg};
use crate::support;

use ascend_typestate::{Error, FrameLayout, JpegdVpc, PixelFormat};
use support::sim::Session;

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

/// How the scope with the pending work ends.
#[derive(Clone, Copy, Debug)]
enum End {
    Error,
    Panic,
}

fn run(session: &Session, order: &[usize], end: End, bytes: &[u8]) {
    let ctx = session.default_device(0);
    let media = session.acl().media_v1().unwrap();
    let stream = ctx.create_stream().unwrap();
    let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
    let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
    let mut decoded = ctx.alloc_frame(&media, 512 * 512 * 3 / 2).unwrap();
    let mut resized = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
    input.load(bytes).unwrap();
    let target = FrameLayout::resized(64, 64, PixelFormat::Nv12).unwrap();
    let mut body = || {
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            match end {
                End::Error => Err::<(), _>(Error::InvalidArgument("the body's own error")),
                End::Panic => panic!("the body panics with media work pending"),
            }
        })
    };
    match end {
        End::Error => assert!(body().is_err()),
        End::Panic => {
            assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err())
        }
    }
    let mut stream = Some(stream);
    let mut channel = Some(channel);
    let mut input = Some(input);
    let mut decoded = Some(decoded);
    let mut resized = Some(resized);
    for &which in order {
        match which {
            0 => drop(stream.take()),
            1 => drop(channel.take()),
            2 => drop(input.take()),
            3 => drop(decoded.take()),
            _ => drop(resized.take()),
        }
    }
    // The token, then the context, drop last (declared first): they are borrowed.
}

#[test]
fn dv10_media_handles_in_every_order_after_pending_work() {
    support::quiet_panics(&["the body panics with media work pending"]);
    let bytes = jpeg(400, 300, false);
    let errors = support::DropErrors::capture();
    let session = Session::start();
    for (n, order) in permutations(5).into_iter().enumerate() {
        let end = if n % 2 == 0 { End::Error } else { End::Panic };
        run(&session, &order, end, &bytes);
        assert_eq!(session.sim.live_objects(), 0, "{order:?} {end:?}");
    }
    let reports = errors.take();
    assert!(reports.is_empty(), "{reports:#?}");
    ends_clean(session);
}

/// A model whose kept datasets describe a frame (DV11, MD5): the frame freed before the
/// model, or the model unloaded before the frame, both clean.
#[test]
fn dv11_md5_a_model_and_its_input_frame_in_both_orders() {
    use ascend_typestate::MallocPolicy;
    use ascend_typestate::simulator::{SimDtype, SimModel};
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
    let path = support::scratch_dir("typed_media_drop_model").join("m.model");
    SimModel::new(
        SimDtype::U8,
        &[target.byte_len()],
        SimDtype::F32,
        &[target.byte_len()],
    )
    .write(&path)
    .unwrap();
    let bytes = jpeg(64, 64, false);
    let session = Session::start();
    for frame_first in [true, false] {
        {
            let ctx = session.default_device(0);
            let media = session.acl().media_v1().unwrap();
            let stream = ctx.create_stream().unwrap();
            let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
            let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
            let mut decoded = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
            let mut resized = ctx.alloc_frame(&media, target.byte_len()).unwrap();
            let mut model = ctx.load_model(&path).unwrap();
            let mut out = ctx
                .alloc::<f32>(target.byte_len(), MallocPolicy::HugeFirst)
                .unwrap();
            input.load(&bytes).unwrap();
            ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                let picture = tasks.resize(frame, &mut resized, target)?;
                scope.execute(&stream, &mut model, [picture.into()], [(&mut out).into()])?;
                Ok(())
            })
            .unwrap();
            if frame_first {
                drop(resized);
                drop(model);
            } else {
                drop(model);
                drop(resized);
            }
        }
        assert_eq!(session.sim.live_objects(), 0, "frame first: {frame_first}");
    }
    ends_clean(session);
}
