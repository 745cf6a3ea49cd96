//! Hostile-caller cases against the DVPP V1 functions (DV3-DV10), called through the
//! simulator's Rust library as a C caller would: odd JPEGs against a reference decoder,
//! handles of the wrong kind, stale and NULL, calls without a context or after
//! `aclFinalize`, teardown with media tasks pending, two streams writing one description,
//! a fault-injection sweep over a decode + resize program, and the seeds of the fuzz
//! target jpeg_decode. Each case runs in a process of its own (the test binary re-run for
//! that one case).

use std::ffi::{CString, c_void};
use std::process::Command;
use std::ptr::null_mut;

use ascendcl::*;

const CASE_ENV: &str = "ACLSIM_DVPP_ATTACK_CASE";

fn isolated(name: &str, body: fn()) {
    if std::env::var(CASE_ENV).as_deref() == Ok(name) {
        body();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CASE_ENV, name)
        .env("ACLSIM_QUIET", "1")
        .output()
        .expect("run the test in a child");
    assert!(
        out.status.success(),
        "{name} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn rgb(w: usize, h: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            let r = (x * 255 / w.max(1)) as u8;
            let g = (y * 255 / h.max(1)) as u8;
            let b = if (x / 16 + y / 16) % 2 == 0 { 200 } else { 40 };
            v.extend_from_slice(&[r, g, b]);
        }
    }
    v
}

/// A baseline JPEG; `restart`: a restart interval in MCUs (0: none); `app1`: an APP1 body.
fn encode_with(
    w: u16,
    h: u16,
    gray: bool,
    sampling: jpeg_encoder::SamplingFactor,
    restart: u16,
    app1: Option<Vec<u8>>,
) -> Vec<u8> {
    use jpeg_encoder::{ColorType, Encoder};
    let mut out = Vec::new();
    let mut e = Encoder::new(&mut out, 90);
    e.set_sampling_factor(sampling);
    if restart > 0 {
        e.set_restart_interval(restart);
    }
    if let Some(body) = app1 {
        e.add_app_segment(1, body).expect("APP1");
    }
    let (w_, h_) = (usize::from(w), usize::from(h));
    if gray {
        let luma: Vec<u8> = rgb(w_, h_).chunks(3).map(|p| p[0] / 2 + p[1] / 2).collect();
        e.encode(&luma, w, h, ColorType::Luma).expect("encode");
    } else {
        e.encode(&rgb(w_, h_), w, h, ColorType::Rgb)
            .expect("encode");
    }
    out
}

fn encode(w: u16, h: u16) -> Vec<u8> {
    encode_with(w, h, false, jpeg_encoder::SamplingFactor::R_4_2_0, 0, None)
}

/// An APP1 "Exif" body whose IFD0 holds one orientation entry of value `o`.
fn exif(o: u16) -> Vec<u8> {
    let mut v = b"Exif\0\0MM\0\x2a\0\0\0\x08".to_vec();
    v.extend_from_slice(&1u16.to_be_bytes());
    v.extend_from_slice(&[0x01, 0x12, 0, 3, 0, 0, 0, 1]);
    v.extend_from_slice(&o.to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    v
}

fn ok(code: i32, what: &str) {
    assert_eq!(code, 0, "{what}");
}

fn findings() -> Vec<(String, String)> {
    (0..aclsimFindingCount())
        .map(|i| {
            let mut rule = [0u8; 16];
            let mut msg = vec![0u8; 4096];
            aclsimGetFinding(
                i,
                rule.as_mut_ptr().cast(),
                rule.len(),
                msg.as_mut_ptr().cast(),
                msg.len(),
            );
            let s = |b: &[u8]| {
                let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                String::from_utf8_lossy(&b[..n]).into_owned()
            };
            (s(&rule), s(&msg))
        })
        .collect()
}

fn count(rule: &str) -> usize {
    findings().iter().filter(|f| f.0 == rule).count()
}

struct Env {
    stream: *mut c_void,
}

fn setup() -> Env {
    ok(aclInit(std::ptr::null()), "aclInit");
    ok(aclrtSetDevice(0), "set device");
    let mut ctx = null_mut();
    ok(aclrtCreateContext(&mut ctx, 0), "context");
    let mut stream = null_mut();
    ok(aclrtCreateStream(&mut stream), "stream");
    Env { stream }
}

fn media(bytes: usize) -> *mut c_void {
    let mut p = null_mut();
    ok(acldvppMalloc(&mut p, bytes), "acldvppMalloc");
    p
}

fn upload(bytes: &[u8]) -> *mut c_void {
    let p = media(bytes.len());
    // SAFETY: `p` holds at least `bytes.len()` bytes (acldvppMalloc).
    unsafe { std::ptr::copy(bytes.as_ptr(), p.cast::<u8>(), bytes.len()) };
    p
}

fn channel(mode: u32) -> *mut c_void {
    let c = acldvppCreateChannelDesc();
    assert!(!c.is_null());
    ok(acldvppSetChannelDescMode(c, mode), "mode");
    ok(acldvppCreateChannel(c), "create channel");
    c
}

fn pic(data: *mut c_void, size: u32, format: i32, w: u32, h: u32, ws: u32, hs: u32) -> *mut c_void {
    let d = acldvppCreatePicDesc();
    assert!(!d.is_null());
    ok(acldvppSetPicDescData(d, data), "data");
    ok(acldvppSetPicDescSize(d, size), "size");
    ok(acldvppSetPicDescFormat(d, format), "format");
    ok(acldvppSetPicDescWidth(d, w), "w");
    ok(acldvppSetPicDescHeight(d, h), "h");
    ok(acldvppSetPicDescWidthStride(d, ws), "ws");
    ok(acldvppSetPicDescHeightStride(d, hs), "hs");
    d
}

fn teardown(env: Env) {
    ok(aclrtDestroyStream(env.stream), "destroy stream");
    let mut ctx = null_mut();
    ok(aclrtGetCurrentContext(&mut ctx), "ctx");
    ok(aclrtDestroyContext(ctx), "destroy ctx");
    ok(aclrtResetDevice(0), "reset");
    assert_eq!(aclsimLiveObjectCount(), 0, "{:?}", findings());
    ok(aclFinalize(), "finalize");
}

/// Decodes `jpeg` to NV12 (synchronised): `Ok((bytes, [w, h, ws, hs]))`, or the code of
/// the submission or of the synchronisation.
fn decode(env: &Env, jpeg: &[u8]) -> Result<(Vec<u8>, [u32; 4]), i32> {
    let mut need = 0;
    let r = acldvppJpegPredictDecSize(jpeg.as_ptr().cast(), jpeg.len() as u32, 1, &mut need);
    if r != 0 {
        return Err(r);
    }
    let input = upload(jpeg);
    let out = media(need as usize);
    let desc = pic(out, need, 1, 0, 0, 0, 0);
    let ch = channel(2);
    let mut r = acldvppJpegDecodeAsync(ch, input, jpeg.len() as u32, desc, env.stream);
    if r == 0 {
        r = aclrtSynchronizeStream(env.stream);
    }
    let dims = [
        acldvppGetPicDescWidth(desc),
        acldvppGetPicDescHeight(desc),
        acldvppGetPicDescWidthStride(desc),
        acldvppGetPicDescHeightStride(desc),
    ];
    let mut bytes = vec![0u8; need as usize];
    // SAFETY: `out` holds `need` bytes; the task is done.
    unsafe { std::ptr::copy(out.cast::<u8>(), bytes.as_mut_ptr(), bytes.len()) };
    ok(acldvppDestroyChannel(ch), "destroy channel");
    ok(acldvppDestroyChannelDesc(ch), "destroy channel desc");
    ok(acldvppDestroyPicDesc(desc), "destroy desc");
    ok(acldvppFree(input), "free in");
    ok(acldvppFree(out), "free out");
    if r != 0 { Err(r) } else { Ok((bytes, dims)) }
}

/// The reference luma (JFIF) of `jpeg` by zune-jpeg's RGB: (w, h, luma).
fn reference_luma(jpeg: &[u8]) -> (usize, usize, Vec<f32>) {
    use zune_jpeg::JpegDecoder;
    use zune_jpeg::zune_core::bytestream::ZCursor;
    let mut d = JpegDecoder::new(ZCursor::new(jpeg));
    let px = d.decode().expect("reference decode");
    let info = d.info().expect("info");
    let (w, h) = (usize::from(info.width), usize::from(info.height));
    let cn = px.len() / (w * h);
    let y = px
        .chunks(cn)
        .map(|p| {
            if cn == 1 {
                f32::from(p[0])
            } else {
                0.299 * f32::from(p[0]) + 0.587 * f32::from(p[1]) + 0.114 * f32::from(p[2])
            }
        })
        .collect();
    (w, h, y)
}

/// The stored pixel shown at (x, y) under EXIF orientation `o` (the TIFF definition).
fn stored(o: u16, x: usize, y: usize, w: usize, h: usize) -> (usize, usize) {
    match o {
        2 => (w - 1 - x, y),
        3 => (w - 1 - x, h - 1 - y),
        4 => (x, h - 1 - y),
        5 => (y, x),
        6 => (y, h - 1 - x),
        7 => (w - 1 - y, h - 1 - x),
        8 => (w - 1 - y, x),
        _ => (x, y),
    }
}

/// Mean absolute luma difference of `nv` (dims) against the oriented reference.
fn luma_error(jpeg: &[u8], o: u16, nv: &[u8], dims: [u32; 4]) -> f32 {
    let (w, h, y) = reference_luma(jpeg);
    let [ow, oh, ws, _] = dims.map(|v| v as usize);
    let mut sum = 0f32;
    for yy in 0..oh {
        for xx in 0..ow {
            let (sx, sy) = stored(o, xx, yy, w, h);
            sum += (f32::from(nv[yy * ws + xx]) - y[sy * w + sx]).abs();
        }
    }
    sum / (ow * oh) as f32
}

// ---- Bad and odd inputs ---------------------------------------------------------------

#[test]
fn odd_sizes_samplings_and_restart_markers_decode_like_the_reference() {
    isolated(
        "odd_sizes_samplings_and_restart_markers_decode_like_the_reference",
        || {
            use jpeg_encoder::SamplingFactor as S;
            let env = setup();
            for (w, h) in [(32u16, 32u16), (33, 35), (47, 33), (101, 37)] {
                for (s, gray) in [
                    (S::R_4_4_4, false),
                    (S::R_4_2_2, false),
                    (S::R_4_2_0, false),
                    (S::R_4_4_0, false),
                    (S::R_4_2_0, true),
                ] {
                    for restart in [0u16, 1, 3] {
                        let jpeg = encode_with(w, h, gray, s, restart, None);
                        let (nv, dims) = decode(&env, &jpeg)
                            .unwrap_or_else(|e| panic!("{w}x{h} {s:?} rst {restart}: {e}"));
                        assert_eq!(
                            dims[..2],
                            [u32::from(w) & !1, u32::from(h) & !1],
                            "{w}x{h} {s:?}"
                        );
                        let e = luma_error(&jpeg, 1, &nv, dims);
                        assert!(
                            e < 1.5,
                            "{w}x{h} {s:?} gray {gray} rst {restart}: luma off by {e}"
                        );
                    }
                }
            }
            // 4:1:1 and 4:2:1 are not JPEGD's: refused at submission (148052).
            for s in [S::R_4_1_1, S::R_4_2_1] {
                let jpeg = encode_with(64, 64, false, s, 0, None);
                assert_eq!(decode(&env, &jpeg).err(), Some(148052), "{s:?}");
            }
            assert!(findings().is_empty(), "{:?}", findings());
            teardown(env);
        },
    );
}

#[test]
fn exif_orientations_rotate_the_picture_and_odd_values_are_ignored() {
    isolated(
        "exif_orientations_rotate_the_picture_and_odd_values_are_ignored",
        || {
            let env = setup();
            for o in [0u16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 255, 256, 0x0106, 65535] {
                let jpeg = encode_with(
                    64,
                    40,
                    false,
                    jpeg_encoder::SamplingFactor::R_4_2_0,
                    0,
                    Some(exif(o)),
                );
                let (mut w, mut h, mut c) = (0, 0, 0);
                ok(
                    acldvppJpegGetImageInfo(
                        jpeg.as_ptr().cast(),
                        jpeg.len() as u32,
                        &mut w,
                        &mut h,
                        &mut c,
                    ),
                    "info",
                );
                let eff = if (1..=8).contains(&o) { o } else { 1 };
                let want = if eff >= 5 { (40, 64) } else { (64, 40) };
                assert_eq!((w, h), want, "orientation {o}");
                let (nv, dims) = decode(&env, &jpeg).expect("decode");
                assert_eq!((dims[0], dims[1]), want, "orientation {o}");
                let e = luma_error(&jpeg, eff, &nv, dims);
                assert!(e < 1.5, "orientation {o}: luma off by {e}");
            }
            assert!(findings().is_empty(), "{:?}", findings());
            teardown(env);
        },
    );
}

/// A hand-made frame header: `marker`, precision, size, components (id, factors).
fn sof_only(marker: u8, precision: u8, w: u16, h: u16, comps: &[(u8, u8)]) -> Vec<u8> {
    let mut v = vec![0xFF, 0xD8, 0xFF, marker];
    v.extend_from_slice(&(8 + 3 * comps.len() as u16).to_be_bytes());
    v.push(precision);
    v.extend_from_slice(&h.to_be_bytes());
    v.extend_from_slice(&w.to_be_bytes());
    v.push(comps.len() as u8);
    for (id, f) in comps {
        v.extend_from_slice(&[*id, *f, 0]);
    }
    // A scan header and a few entropy bytes (not decodable: no tables).
    v.extend_from_slice(&[0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 63, 0, 0x12, 0x34, 0xFF, 0xD9]);
    v
}

#[test]
fn twelve_bit_cmyk_limits_and_undecodable_data_are_errors() {
    isolated(
        "twelve_bit_cmyk_limits_and_undecodable_data_are_errors",
        || {
            let env = setup();
            let d = |bytes: &[u8]| decode(&env, bytes).err();
            let three = [(1, 0x22), (2, 0x11), (3, 0x11)];
            assert_eq!(
                d(&sof_only(0xC1, 12, 64, 64, &three)),
                Some(148052),
                "12 bit"
            );
            assert_eq!(
                d(&sof_only(
                    0xC0,
                    8,
                    64,
                    64,
                    &[(1, 0x11), (2, 0x11), (3, 0x11), (4, 0x11)]
                )),
                Some(148052),
                "CMYK"
            );
            assert_eq!(
                d(&sof_only(0xC0, 8, 31, 64, &three)),
                Some(100000),
                "31 wide"
            );
            assert_eq!(
                d(&sof_only(0xC0, 8, 64, 16385, &three)),
                Some(100000),
                "16385 high"
            );
            // Accepted headers whose data does not decode: the task fails (507000).
            assert_eq!(
                d(&sof_only(0xC0, 8, 32, 32, &three)),
                Some(507000),
                "no tables"
            );
            assert_eq!(
                d(&sof_only(0xC1, 8, 32, 32, &[(1, 0x11)])),
                Some(507000),
                "SOF1"
            );
            // The largest frame, nearly no data: a failure, not an exhausted host.
            assert_eq!(
                d(&sof_only(0xC0, 8, 16384, 16384, &three)),
                Some(507000),
                "16384 x 16384"
            );
            assert!(findings().is_empty(), "{:?}", findings());
            teardown(env);
        },
    );
}

// ---- Handles -------------------------------------------------------------------------

#[test]
fn null_foreign_and_stale_handles_are_errors() {
    isolated("null_foreign_and_stale_handles_are_errors", || {
        let env = setup();
        let jpeg = encode(64, 64);
        let input = upload(&jpeg);
        let out = media(64 * 64 * 3 / 2);
        let desc = pic(out, 64 * 64 * 3 / 2, 1, 64, 64, 64, 64);
        let ch = channel(3);
        let cfg = acldvppCreateResizeConfig();
        let n = jpeg.len() as u32;
        let s = env.stream;
        // NULL everywhere.
        let null = null_mut();
        assert_ne!(acldvppJpegDecodeAsync(null, input, n, desc, s), 0);
        assert_ne!(acldvppJpegDecodeAsync(ch, null, n, desc, s), 0);
        assert_ne!(acldvppJpegDecodeAsync(ch, input, n, null, s), 0);
        assert_ne!(acldvppVpcResizeAsync(ch, null, desc, cfg, s), 0);
        assert_ne!(acldvppVpcResizeAsync(ch, desc, desc, null, s), 0);
        assert_ne!(
            acldvppJpegGetImageInfo(null, 10, null_mut(), null_mut(), null_mut()),
            0
        );
        assert_ne!(
            acldvppJpegPredictDecSize(jpeg.as_ptr().cast(), n, 1, null_mut()),
            0
        );
        assert_ne!(acldvppMalloc(null_mut(), 10), 0);
        assert_ne!(acldvppFree(null), 0);
        assert_eq!(acldvppGetPicDescWidth(null), 0);
        assert!(acldvppGetPicDescData(null).is_null());
        assert_ne!(acldvppSetChannelDescParam(ch, 5, 4, null), 0);
        // Handles of another kind: a description as a channel, a channel as a description,
        // a stream, a configuration, memory.
        assert_eq!(acldvppJpegDecodeAsync(desc, input, n, desc, s), 100000);
        assert_eq!(acldvppJpegDecodeAsync(ch, input, n, ch, s), 100000);
        assert_eq!(acldvppJpegDecodeAsync(ch, input, n, s, s), 100000);
        assert_eq!(acldvppJpegDecodeAsync(ch, input, n, cfg, s), 100000);
        assert_eq!(acldvppJpegDecodeAsync(ch, input, n, out, s), 100000);
        assert_ne!(acldvppJpegDecodeAsync(ch, input, n, desc, desc), 0);
        assert_eq!(acldvppVpcResizeAsync(ch, desc, desc, desc, s), 100000);
        assert_eq!(acldvppGetResizeConfigInterpolation(desc), 0);
        assert_eq!(acldvppGetPicDescWidth(cfg), 0);
        assert_ne!(acldvppDestroyPicDesc(ch), 0);
        assert_ne!(acldvppDestroyResizeConfig(desc), 0);
        assert_ne!(acldvppDestroyChannelDesc(cfg), 0);
        assert_ne!(acldvppFree(desc), 0);
        // Memory inside an allocation, not its start.
        // SAFETY: one byte into a live allocation (never dereferenced).
        let inner = unsafe { input.cast::<u8>().add(1) }.cast::<c_void>();
        assert_ne!(acldvppFree(inner), 0);
        assert!(findings().is_empty(), "{:?}", findings());
        // Stale: destroyed, then used and destroyed again.
        ok(acldvppDestroyResizeConfig(cfg), "");
        ok(acldvppDestroyPicDesc(desc), "");
        assert_eq!(acldvppJpegDecodeAsync(ch, input, n, desc, s), 100000);
        assert_eq!(acldvppSetResizeConfigInterpolation(cfg, 1), 100000);
        assert_eq!(acldvppDestroyPicDesc(desc), 100000);
        assert_eq!(acldvppGetPicDescSize(desc), 0);
        assert_eq!(count("DV10"), 4, "{:?}", findings());
        ok(acldvppDestroyChannel(ch), "");
        ok(acldvppDestroyChannelDesc(ch), "");
        assert_eq!(acldvppCreateChannel(ch), 100000);
        ok(acldvppFree(input), "");
        ok(acldvppFree(out), "");
        assert_ne!(acldvppFree(out), 0, "a double free");
        assert_eq!(count("DV10"), 5, "{:?}", findings());
        teardown(env);
    });
}

#[test]
fn a_recently_destroyed_handle_is_remembered_after_many_others() {
    isolated(
        "a_recently_destroyed_handle_is_remembered_after_many_others",
        || {
            let env = setup();
            for _ in 0..(1 << 16) {
                let d = acldvppCreatePicDesc();
                ok(acldvppDestroyPicDesc(d), "destroy");
            }
            let ch = acldvppCreateChannelDesc();
            ok(
                acldvppDestroyChannelDesc(ch),
                "destroy the channel description",
            );
            let d = acldvppCreatePicDesc();
            ok(acldvppDestroyPicDesc(d), "one more destroy");
            // The channel description was destroyed last but one: a DV10 finding.
            assert_eq!(acldvppCreateChannel(ch), 100000);
            assert_eq!(count("DV10"), 1, "{:?}", findings());
            teardown(env);
        },
    );
}

// ---- Context and process ---------------------------------------------------------------

#[test]
fn media_calls_without_a_context_and_after_finalize_are_refused() {
    isolated(
        "media_calls_without_a_context_and_after_finalize_are_refused",
        || {
            ok(aclInit(std::ptr::null()), "aclInit");
            let mut p = null_mut();
            assert_ne!(acldvppMalloc(&mut p, 100), 0, "no context");
            let c = acldvppCreateChannelDesc();
            assert!(!c.is_null(), "a description needs no context");
            assert_ne!(acldvppCreateChannel(c), 0, "no context");
            ok(acldvppDestroyChannelDesc(c), "");
            assert_eq!(aclsimLiveObjectCount(), 0);
            // Another thread without a context.
            let env = setup_again();
            let ch = channel(3);
            let chs = ch as usize;
            let stream = env.stream as usize;
            let r = std::thread::spawn(move || {
                let jpeg = encode(64, 64);
                let mut need = 0;
                let p = acldvppJpegPredictDecSize(
                    jpeg.as_ptr().cast(),
                    jpeg.len() as u32,
                    1,
                    &mut need,
                );
                let mut m = null_mut();
                let a = acldvppMalloc(&mut m, 100);
                let d = acldvppJpegDecodeAsync(
                    chs as *mut c_void,
                    jpeg.as_ptr().cast(),
                    10,
                    null_mut(),
                    stream as *mut c_void,
                );
                (p, a, d)
            })
            .join()
            .expect("thread");
            assert_eq!(r.0, 0, "a query needs no context");
            assert_ne!(r.1, 0);
            assert_ne!(r.2, 0);
            ok(acldvppDestroyChannel(ch), "");
            ok(acldvppDestroyChannelDesc(ch), "");
            teardown(env);
            // After aclFinalize.
            let jpeg = encode(64, 64);
            let (mut w, mut h, mut c) = (0, 0, 0);
            assert_eq!(
                acldvppJpegGetImageInfo(
                    jpeg.as_ptr().cast(),
                    jpeg.len() as u32,
                    &mut w,
                    &mut h,
                    &mut c
                ),
                100001
            );
            assert!(acldvppCreatePicDesc().is_null());
            assert_eq!(acldvppMalloc(&mut p, 100), 100001);
        },
    );
}

fn setup_again() -> Env {
    ok(aclrtSetDevice(0), "set device");
    let mut ctx = null_mut();
    ok(aclrtCreateContext(&mut ctx, 0), "context");
    let mut stream = null_mut();
    ok(aclrtCreateStream(&mut stream), "stream");
    Env { stream }
}

/// A decode of a 512x512 picture queued behind a kernel holding the stream.
fn pending_decode(env: &Env) -> (*mut c_void, *mut c_void, *mut c_void, *mut c_void) {
    let jpeg = encode(512, 512);
    let input = upload(&jpeg);
    let need = 512 * 512 * 3 / 2;
    let out = media(need);
    let desc = pic(out, need as u32, 1, 0, 0, 0, 0);
    let ch = channel(3);
    ok(
        aclsimLaunchKernel(env.stream, 100_000, None, null_mut(), null_mut(), 0),
        "hold",
    );
    ok(
        acldvppJpegDecodeAsync(ch, input, jpeg.len() as u32, desc, env.stream),
        "decode",
    );
    (input, out, desc, ch)
}

#[test]
fn teardown_with_a_decode_pending_frees_everything() {
    isolated("teardown_with_a_decode_pending_frees_everything", || {
        // A forced stream destroy with a decode queued; then a device reset with one queued.
        let env = setup();
        let (input, out, desc, ch) = pending_decode(&env);
        ok(acldvppDestroyPicDesc(desc), "destroy while pending (DV10)");
        ok(aclrtDestroyStreamForce(env.stream), "force");
        ok(acldvppFree(input), "");
        ok(acldvppFree(out), "");
        ok(acldvppDestroyChannel(ch), "");
        ok(acldvppDestroyChannelDesc(ch), "");
        let mut stream = null_mut();
        ok(aclrtCreateStream(&mut stream), "stream");
        let env = Env { stream };
        let (_input, _out, desc, ch) = pending_decode(&env);
        ok(aclrtResetDevice(0), "reset with a decode pending");
        assert!(count("D3") >= 1, "{:?}", findings());
        ok(acldvppDestroyPicDesc(desc), "");
        // The channel went with the device: destroying it is a DV3 finding; the description
        // goes.
        assert_eq!(acldvppDestroyChannel(ch), 100000);
        ok(acldvppDestroyChannelDesc(ch), "");
        assert_eq!(aclsimLiveObjectCount(), 0, "{:?}", findings());
        ok(aclFinalize(), "");
        // aclFinalize with a decode pending.
        let env = setup();
        let _ = pending_decode(&env);
        let _ = aclFinalize();
        assert_eq!(aclsimLiveObjectCount(), 0);
    });
}

// ---- Checker -------------------------------------------------------------------------

#[test]
fn a_pending_decode_is_seen_when_another_decode_of_its_description_is_done() {
    isolated(
        "a_pending_decode_is_seen_when_another_decode_of_its_description_is_done",
        || {
            let env = setup();
            let mut other = null_mut();
            ok(aclrtCreateStream(&mut other), "a second stream");
            let jpeg = encode(64, 64);
            let input = upload(&jpeg);
            let need = 64 * 64 * 3 / 2;
            let out = media(need);
            let desc = pic(out, need as u32, 1, 0, 0, 0, 0);
            let (c1, c2) = (channel(2), channel(2));
            // Decode 1 held on the first stream; decode 2 of the same description on the
            // second, done.
            ok(
                aclsimLaunchKernel(env.stream, 300_000, None, null_mut(), null_mut(), 0),
                "hold",
            );
            let n = jpeg.len() as u32;
            ok(
                acldvppJpegDecodeAsync(c1, input, n, desc, env.stream),
                "decode 1",
            );
            ok(
                acldvppJpegDecodeAsync(c2, input, n, desc, other),
                "decode 2",
            );
            ok(aclrtSynchronizeStream(other), "decode 2 done");
            let before = count("DV6");
            // Decode 1 still writes the description.
            let _ = acldvppGetPicDescWidth(desc);
            assert_eq!(count("DV6"), before + 1, "{:?}", findings());
            ok(aclrtSynchronizeStream(env.stream), "");
            for c in [c1, c2] {
                ok(acldvppDestroyChannel(c), "");
                ok(acldvppDestroyChannelDesc(c), "");
            }
            ok(acldvppDestroyPicDesc(desc), "");
            ok(acldvppFree(input), "");
            ok(acldvppFree(out), "");
            ok(aclrtDestroyStream(other), "");
            teardown(env);
        },
    );
}

#[test]
fn two_threads_on_one_channel_and_a_destroy_from_another_thread_are_flagged() {
    isolated(
        "two_threads_on_one_channel_and_a_destroy_from_another_thread_are_flagged",
        || {
            let env = setup();
            let mut ctx = null_mut();
            ok(aclrtGetCurrentContext(&mut ctx), "ctx");
            let jpeg = encode(64, 64);
            let input = upload(&jpeg) as usize;
            let ch = channel(3) as usize;
            let need = 64 * 64 * 3 / 2;
            let (ctx, n) = (ctx as usize, jpeg.len() as u32);
            let workers: Vec<_> = (0..2)
                .map(|_| {
                    std::thread::spawn(move || {
                        ok(aclrtSetCurrentContext(ctx as *mut c_void), "ctx");
                        let mut s = null_mut();
                        ok(aclrtCreateStream(&mut s), "stream");
                        let out = media(need);
                        let desc = pic(out, need as u32, 1, 0, 0, 0, 0);
                        ok(
                            aclsimLaunchKernel(s, 50_000, None, null_mut(), null_mut(), 0),
                            "hold",
                        );
                        for _ in 0..4 {
                            ok(
                                acldvppJpegDecodeAsync(
                                    ch as *mut c_void,
                                    input as *mut c_void,
                                    n,
                                    desc,
                                    s,
                                ),
                                "decode",
                            );
                        }
                        (s as usize, out as usize, desc as usize)
                    })
                })
                .collect();
            let done: Vec<_> = workers
                .into_iter()
                .map(|t| t.join().expect("thread"))
                .collect();
            assert!(count("DV4") >= 1, "{:?}", findings());
            // The descriptions destroyed from this thread while the decodes may be pending.
            for (s, out, desc) in done {
                let _ = acldvppDestroyPicDesc(desc as *mut c_void);
                ok(aclrtSynchronizeStream(s as *mut c_void), "");
                ok(aclrtDestroyStream(s as *mut c_void), "");
                ok(acldvppFree(out as *mut c_void), "");
            }
            ok(acldvppDestroyChannel(ch as *mut c_void), "");
            ok(acldvppDestroyChannelDesc(ch as *mut c_void), "");
            ok(acldvppFree(input as *mut c_void), "");
            teardown(env);
        },
    );
}

#[test]
fn a_channel_of_one_device_on_a_stream_of_another_is_refused() {
    isolated(
        "a_channel_of_one_device_on_a_stream_of_another_is_refused",
        || {
            let mut n = 0;
            ok(aclInit(std::ptr::null()), "init");
            ok(aclrtGetDeviceCount(&mut n), "count");
            if n < 2 {
                return;
            }
            ok(aclrtSetDevice(0), "");
            let ch = channel(3);
            ok(aclrtSetDevice(1), "");
            let mut s = null_mut();
            ok(aclrtCreateStream(&mut s), "a stream of device 1");
            let jpeg = encode(64, 64);
            let input = upload(&jpeg);
            let need = 64 * 64 * 3 / 2;
            let out = media(need);
            let desc = pic(out, need as u32, 1, 0, 0, 0, 0);
            let r = acldvppJpegDecodeAsync(ch, input, jpeg.len() as u32, desc, s);
            let _ = aclrtSynchronizeStream(s);
            assert_eq!(r, 100000, "{:?}", findings());
            assert_eq!(count("DV3"), 1, "{:?}", findings());
            ok(acldvppDestroyPicDesc(desc), "");
            ok(acldvppFree(input), "");
            ok(acldvppFree(out), "");
            ok(aclrtDestroyStream(s), "");
            ok(aclrtSetDevice(0), "");
            ok(acldvppDestroyChannel(ch), "");
            ok(acldvppDestroyChannelDesc(ch), "");
            ok(aclrtResetDevice(1), "");
            ok(aclrtResetDevice(0), "");
            assert_eq!(aclsimLiveObjectCount(), 0, "{:?}", findings());
            ok(aclFinalize(), "");
        },
    );
}

// ---- Fault-injection sweep ---------------------------------------------------------------

/// A raw decode + resize program that checks every code and cleans up whatever it created,
/// retrying a failed release once. `log` receives the name of every runtime call in order.
struct Prog {
    log: Vec<&'static str>,
    jpeg: Vec<u8>,
    /// Media task failure injected before the decode (0) or the resize (1).
    task_fail: Option<u8>,
}

/// What the program holds, for its cleanup.
#[derive(Default)]
struct Held {
    device: bool,
    ctx: Option<*mut c_void>,
    stream: Option<*mut c_void>,
    mem: Vec<*mut c_void>,
    pics: Vec<*mut c_void>,
    cfg: Option<*mut c_void>,
    chdesc: Option<*mut c_void>,
    channel: bool,
}

impl Prog {
    fn rc(&mut self, name: &'static str, r: i32) -> Result<(), String> {
        self.log.push(name);
        if r == 0 {
            Ok(())
        } else {
            Err(format!("{name}: {r}"))
        }
    }

    fn ptr(&mut self, name: &'static str, p: *mut c_void) -> Result<*mut c_void, String> {
        self.log.push(name);
        if p.is_null() {
            Err(format!("{name}: NULL"))
        } else {
            Ok(p)
        }
    }

    fn malloc(&mut self, h: &mut Held, n: usize) -> Result<*mut c_void, String> {
        let mut p = null_mut();
        self.rc("acldvppMalloc", acldvppMalloc(&mut p, n))?;
        h.mem.push(p);
        Ok(p)
    }

    #[allow(clippy::too_many_arguments)]
    fn pic(
        &mut self,
        h: &mut Held,
        data: *mut c_void,
        size: u32,
        w: u32,
        ht: u32,
        ws: u32,
        hs: u32,
    ) -> Result<*mut c_void, String> {
        let d = self.ptr("acldvppCreatePicDesc", acldvppCreatePicDesc())?;
        h.pics.push(d);
        self.rc("acldvppSetPicDescData", acldvppSetPicDescData(d, data))?;
        self.rc("acldvppSetPicDescSize", acldvppSetPicDescSize(d, size))?;
        self.rc("acldvppSetPicDescFormat", acldvppSetPicDescFormat(d, 1))?;
        if w > 0 {
            self.rc("acldvppSetPicDescWidth", acldvppSetPicDescWidth(d, w))?;
            self.rc("acldvppSetPicDescHeight", acldvppSetPicDescHeight(d, ht))?;
            self.rc(
                "acldvppSetPicDescWidthStride",
                acldvppSetPicDescWidthStride(d, ws),
            )?;
            self.rc(
                "acldvppSetPicDescHeightStride",
                acldvppSetPicDescHeightStride(d, hs),
            )?;
        }
        Ok(d)
    }

    fn body(&mut self, h: &mut Held) -> Result<(), String> {
        self.rc("aclrtSetDevice", aclrtSetDevice(0))?;
        h.device = true;
        let mut ctx = null_mut();
        self.rc("aclrtCreateContext", aclrtCreateContext(&mut ctx, 0))?;
        h.ctx = Some(ctx);
        let mut stream = null_mut();
        self.rc("aclrtCreateStream", aclrtCreateStream(&mut stream))?;
        h.stream = Some(stream);
        let jpeg = self.jpeg.clone();
        let n = jpeg.len() as u32;
        let (mut w, mut ht, mut c) = (0u32, 0u32, 0i32);
        self.rc(
            "acldvppJpegGetImageInfo",
            acldvppJpegGetImageInfo(jpeg.as_ptr().cast(), n, &mut w, &mut ht, &mut c),
        )?;
        let mut need = 0;
        self.rc(
            "acldvppJpegPredictDecSize",
            acldvppJpegPredictDecSize(jpeg.as_ptr().cast(), n, 1, &mut need),
        )?;
        let input = self.malloc(h, jpeg.len())?;
        // SAFETY: `input` holds `jpeg.len()` bytes.
        unsafe { std::ptr::copy(jpeg.as_ptr(), input.cast::<u8>(), jpeg.len()) };
        let decoded = self.malloc(h, need as usize)?;
        let dec = self.pic(h, decoded, need, 0, 0, 0, 0)?;
        let ch = self.ptr("acldvppCreateChannelDesc", acldvppCreateChannelDesc())?;
        h.chdesc = Some(ch);
        self.rc(
            "acldvppSetChannelDescMode",
            acldvppSetChannelDescMode(ch, 3),
        )?;
        self.rc("acldvppCreateChannel", acldvppCreateChannel(ch))?;
        h.channel = true;
        if self.task_fail == Some(0) {
            ok(aclsimInjectTaskFailure(stream, 507899), "arm");
        }
        self.rc(
            "acldvppJpegDecodeAsync",
            acldvppJpegDecodeAsync(ch, input, n, dec, stream),
        )?;
        self.rc("aclrtSynchronizeStream", aclrtSynchronizeStream(stream))?;
        self.log.push("acldvppGetPicDescRetCode");
        let r = acldvppGetPicDescRetCode(dec);
        if r != 0 {
            return Err(format!("decode ret code {r}"));
        }
        self.log.push("acldvppGetPicDescWidth");
        let dw = acldvppGetPicDescWidth(dec);
        self.log.push("acldvppGetPicDescHeight");
        let dh = acldvppGetPicDescHeight(dec);
        self.log.push("acldvppGetPicDescWidthStride");
        let dws = acldvppGetPicDescWidthStride(dec);
        self.log.push("acldvppGetPicDescHeightStride");
        let dhs = acldvppGetPicDescHeightStride(dec);
        if (dw, dh) != (w & !1, ht & !1) || dws == 0 || dhs == 0 {
            return Err(format!(
                "decoded {dw}x{dh} ({dws}x{dhs}), expected {w}x{ht}"
            ));
        }
        let src = self.pic(h, decoded, need, dw, dh, dws, dhs)?;
        let (ow, oh) = (32u32, 24u32);
        let out = self.malloc(h, (ow * oh * 3 / 2) as usize)?;
        let dst = self.pic(h, out, ow * oh * 3 / 2, ow, oh, ow, oh)?;
        let cfg = self.ptr("acldvppCreateResizeConfig", acldvppCreateResizeConfig())?;
        h.cfg = Some(cfg);
        self.rc(
            "acldvppSetResizeConfigInterpolation",
            acldvppSetResizeConfigInterpolation(cfg, 1),
        )?;
        if self.task_fail == Some(1) {
            ok(aclsimInjectTaskFailure(stream, 507899), "arm");
        }
        self.rc(
            "acldvppVpcResizeAsync",
            acldvppVpcResizeAsync(ch, src, dst, cfg, stream),
        )?;
        self.rc("aclrtSynchronizeStream", aclrtSynchronizeStream(stream))?;
        self.log.push("acldvppGetPicDescRetCode");
        let r = acldvppGetPicDescRetCode(dst);
        if r != 0 {
            return Err(format!("resize ret code {r}"));
        }
        Ok(())
    }

    /// Releases what `h` holds, in order, each release retried once; `Err` if any failed.
    fn cleanup(&mut self, h: Held) -> Result<(), String> {
        let mut failed = Vec::new();
        let mut twice = |s: &mut Self, name: &'static str, f: &dyn Fn() -> i32| {
            if s.rc(name, f()).is_err() {
                failed.push(name);
                let _ = s.rc(name, f());
            }
        };
        if let Some(st) = h.stream {
            twice(self, "aclrtSynchronizeStream", &|| {
                aclrtSynchronizeStream(st)
            });
        }
        for d in h.pics {
            twice(self, "acldvppDestroyPicDesc", &|| acldvppDestroyPicDesc(d));
        }
        if let Some(c) = h.cfg {
            twice(self, "acldvppDestroyResizeConfig", &|| {
                acldvppDestroyResizeConfig(c)
            });
        }
        if let Some(c) = h.chdesc {
            if h.channel {
                twice(self, "acldvppDestroyChannel", &|| acldvppDestroyChannel(c));
            }
            twice(self, "acldvppDestroyChannelDesc", &|| {
                acldvppDestroyChannelDesc(c)
            });
        }
        for p in h.mem {
            twice(self, "acldvppFree", &|| acldvppFree(p));
        }
        if let Some(st) = h.stream {
            twice(self, "aclrtDestroyStream", &|| aclrtDestroyStream(st));
        }
        if let Some(c) = h.ctx {
            twice(self, "aclrtDestroyContext", &|| aclrtDestroyContext(c));
        }
        if h.device {
            twice(self, "aclrtResetDevice", &|| aclrtResetDevice(0));
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(format!("cleanup: {failed:?}"))
        }
    }

    /// Runs the program: `Ok` if every call succeeded.
    fn run(&mut self) -> Result<(), String> {
        let mut h = Held::default();
        let r = self.body(&mut h);
        let c = self.cleanup(h);
        r.and(c)
    }
}

#[test]
fn every_media_call_failing_once_is_an_error_and_leaks_nothing() {
    isolated(
        "every_media_call_failing_once_is_an_error_and_leaks_nothing",
        || {
            ok(aclInit(std::ptr::null()), "aclInit");
            let jpeg = encode(97, 66);
            let mut clean = Prog {
                log: Vec::new(),
                jpeg: jpeg.clone(),
                task_fail: None,
            };
            clean.run().expect("the program without faults");
            let calls = clean.log.clone();
            assert!(calls.len() > 50, "{calls:?}");
            assert_eq!(aclsimLiveObjectCount(), 0);
            for (i, name) in calls.iter().enumerate() {
                let nth = calls[..i].iter().filter(|n| *n == name).count() as u32;
                let c = CString::new(*name).expect("name");
                ok(aclsimInjectFaultAt(c.as_ptr(), 507899, nth, 1), "arm");
                let mut p = Prog {
                    log: Vec::new(),
                    jpeg: jpeg.clone(),
                    task_fail: None,
                };
                let r = p.run();
                aclsimClearFaults();
                // The getters answer 0 on failure: a ret code of 0 reads as success.
                if *name != "acldvppGetPicDescRetCode" {
                    assert!(r.is_err(), "{name} #{nth} failing went unnoticed");
                }
                assert_eq!(
                    aclsimLiveObjectCount(),
                    0,
                    "{name} #{nth} failing: {r:?}; {:?}",
                    findings()
                );
            }
            for at in [0u8, 1] {
                let mut p = Prog {
                    log: Vec::new(),
                    jpeg: jpeg.clone(),
                    task_fail: Some(at),
                };
                let r = p.run();
                assert!(r.is_err(), "task failure at {at} went unnoticed");
                assert_eq!(aclsimLiveObjectCount(), 0, "task failure at {at}: {r:?}");
            }
            let unexpected: Vec<_> = findings()
                .into_iter()
                .filter(|f| f.0.starts_with("DV"))
                .collect();
            assert!(unexpected.is_empty(), "{unexpected:?}");
            ok(aclFinalize(), "finalize");
        },
    );
}

// ---- The seeds of the fuzz target jpeg_decode -----------------------------------------

/// `jpeg` with its frame header's size replaced by `w` x `h` (the data left as it is).
fn resized_header(jpeg: &[u8], w: u16, h: u16) -> Vec<u8> {
    let mut v = jpeg.to_vec();
    let sof = v
        .windows(2)
        .position(|m| m == [0xFF, 0xC0])
        .expect("a SOF0 marker");
    v[sof + 5..sof + 7].copy_from_slice(&h.to_be_bytes());
    v[sof + 7..sof + 9].copy_from_slice(&w.to_be_bytes());
    v
}

/// `jpeg` up to the end of its scan header: every table, no entropy-coded data.
fn header_only(jpeg: &[u8]) -> Vec<u8> {
    let sos = jpeg
        .windows(2)
        .position(|m| m == [0xFF, 0xDA])
        .expect("a SOS marker");
    let len = usize::from(u16::from_be_bytes([jpeg[sos + 2], jpeg[sos + 3]]));
    jpeg[..sos + 2 + len].to_vec()
}

/// The seed corpus of the fuzz target `jpeg_decode` (fuzz/corpus/jpeg_decode/), each
/// below its 4096-byte `-max_len`: every sampling, odd sizes, restart markers, an EXIF
/// orientation, cut-short files and sizes beyond JPEGD's. Each decodes or is an error
/// code, as expected (`None`: either). `JPEG_DECODE_SEEDS=<dir>` writes them there (from sim/:
/// `JPEG_DECODE_SEEDS=../fuzz/corpus/jpeg_decode cargo test --test dvpp_attacks seeds`).
#[test]
fn fuzz_seeds_of_jpeg_decode_decode_or_are_errors() {
    isolated("fuzz_seeds_of_jpeg_decode_decode_or_are_errors", || {
        use jpeg_encoder::SamplingFactor as S;
        let e = |w, h, gray, s, restart| encode_with(w, h, gray, s, restart, None);
        let base = e(48, 32, false, S::R_4_2_0, 0);
        let seeds: Vec<(&str, Vec<u8>, Option<bool>)> = vec![
            ("baseline-420-48x32.jpg", base.clone(), Some(true)),
            (
                "baseline-422-40x40.jpg",
                e(40, 40, false, S::R_4_2_2, 0),
                Some(true),
            ),
            (
                "baseline-444-32x32.jpg",
                e(32, 32, false, S::R_4_4_4, 0),
                Some(true),
            ),
            (
                "baseline-440-32x48.jpg",
                e(32, 48, false, S::R_4_4_0, 0),
                Some(true),
            ),
            ("gray-64x32.jpg", e(64, 32, true, S::R_4_2_0, 0), Some(true)),
            (
                "odd-420-33x35.jpg",
                e(33, 35, false, S::R_4_2_0, 0),
                Some(true),
            ),
            (
                "small-17x9.jpg",
                e(17, 9, false, S::R_4_2_0, 0),
                Some(false),
            ),
            (
                "restart-420-64x48.jpg",
                e(64, 48, false, S::R_4_2_0, 1),
                Some(true),
            ),
            (
                "exif6-420-48x32.jpg",
                encode_with(48, 32, false, S::R_4_2_0, 0, Some(exif(6))),
                Some(true),
            ),
            (
                "truncated-420.jpg",
                base[..base.len() / 2].to_vec(),
                Some(false),
            ),
            ("header-only-420.jpg", header_only(&base), Some(false)),
            (
                "huge-65500x65500.jpg",
                resized_header(&base, 65500, 65500),
                Some(false),
            ),
            // The data of 48x32 ends early (EOI): the rest decodes as gray or fails.
            (
                "large-4000x3000.jpg",
                resized_header(&base, 4000, 3000),
                None,
            ),
        ];
        let env = setup();
        let dir = std::env::var_os("JPEG_DECODE_SEEDS").map(std::path::PathBuf::from);
        for (name, jpeg, decodes) in &seeds {
            assert!(jpeg.len() < 4096, "{name}: {} B", jpeg.len());
            match decode(&env, jpeg) {
                Ok(_) => assert!(*decodes != Some(false), "{name} decoded"),
                Err(code) => assert!(*decodes != Some(true) && code != 0, "{name}: {code}"),
            }
            if let Some(dir) = &dir {
                std::fs::write(dir.join(name), jpeg).expect("write a seed");
            }
        }
        assert!(findings().is_empty(), "{:?}", findings());
        teardown(env);
    });
}
