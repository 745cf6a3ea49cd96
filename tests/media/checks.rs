//! What the typed media layer refuses before any runtime call (DV1, DV7, DV8, DV9): typed
//! errors, nothing issued, no finding.

use crate::common::{ends_clean, jpeg};
use crate::support;

use ascend_typestate::{Error, FrameLayout, JpegHeader, JpegSampling, JpegdVpc, PixelFormat};
use support::sim::Session;

/// One media token per process (DV1): a second is refused while the first lives, and
/// allowed once it is dropped.
#[test]
fn dv1_one_media_token_per_process() {
    let session = Session::start();
    {
        let first = session.acl().media_v1().unwrap();
        assert!(matches!(
            session.acl().media_v1(),
            Err(Error::MediaApiTaken)
        ));
        drop(first);
        let again = session.acl().media_v1().unwrap();
        drop(again);
    }
    ends_clean(session);
}

/// Progressive, arithmetic-coded, lossless, 12-bit, 4:1:1, too small or too large JPEGs, and
/// bytes that are no JPEG, are refused from the header (DV7), before any runtime call.
#[test]
fn dv7_unsupported_jpegs_are_typed_errors_before_any_call() {
    let baseline = jpeg(64, 48, false);
    let header = JpegHeader::parse(&baseline).unwrap();
    assert_eq!((header.width(), header.height()), (64, 48));
    assert_eq!(header.sampling(), JpegSampling::Yuv420);
    // A frame header patched: its marker (SOFn) or a field.
    let sof = baseline
        .windows(2)
        .position(|w| w == [0xFF, 0xC0])
        .expect("a baseline frame");
    let patched = |at: usize, value: u8| {
        let mut bytes = baseline.clone();
        bytes[sof + at] = value;
        bytes
    };
    // One component (gray) with luma factor byte `f`, the frame's length unchanged.
    let gray_factors = |f: u8| {
        let mut bytes = patched(9, 1);
        bytes[sof + 11] = f;
        bytes
    };
    // A one-component frame header of 6 bytes: its specification left out.
    let mut cut_frame = baseline[..sof].to_vec();
    cut_frame.extend_from_slice(&[0xFF, 0xC0, 0, 8, 8, 0, 48, 0, 64, 1]);
    cut_frame.extend_from_slice(&baseline[sof + 19..]);
    // `segment` inserted before the frame header.
    let twice = |segment: &[u8]| {
        let mut bytes = baseline[..sof].to_vec();
        bytes.extend_from_slice(segment);
        bytes.extend_from_slice(&baseline[sof..]);
        bytes
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("progressive", jpeg(64, 48, true)),
        ("arithmetic", patched(1, 0xC9)),
        ("lossless", patched(1, 0xC3)),
        ("hierarchical", patched(1, 0xC5)),
        ("12-bit", patched(4, 12)),
        ("4:1:1", patched(11, 0x41)),
        ("too small", jpeg(16, 48, false)),
        ("not a JPEG", b"GIF89a".to_vec()),
        ("cut off", baseline[..sof + 6].to_vec()),
        ("empty", Vec::new()),
        // What the runtime's reader refuses (100000): found by the fuzz target jpeg_decode.
        ("gray, factors 3x10", gray_factors(0x3A)),
        ("gray, factors 0x0", gray_factors(0x00)),
        ("no component specification", cut_frame),
        ("a second frame header", twice(&baseline[sof..sof + 19])),
        ("a second SOI", twice(&[0xFF, 0xD8])),
        ("a stuffed byte", twice(&[0xFF, 0x00, 0x00, 0x02])),
    ];
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        session.sim.reset_call_counts();
        for (what, bytes) in &cases {
            let parsed = JpegHeader::parse(bytes);
            assert!(
                matches!(parsed, Err(Error::UnsupportedJpeg(_))),
                "{what}: {parsed:?}"
            );
            let loaded = input.load(bytes);
            assert!(
                matches!(loaded, Err(Error::UnsupportedJpeg(_))),
                "{what}: {loaded:?}"
            );
            assert_eq!(input.header(), None, "{what}");
        }
        for call in ["acldvppJpegGetImageInfoV2", "aclrtMemcpy"] {
            assert_eq!(session.sim.call_count(call), 0, "{call}");
        }
        // A JPEG longer than its buffer is refused too.
        let mut tiny = ctx.alloc_jpeg(&media, 16).unwrap();
        assert!(matches!(
            tiny.load(&baseline),
            Err(Error::InvalidArgument(_))
        ));
    }
    ends_clean(session);
}

/// Resize outputs outside the board's rows (DV9), and frames too small for a decode (DV8)
/// or a resize, are typed errors before any call; a decode of an empty buffer is refused.
#[test]
fn dv8_dv9_layouts_are_checked_before_any_call() {
    for (width, height) in [(8, 64), (64, 4), (4098, 64), (64, 8194), (65, 64), (64, 33)] {
        let refused = FrameLayout::resized(width, height, PixelFormat::Nv12);
        assert!(
            matches!(refused, Err(Error::PictureLayout(_))),
            "{width}x{height}: {refused:?}"
        );
    }
    let ok = FrameLayout::resized(10, 6, PixelFormat::Nv21).unwrap();
    assert_eq!((ok.width_stride(), ok.height_stride()), (16, 6));
    assert_eq!(ok.byte_len(), 16 * 6 * 3 / 2);
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut small = ctx.alloc_frame(&media, 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        let empty = ctx.alloc_frame(&media, 1024).unwrap();
        session.sim.reset_call_counts();
        let outcome = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let before = tasks.decode_jpeg(&input, &mut small, PixelFormat::Nv12);
            assert!(
                matches!(before, Err(Error::InvalidArgument(_))),
                "{before:?}"
            );
            Ok(())
        });
        outcome.unwrap();
        input.load(&jpeg(100, 100, false)).unwrap();
        session.sim.reset_call_counts();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            // DV8: 128 x 112 x 3/2 bytes do not fit in 1024.
            let decode = tasks.decode_jpeg(&input, &mut small, PixelFormat::Nv12);
            assert!(matches!(decode, Err(Error::PictureLayout(_))), "{decode:?}");
            // DV9: an input without a picture.
            let layout = FrameLayout::resized(64, 64, PixelFormat::Nv12)?;
            let resize = tasks.resize(&empty, &mut decoded, layout);
            assert!(matches!(resize, Err(Error::PictureLayout(_))), "{resize:?}");
            Ok(())
        })
        .unwrap();
        for call in ["acldvppJpegDecodeAsync", "acldvppVpcResizeAsync"] {
            assert_eq!(session.sim.call_count(call), 0, "{call}");
        }
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            // DV8/DV9: the output frame is too small for the layout asked.
            let layout = FrameLayout::resized(64, 64, PixelFormat::Nv12)?;
            let resize = tasks.resize(frame, &mut small, layout);
            assert!(matches!(resize, Err(Error::PictureLayout(_))), "{resize:?}");
            Ok(())
        })
        .unwrap();
        assert_eq!(session.sim.call_count("acldvppVpcResizeAsync"), 0);
    }
    ends_clean(session);
}

/// A channel, a frame or a JPEG buffer of another context is refused in a scope
/// (`Error::ContextMismatch`, DV2: tasks run in the channel's context).
#[test]
fn dv2_a_channel_of_another_context_is_refused() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let other = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut foreign = other.create_media_channel::<JpegdVpc>(&media).unwrap();
        let refused = ctx.async_scope(|scope| scope.media(&mut foreign, &stream).map(drop));
        assert!(
            matches!(refused, Err(Error::ContextMismatch { .. })),
            "{refused:?}"
        );
        drop(foreign);
        drop(stream);
        drop(media);
        other.destroy().unwrap();
        ctx.destroy().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}
