//! Inputs and orders at the edges of the media layer: EXIF orientations, JPEGs that fail
//! when the task runs, frames reused with other layouts, huge or odd headers, buffers of the
//! wrong size. Each ends with no finding and nothing alive.

use crate::common::{LUMA, RGB, assert_luma, ends_clean, jpeg};
use crate::support;

use ascend_typestate::{Error, FrameLayout, JpegHeader, JpegdVpc, PixelFormat};
use support::sim::Session;

/// `bytes` with an APP1 "Exif" segment after the start-of-image marker whose orientation
/// tag (0x0112) is `orientation`.
fn with_orientation(bytes: &[u8], orientation: u16) -> Vec<u8> {
    let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
    tiff.extend_from_slice(&1u16.to_be_bytes()); // one entry
    tiff.extend_from_slice(&0x0112u16.to_be_bytes());
    tiff.extend_from_slice(&3u16.to_be_bytes()); // SHORT
    tiff.extend_from_slice(&1u32.to_be_bytes());
    tiff.extend_from_slice(&orientation.to_be_bytes());
    tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // padding, no next IFD
    let mut segment = b"Exif\0\0".to_vec();
    segment.extend_from_slice(&tiff);
    let mut out = bytes[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&u16::try_from(segment.len() + 2).unwrap().to_be_bytes());
    out.extend_from_slice(&segment);
    out.extend_from_slice(&bytes[2..]);
    out
}

/// The offset of the baseline frame header (FF C0) of `bytes`.
fn sof(bytes: &[u8]) -> usize {
    bytes
        .windows(2)
        .position(|w| w == [0xFF, 0xC0])
        .expect("a baseline frame")
}

/// EXIF orientations 5 to 8 swap the decoded picture's sides (DV7, DV8): the layout of a
/// loaded JPEG is the rotated one, a frame sized for the stored sides is refused before any
/// call when the rotated picture is larger, and the decoded frame has the colour in the
/// rotated layout. Orientations 1 to 4 keep the sides.
#[test]
fn dv7_dv8_exif_orientations_give_the_rotated_layout() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        // 64 x 200 stored: 64 x 208 rows (19 968 B); rotated 200 x 64: 256 x 64 (24 576 B).
        let stored = jpeg(64, 200, false);
        let frame_header = JpegHeader::parse(&stored).unwrap();
        let unrotated = FrameLayout::decoded(&frame_header, PixelFormat::Nv12);
        let mut small = ctx.alloc_frame(&media, unrotated.byte_len()).unwrap();
        let mut large = ctx.alloc_frame(&media, 256 * 208 * 3 / 2).unwrap();
        for orientation in 1..=8u16 {
            let bytes = with_orientation(&stored, orientation);
            // The header check reads the frame's sides; the runtime the displayed ones.
            let parsed = JpegHeader::parse(&bytes).unwrap();
            assert_eq!((parsed.width(), parsed.height()), (64, 200));
            let header = input.load(&bytes).unwrap();
            let rotated = orientation >= 5;
            let expected = if rotated { (200, 64) } else { (64, 200) };
            assert_eq!((header.width(), header.height()), expected, "{orientation}");
            let layout = FrameLayout::decoded(&header, PixelFormat::Nv12);
            let refused = ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                tasks.decode_jpeg(&input, &mut small, PixelFormat::Nv12)?;
                Ok(())
            });
            if rotated {
                assert!(
                    matches!(refused, Err(Error::PictureLayout(_))),
                    "{orientation}: {refused:?}"
                );
            } else {
                refused.unwrap();
                assert_eq!(small.layout(), Some(layout));
            }
            ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                let frame = tasks.decode_jpeg(&input, &mut large, PixelFormat::Nv12)?;
                assert_eq!(frame.layout(), layout);
                Ok(())
            })
            .unwrap();
            assert_eq!(large.layout(), Some(layout));
            let mut bytes = vec![0u8; layout.byte_len()];
            ctx.copy(&mut bytes[..], &large).unwrap();
            assert_luma(
                &bytes,
                layout.width(),
                layout.height(),
                layout.width_stride(),
            );
        }
    }
    ends_clean(session);
}

/// A decode that passes every check before the call and fails when the task runs (DV7,
/// P3b: bytes that do not decode): the scope returns the error, the frames its tasks wrote
/// report no picture (not the layouts the failed tasks were to write: it used to report
/// them), and the channel and frames serve the next JPEG. The same after a body's error or
/// a panic with a failing task pending.
#[test]
fn dv6_a_decode_failing_when_it_runs_leaves_no_layout() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 128 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        let good = jpeg(128, 96, false);
        // A first picture, so that a stale layout would show.
        input.load(&good).unwrap();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            Ok(())
        })
        .unwrap();
        assert!(decoded.layout().is_some());
        // The task fails when it runs (as bytes that do not decode do, P3b).
        session.sim.inject_task_failure(stream.as_raw(), 507_000);
        let failed = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        });
        assert!(failed.is_err(), "{failed:?}");
        assert_eq!(
            decoded.layout(),
            None,
            "a layout of a picture never written"
        );
        assert_eq!(
            resized.layout(),
            None,
            "a layout of a picture never written"
        );
        // Nothing of the failed picture reads as one.
        let mut host: Vec<u8> = Vec::new();
        ctx.copy(&mut host[..], &decoded).unwrap();
        // A body's error, then a panic, with a failing task pending: the failed
        // synchronisation is reported (the body's error or the panic comes first).
        let reports = support::DropErrors::capture();
        support::quiet_panics(&["the body panics with a failing task pending"]);
        for panics in [false, true] {
            input.load(&good).unwrap();
            session.sim.inject_task_failure(stream.as_raw(), 507_000);
            let mut body = || {
                ctx.async_scope(|scope| {
                    let tasks = scope.media(&mut channel, &stream)?;
                    let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                    tasks.resize(frame, &mut resized, target)?;
                    assert!(!panics, "the body panics with a failing task pending");
                    Err::<(), _>(Error::InvalidArgument("the body's own error"))
                })
            };
            if panics {
                let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
                assert!(caught.is_err());
            } else {
                assert!(matches!(body(), Err(Error::InvalidArgument(_))));
            }
            assert_eq!(decoded.layout(), None, "panics: {panics}");
            assert_eq!(resized.layout(), None, "panics: {panics}");
        }
        let reported = reports.take();
        assert_eq!(reported.len(), 2, "{reported:#?}");
        assert!(
            reported.iter().all(|r| r.contains("507000")),
            "{reported:#?}"
        );
        drop(reports);
        // Both serve again.
        input.load(&good).unwrap();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        let layout = resized.layout().unwrap();
        let mut bytes = vec![0u8; layout.byte_len()];
        ctx.copy(&mut bytes[..], &resized).unwrap();
        assert_luma(&bytes, 32, 32, layout.width_stride());
    }
    ends_clean(session);
}

/// One frame is the input of resizes in several scopes with other layouts in between
/// (DV6, DV9): the input description follows the frame's picture, twice in one scope too.
#[test]
fn dv9_a_resize_input_reused_across_scopes_with_other_layouts() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 256 * 256 * 3 / 2).unwrap();
        let mut a = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
        let mut b = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
        let target = FrameLayout::resized(48, 32, PixelFormat::Nv12).unwrap();
        for (width, height) in [(64, 48), (250, 34), (64, 48), (34, 250), (99, 77)] {
            input.load(&jpeg(width, height, false)).unwrap();
            ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
                Ok(())
            })
            .unwrap();
            let from = decoded.layout().unwrap();
            assert_eq!(
                (from.width(), from.height()),
                (u32::from(width) & !1, u32::from(height) & !1)
            );
            ctx.async_scope(|scope| {
                let tasks = scope.media(&mut channel, &stream)?;
                tasks.resize(&decoded, &mut a, target)?;
                tasks.resize(&decoded, &mut b, target)?;
                Ok(())
            })
            .unwrap();
            for frame in [&a, &b] {
                let mut bytes = vec![0u8; target.byte_len()];
                ctx.copy(&mut bytes[..], frame).unwrap();
                assert_luma(&bytes, 48, 32, 48);
            }
        }
    }
    ends_clean(session);
}

/// Headers at the size limits and of four components (CMYK): 16384 x 16384 passes the
/// header check and a frame too small for it is refused before any call; 16385 and CMYK are
/// refused from the header (DV7, DV8).
#[test]
fn dv7_dv8_huge_and_cmyk_headers() {
    let baseline = jpeg(64, 48, false);
    let at = sof(&baseline);
    let sized = |width: u16, height: u16| {
        let mut bytes = baseline.clone();
        bytes[at + 5..at + 7].copy_from_slice(&height.to_be_bytes());
        bytes[at + 7..at + 9].copy_from_slice(&width.to_be_bytes());
        bytes
    };
    let mut cmyk = baseline.clone();
    cmyk[at + 9] = 4;
    assert!(matches!(
        JpegHeader::parse(&cmyk),
        Err(Error::UnsupportedJpeg(_))
    ));
    for (width, height) in [(16385, 64), (64, 16385), (31, 64)] {
        assert!(
            matches!(
                JpegHeader::parse(&sized(width, height)),
                Err(Error::UnsupportedJpeg(_))
            ),
            "{width}x{height}"
        );
    }
    let huge = sized(16384, 16384);
    let header = JpegHeader::parse(&huge).unwrap();
    assert_eq!((header.width(), header.height()), (16384, 16384));
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut frame = ctx.alloc_frame(&media, 1 << 20).unwrap();
        assert!(matches!(input.load(&cmyk), Err(Error::UnsupportedJpeg(_))));
        input.load(&huge).unwrap();
        session.sim.reset_call_counts();
        let refused = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            tasks.decode_jpeg(&input, &mut frame, PixelFormat::Nv12)?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::PictureLayout(_))),
            "{refused:?}"
        );
        assert_eq!(session.sim.call_count("acldvppJpegDecodeAsync"), 0);
        assert_eq!(frame.layout(), None);
    }
    ends_clean(session);
}

/// A failed load forgets the JPEG loaded before (DV7): a decode of the buffer is then
/// refused before any call; a buffer of 0 bytes is refused; a file exactly the capacity
/// loads.
#[test]
fn dv7_a_failed_load_forgets_the_previous_jpeg() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        assert!(matches!(
            ctx.alloc_jpeg(&media, 0),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            ctx.alloc_frame(&media, 0),
            Err(Error::InvalidArgument(_))
        ));
        let small = jpeg(32, 32, false);
        let mut input = ctx.alloc_jpeg(&media, small.len()).unwrap();
        let mut frame = ctx.alloc_frame(&media, 64 * 32 * 3 / 2).unwrap();
        input.load(&small).unwrap();
        assert!(input.header().is_some());
        assert!(matches!(
            input.load(&jpeg(64, 64, false)),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(input.header(), None);
        let refused = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            tasks.decode_jpeg(&input, &mut frame, PixelFormat::Nv12)?;
            Ok(())
        });
        assert!(
            matches!(refused, Err(Error::InvalidArgument(_))),
            "{refused:?}"
        );
        assert_eq!(frame.layout(), None);
    }
    ends_clean(session);
}

/// The fixture colour is used by the luma checks above.
#[test]
fn fixture_colour_is_the_luma_checked() {
    let [r, g, b] = RGB.map(f64::from);
    let luma = 0.299 * r + 0.587 * g + 0.114 * b;
    assert!((luma - f64::from(LUMA)).abs() < 1.0);
}

/// Every sampling JPEGD decodes (DV7), odd sizes included, decodes to the fixture's luma
/// (gray: its gray, chroma 0x80, DV8); 4:1:1, 4:4:1 and 4:1:0 are refused from the header.
#[test]
fn dv7_dv8_every_sampling_decodes_and_others_are_refused() {
    use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
    let encode = |width: u16, height: u16, sampling: Option<SamplingFactor>| {
        let mut out = Vec::new();
        let mut encoder = Encoder::new(&mut out, 95);
        match sampling {
            Some(sampling) => {
                encoder.set_sampling_factor(sampling);
                let pixels: Vec<u8> = (0..usize::from(width) * usize::from(height))
                    .flat_map(|_| RGB)
                    .collect();
                encoder.encode(&pixels, width, height, ColorType::Rgb)
            }
            None => {
                let pixels = vec![LUMA; usize::from(width) * usize::from(height)];
                encoder.encode(&pixels, width, height, ColorType::Luma)
            }
        }
        .expect("encode the fixture");
        out
    };
    for refused in [
        SamplingFactor::R_4_1_1,
        SamplingFactor::R_4_4_1,
        SamplingFactor::R_4_1_0,
    ] {
        let bytes = encode(64, 64, Some(refused));
        assert!(
            matches!(JpegHeader::parse(&bytes), Err(Error::UnsupportedJpeg(_))),
            "{refused:?}"
        );
    }
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap();
        for sampling in [
            Some(SamplingFactor::R_4_4_4),
            Some(SamplingFactor::R_4_2_2),
            Some(SamplingFactor::R_4_2_0),
            Some(SamplingFactor::R_4_4_0),
            None,
        ] {
            for (width, height) in [(66, 50), (67, 51), (33, 33)] {
                input.load(&encode(width, height, sampling)).unwrap();
                ctx.async_scope(|scope| {
                    let tasks = scope.media(&mut channel, &stream)?;
                    tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv21)?;
                    Ok(())
                })
                .unwrap();
                let layout = decoded.layout().unwrap();
                assert_eq!(
                    (layout.width(), layout.height()),
                    (u32::from(width) & !1, u32::from(height) & !1)
                );
                let mut bytes = vec![0u8; layout.byte_len()];
                ctx.copy(&mut bytes[..], &decoded).unwrap();
                assert_luma(
                    &bytes,
                    layout.width(),
                    layout.height(),
                    layout.width_stride(),
                );
                if sampling.is_none() {
                    let plane = (layout.width_stride() * layout.height_stride()) as usize;
                    for row in 0..layout.height() as usize / 2 {
                        let at = plane + row * layout.width_stride() as usize;
                        let chroma = &bytes[at..at + layout.width() as usize];
                        assert!(chroma.iter().all(|&c| c == 0x80), "{sampling:?}");
                    }
                }
            }
        }
    }
    ends_clean(session);
}

/// A JPEG buffer, a decode output, a resize input or output, or a stream of another
/// context is refused in a scope before any call (`Error::ContextMismatch`, DV2; a stream
/// of another device `Error::DeviceMismatch`), on one device and across devices.
#[test]
fn dv2_media_memory_of_another_context_is_refused() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let device1 = session.acl().set_device(1).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        let bytes = jpeg(64, 64, false);
        input.load(&bytes).unwrap();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            Ok(())
        })
        .unwrap();
        for other in [
            device.create_context().unwrap(),
            device1.create_context().unwrap(),
        ] {
            let other_stream = other.create_stream().unwrap();
            let mut other_input = other.alloc_jpeg(&media, 64 * 1024).unwrap();
            let mut other_frame = other.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
            other_input.load(&bytes).unwrap();
            session.sim.reset_call_counts();
            let mismatch = |result: ascend_typestate::Result<()>, what: &str| {
                assert!(
                    matches!(
                        result,
                        Err(Error::ContextMismatch { .. } | Error::DeviceMismatch { .. })
                    ),
                    "{what}: {result:?}"
                );
            };
            mismatch(
                ctx.async_scope(|scope| scope.media(&mut channel, &other_stream).map(drop)),
                "a stream",
            );
            mismatch(
                ctx.async_scope(|scope| {
                    let tasks = scope.media(&mut channel, &stream)?;
                    tasks.decode_jpeg(&other_input, &mut resized, PixelFormat::Nv12)?;
                    Ok(())
                }),
                "a JPEG buffer",
            );
            mismatch(
                ctx.async_scope(|scope| {
                    let tasks = scope.media(&mut channel, &stream)?;
                    tasks.decode_jpeg(&input, &mut other_frame, PixelFormat::Nv12)?;
                    Ok(())
                }),
                "a decode output",
            );
            assert_eq!(other_frame.layout(), None);
            // `other_frame` holds no picture: write one in its own context first.
            let mut other_channel = other.create_media_channel::<JpegdVpc>(&media).unwrap();
            other
                .async_scope(|scope| {
                    let tasks = scope.media(&mut other_channel, &other_stream)?;
                    tasks.decode_jpeg(&other_input, &mut other_frame, PixelFormat::Nv12)?;
                    Ok(())
                })
                .unwrap();
            session.sim.reset_call_counts();
            mismatch(
                ctx.async_scope(|scope| {
                    let tasks = scope.media(&mut channel, &stream)?;
                    tasks.resize(&other_frame, &mut resized, target)?;
                    Ok(())
                }),
                "a resize input",
            );
            mismatch(
                ctx.async_scope(|scope| {
                    let tasks = scope.media(&mut channel, &stream)?;
                    tasks.resize(&decoded, &mut other_frame, target)?;
                    Ok(())
                }),
                "a resize output",
            );
            for call in ["acldvppJpegDecodeAsync", "acldvppVpcResizeAsync"] {
                assert_eq!(session.sim.call_count(call), 0, "{call}");
            }
            assert!(other_frame.layout().is_some(), "a refused resize keeps it");
            drop((other_channel, other_frame, other_input, other_stream));
            other.destroy().unwrap();
        }
        drop((channel, input, decoded, resized, stream));
        ctx.destroy().unwrap();
        device1.reset().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// Media memory as a model input of the wrong size or place (DV11, MD10): a frame holding
/// no picture (never written, or its task failed), media memory of another length and a
/// frame of another device are refused before the execution is issued.
#[test]
fn dv11_frames_without_a_picture_or_elsewhere_are_refused_as_model_inputs() {
    use ascend_typestate::MallocPolicy;
    use ascend_typestate::simulator::{SimDtype, SimModel};
    let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
    let path = support::scratch_dir("typed_media_dv11_refused").join("m.model");
    SimModel::new(
        SimDtype::U8,
        &[target.byte_len()],
        SimDtype::F32,
        &[target.byte_len()],
    )
    .write(&path)
    .expect("write the model file");
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let device1 = session.acl().set_device(1).unwrap();
        let ctx = device.create_context().unwrap();
        let ctx1 = device1.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, target.byte_len()).unwrap();
        let elsewhere = ctx1.alloc_frame(&media, target.byte_len()).unwrap();
        let longer = ctx.alloc_media(&media, target.byte_len() + 1).unwrap();
        let mut scores = ctx
            .alloc::<f32>(target.byte_len(), MallocPolicy::HugeFirst)
            .unwrap();
        input.load(&jpeg(64, 64, false)).unwrap();
        session.sim.inject_task_failure(stream.as_raw(), 507_000);
        let reports = support::DropErrors::capture();
        let failed = ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        });
        assert!(failed.is_err());
        assert!(reports.take().is_empty());
        drop(reports);
        session.sim.reset_call_counts();
        let mut execute = |input: ascend_typestate::ModelInput<'_>| {
            ctx.async_scope(|scope| {
                scope.execute(&stream, &mut model, [input], [(&mut scores).into()])?;
                Ok(())
            })
        };
        for (what, refused) in [
            ("a frame whose resize failed", execute((&resized).into())),
            ("a frame never written", execute((&elsewhere).into())),
            ("media memory of another length", execute((&longer).into())),
        ] {
            assert!(
                matches!(
                    refused,
                    Err(Error::ModelSizeMismatch { .. } | Error::DeviceMismatch { .. })
                ),
                "{what}: {refused:?}"
            );
        }
        assert_eq!(session.sim.call_count("aclmdlExecuteAsync"), 0);
        model.unload().unwrap();
        drop((
            elsewhere, longer, channel, input, decoded, resized, scores, stream,
        ));
        ctx1.destroy().unwrap();
        ctx.destroy().unwrap();
        device1.reset().unwrap();
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// Channels, frames and JPEG buffers of two contexts used from two threads at once, one
/// channel per thread (DV4), with one token shared by reference (DV1); then the channel
/// and the frames of each context moved to the other thread for a second round. No
/// finding.
#[test]
fn dv1_dv4_two_threads_two_channels_one_token() {
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let media = session.acl().media_v1().unwrap();
        let contexts = [
            device.create_context().unwrap(),
            device.create_context().unwrap(),
        ];
        let bytes = jpeg(96, 64, false);
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        let mut sets: Vec<_> = contexts
            .iter()
            .enumerate()
            .map(|(which, ctx)| {
                let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
                input.load(&bytes).unwrap();
                (
                    which,
                    ctx.create_media_channel::<JpegdVpc>(&media).unwrap(),
                    input,
                    ctx.alloc_frame(&media, 128 * 64 * 3 / 2).unwrap(),
                    ctx.alloc_frame(&media, target.byte_len()).unwrap(),
                )
            })
            .collect();
        for round in 0..2 {
            if round == 1 {
                sets.reverse();
            }
            let contexts = &contexts;
            std::thread::scope(|threads| {
                for (which, channel, input, decoded, resized) in sets.iter_mut() {
                    threads.spawn(move || {
                        let ctx = &contexts[*which];
                        let stream = ctx.create_stream().unwrap();
                        for _ in 0..8 {
                            ctx.async_scope(|scope| {
                                let tasks = scope.media(channel, &stream)?;
                                let frame = tasks.decode_jpeg(input, decoded, PixelFormat::Nv12)?;
                                tasks.resize(frame, resized, target)?;
                                Ok(())
                            })
                            .unwrap();
                        }
                    });
                }
            });
            for (which, _, _, _, resized) in &sets {
                let ctx = &contexts[*which];
                let mut small = vec![0u8; target.byte_len()];
                ctx.copy(&mut small[..], resized).unwrap();
                assert_luma(&small, 32, 32, 32);
            }
        }
        drop(sets);
        for ctx in contexts {
            ctx.destroy().unwrap();
        }
        drop(media);
        device.reset().unwrap();
    }
    ends_clean(session);
}

/// `mem::forget` of a channel, a JPEG buffer and a frame after pending work (DV3, DV10):
/// the context refuses to be destroyed under them (`Error::LiveChildren`, D3), and so does
/// `aclFinalize`; nothing is released twice, no finding; the token, dropped, is free again.
/// In a process of its own: the runtime stays initialised.
#[test]
fn dv10_forgotten_media_handles_are_kept_not_lost() {
    const NAME: &str = "dv10_forgotten_media_handles_are_kept_not_lost";
    if support::child::own_process(NAME) {
        return;
    }
    let session = Session::start();
    {
        let device = session.acl().set_device(0).unwrap();
        let ctx = device.create_context().unwrap();
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
        let mut resized = ctx.alloc_frame(&media, 32 * 32 * 3 / 2).unwrap();
        let target = FrameLayout::resized(32, 32, PixelFormat::Nv12).unwrap();
        input.load(&jpeg(64, 64, false)).unwrap();
        ctx.async_scope(|scope| {
            let tasks = scope.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            tasks.resize(frame, &mut resized, target)?;
            Ok(())
        })
        .unwrap();
        std::mem::forget(channel);
        std::mem::forget(input);
        std::mem::forget(decoded);
        drop(resized);
        drop(stream);
        let refused = ctx.try_destroy().unwrap_err();
        assert!(
            matches!(refused.error, Error::LiveChildren { .. }),
            "{:?}",
            refused.error
        );
        std::mem::forget(refused);
        std::mem::forget(device);
        drop(media);
        drop(session.acl().media_v1().unwrap());
    }
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
    std::mem::forget(session);
    support::child::passed(NAME);
}

/// A forgotten media token (DV1) keeps the media API taken for the life of the process,
/// across `aclFinalize` and a new `aclInit` too: it refuses more, never less. In a process
/// of its own: the token is process-wide.
#[test]
fn dv1_a_forgotten_token_outlives_finalize_and_init() {
    const NAME: &str = "dv1_a_forgotten_token_outlives_finalize_and_init";
    if support::child::own_process(NAME) {
        return;
    }
    let session = Session::start();
    std::mem::forget(session.acl().media_v1().unwrap());
    assert!(matches!(
        session.acl().media_v1(),
        Err(Error::MediaApiTaken)
    ));
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:#?}");
    let path = support::simulator_path();
    let acl =
        ascend_typestate::Acl::init_with(&ascend_typestate::InitOptions::default().library(&path))
            .unwrap();
    assert!(matches!(acl.media_v1(), Err(Error::MediaApiTaken)));
    acl.finalize().unwrap();
    support::child::passed(NAME);
}

/// A frame pending in an outer scope is resized in an inner scope, on another stream with
/// another channel, and on the outer scope's own stream (E2, E3, DV6): the inner task is
/// ordered after the decode; the inner scope's end leaves the outer decode's layout; no
/// finding.
#[test]
fn dv6_a_frame_pending_in_an_outer_scope_is_resized_in_an_inner_one() {
    let session = Session::start();
    {
        let ctx = session.default_device(0);
        let media = session.acl().media_v1().unwrap();
        let stream = ctx.create_stream().unwrap();
        let other = ctx.create_stream().unwrap();
        let mut channel = ctx.create_media_channel::<JpegdVpc>(&media).unwrap();
        let mut vpc = ctx
            .create_media_channel::<ascend_typestate::Vpc>(&media)
            .unwrap();
        let mut input = ctx.alloc_jpeg(&media, 64 * 1024).unwrap();
        let mut decoded = ctx.alloc_frame(&media, 512 * 512 * 3 / 2).unwrap();
        let mut a = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
        let mut b = ctx.alloc_frame(&media, 64 * 64 * 3 / 2).unwrap();
        let target = FrameLayout::resized(64, 48, PixelFormat::Nv12).unwrap();
        input.load(&jpeg(500, 400, false)).unwrap();
        ctx.async_scope(|outer| {
            let tasks = outer.media(&mut channel, &stream)?;
            let frame = tasks.decode_jpeg(&input, &mut decoded, PixelFormat::Nv12)?;
            for (on, output) in [(&other, &mut a), (&stream, &mut b)] {
                ctx.async_scope(|inner| {
                    let tasks = inner.media(&mut vpc, on)?;
                    tasks.resize(frame, output, target)?;
                    Ok(())
                })?;
            }
            Ok(())
        })
        .unwrap();
        assert!(decoded.layout().is_some());
        for frame in [&a, &b] {
            let mut bytes = vec![0u8; target.byte_len()];
            ctx.copy(&mut bytes[..], frame).unwrap();
            assert_luma(&bytes, 64, 48, 64);
        }
    }
    ends_clean(session);
}
