//! Decode and resize in async scopes (DV3-DV6, DV8-DV11): results right, zero checker
//! findings, nothing left alive, nothing created per frame.

use crate::common::{LUMA, assert_luma, ends_clean, jpeg};
use crate::support;

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{Error, FrameLayout, JpegdVpc, MallocPolicy, PixelFormat, Vpc};
use support::sim::Session;

/// A JPEG decoded (NV12, DV8) and resized (DV9) in one scope on one stream; the frames read
/// back after the scope have the fixture's colour, in the layouts the typed layer predicted.
#[test]
fn dv6_dv8_dv9_a_jpeg_decoded_and_resized_in_a_scope_has_its_colour() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 512 * 512 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 224 * 224 * 3 / 2).unwrap();
        // Odd sizes: rounded down to even by the decode (DV8).
        let header = input.load(&jpeg(321, 241, false)).unwrap();
        assert_eq!((header.width(), header.height()), (321, 241));
        let target = FrameLayout::resized(224, 224, PixelFormat::Nv12).unwrap();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            assert_eq!(
                (frame.layout().width(), frame.layout().height()),
                (320, 240)
            );
            assert_eq!(
                (
                    frame.layout().width_stride(),
                    frame.layout().height_stride()
                ),
                (320, 240)
            );
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        let layout = decoded.layout().unwrap();
        let mut bytes = vec![0u8; layout.byte_len()];
        ctx.copy(&mut bytes[..], &decoded).unwrap();
        assert_luma(&bytes, 320, 240, layout.width_stride());
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 224, 224, 224);
        channel.destroy().unwrap();
    }
    ends_clean(session);
}

/// The steady state: the same token, channel, buffers and frames for every frame; each
/// scope issues a decode and a resize and creates nothing (DV3: a channel serves any number
/// of tasks; DV4: one stream per scope).
#[test]
fn dv3_dv4_frames_in_a_loop_create_nothing() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 256 * 256 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
        let target = FrameLayout::resized(64, 64, PixelFormat::Nv21).unwrap();
        session.sim.reset_call_counts();
        for (n, side) in [64u16, 96, 96, 200, 64].into_iter().enumerate() {
            input.load(&jpeg(side, side, false)).unwrap();
            ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                tasks.resize(frame, &mut resized, target)?;
                Ok(())
            })
            .unwrap();
            let mut small = vec![0u8; target.byte_len()];
            ctx.copy(&mut small[..], &resized).unwrap();
            assert_luma(&small, 64, 64, 64);
            assert_eq!(
                session.sim.call_count("acldvppJpegDecodeAsync"),
                n as u64 + 1
            );
        }
        for call in [
            "acldvppCreatePicDesc",
            "acldvppMalloc",
            "acldvppCreateChannel",
            "acldvppCreateResizeConfig",
        ] {
            assert_eq!(session.sim.call_count(call), 0, "{call} in the loop");
        }
    }
    ends_clean(session);
}

/// A decode on one channel and stream, its frame resized on another channel and stream in
/// the same scope: the resize is joined after the decode (E2, E3, DV6), and reads the
/// decoded picture.
#[test]
fn e3_dv6_a_decode_on_one_stream_is_joined_before_a_resize_on_another() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let (first, second) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
        let mut decoder = ctx
            .create_media_channel::<ascend_typestate::Jpegd>(&media)
            .unwrap();
        let mut resizer = ctx.create_media_channel::<Vpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 512 * 512 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 96 * 96 * 3 / 2).unwrap();
        input.load(&jpeg(500, 400, false)).unwrap();
        let target = FrameLayout::resized(96, 96, PixelFormat::Nv12).unwrap();
        ctx.async_scope(|scope| {
            let decode = scope.media(&mut decoder, &first)?;
            let resize = scope.media(&mut resizer, &second)?;
            let frame = decode.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            resize.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        let mut small = vec![0u8; target.byte_len()];
        ctx.copy(&mut small[..], &resized).unwrap();
        assert_luma(&small, 96, 96, 96);
    }
    ends_clean(session);
}

fn identity_model(name: &str, bytes: usize) -> std::path::PathBuf {
    let path = support::scratch_dir(&format!("typed_media_{name}")).join("m.model");
    SimModel::new(SimDtype::U8, &[bytes], SimDtype::F32, &[bytes])
        .write(&path)
        .expect("write the model file");
    path
}

/// The resized frame is the model's input without a copy (DV11, MD9), ordered after the
/// resize; a frame of another size is refused before any call (MD10).
#[test]
fn dv11_a_resized_frame_is_a_model_input_without_a_copy() {
    let target = FrameLayout::resized(224, 224, PixelFormat::Nv12).unwrap();
    let path = identity_model("dv11", target.byte_len());
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 512 * 512 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 224 * 224 * 3 / 2).unwrap();
        let mut other = ctx.alloc_frame(&media, 224 * 224 * 3 / 2).unwrap();
        let mut scores = ctx
            .alloc::<f32>(target.byte_len(), MallocPolicy::HugeFirst)
            .unwrap();
        let mut first = vec![0f32; 4];
        input.load(&jpeg(300, 300, false)).unwrap();
        let small = FrameLayout::resized(112, 112, PixelFormat::Nv12).unwrap();
        session.sim.reset_call_counts();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            let resized = tasks.resize(frame, &mut resized, target)?;
            let run = scope.execute(
                &stream,
                &mut model,
                [resized.into()],
                [(&mut scores).into()],
            )?;
            let head = run.output::<f32>(0)?;
            let _ = head;
            Ok(())
        })
        .unwrap();
        ctx.copy(&mut first[..], &scores.slice(..4).unwrap())
            .unwrap();
        for &value in &first {
            assert!((value - f32::from(LUMA)).abs() <= 3.0, "{value}");
        }
        // Another size: refused before the execution is issued (MD10, DV11).
        let refused = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            let resized = tasks.resize(frame, &mut other, small)?;
            scope.execute(
                &stream,
                &mut model,
                [resized.into()],
                [(&mut scores).into()],
            )?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::ModelSizeMismatch { .. })),
            "{refused:?}"
        );
        assert_eq!(session.sim.call_count("aclmdlExecuteAsync"), 1);
        // Media memory filled by a copy is an input too (DV11).
        let mut buffer = ctx.alloc_media(&media, target.byte_len()).unwrap();
        ctx.copy(&mut buffer, &vec![7u8; target.byte_len()][..])
            .unwrap();
        ctx.async_scope(|scope| {
            scope.execute(
                &stream,
                &mut model,
                [(&buffer).into()],
                [(&mut scores).into()],
            )?;
            Ok(())
        })
        .unwrap();
        ctx.copy(&mut first[..], &scores.slice(..4).unwrap())
            .unwrap();
        assert_eq!(first, [7.0; 4]);
        model.unload().unwrap();
    }
    ends_clean(session);
}
