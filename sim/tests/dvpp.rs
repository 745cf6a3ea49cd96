// Over 700 lines, kept whole: one case per rule of the media family, and the fixtures,
// references and set-up they share.
//! The media functions of DVPP V1 (DV2-DV11) against the simulator, called through its Rust
//! library (the same entry points the C ABI exports). Each test runs in a process of its
//! own (the test binary re-run for that one test), so that it starts from a fresh runtime
//! and sees only its own findings. The JPEG fixtures are written by the tests themselves
//! (`jpeg-encoder`), the reference decode is `zune-jpeg`'s own RGB.

use std::ffi::{CString, c_void};
use std::process::Command;
use std::ptr::null_mut;

use ascendcl::*;

const CASE_ENV: &str = "ACLSIM_DVPP_CASE";

/// Runs `body` in a child process (this binary, running only the test `name`).
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

// ---- Fixtures and helpers -------------------------------------------------------------

/// An RGB test picture: smooth gradients and a few sharp edges.
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

fn encode(w: u16, h: u16, gray: bool, progressive: bool, sampling: &str) -> Vec<u8> {
    use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
    let mut out = Vec::new();
    let mut e = Encoder::new(&mut out, 95);
    e.set_progressive(progressive);
    e.set_sampling_factor(match sampling {
        "444" => SamplingFactor::R_4_4_4,
        "422" => SamplingFactor::R_4_2_2,
        _ => SamplingFactor::R_4_2_0,
    });
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

fn rules() -> Vec<String> {
    findings().into_iter().map(|f| f.0).collect()
}

/// Runtime, device 0, a context, a stream.
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

fn align(x: u32, to: u32) -> u32 {
    x.div_ceil(to) * to
}

/// Decodes `jpeg` to NV12 on `env`'s stream, synchronised; returns the output's bytes and
/// (w, h, ws, hs).
fn decode(env: &Env, jpeg: &[u8], format: i32) -> (Vec<u8>, [u32; 4]) {
    let input = upload(jpeg);
    let mut need = 0;
    ok(
        acldvppJpegPredictDecSize(jpeg.as_ptr().cast(), jpeg.len() as u32, format, &mut need),
        "predict",
    );
    let out = media(need as usize);
    let desc = pic(out, need, format, 0, 0, 0, 0);
    let ch = channel(3);
    ok(
        acldvppJpegDecodeAsync(ch, input, jpeg.len() as u32, desc, env.stream),
        "decode",
    );
    ok(aclrtSynchronizeStream(env.stream), "synchronize");
    let dims = [
        acldvppGetPicDescWidth(desc),
        acldvppGetPicDescHeight(desc),
        acldvppGetPicDescWidthStride(desc),
        acldvppGetPicDescHeightStride(desc),
    ];
    assert_eq!(acldvppGetPicDescRetCode(desc), 0);
    let mut bytes = vec![0u8; need as usize];
    // SAFETY: `out` holds `need` bytes, the task is done.
    unsafe { std::ptr::copy(out.cast::<u8>(), bytes.as_mut_ptr(), bytes.len()) };
    ok(acldvppDestroyChannel(ch), "destroy channel");
    ok(acldvppDestroyChannelDesc(ch), "destroy channel desc");
    ok(acldvppDestroyPicDesc(desc), "destroy desc");
    ok(acldvppFree(input), "free in");
    ok(acldvppFree(out), "free out");
    (bytes, dims)
}

/// The reference: `zune-jpeg`'s RGB, converted to full-range BT.601 YUV (JFIF).
fn reference_yuv(jpeg: &[u8]) -> (usize, usize, Vec<[f32; 3]>) {
    use zune_jpeg::JpegDecoder;
    use zune_jpeg::zune_core::bytestream::ZCursor;
    let mut d = JpegDecoder::new(ZCursor::new(jpeg));
    let rgb = d.decode().expect("reference decode");
    let info = d.info().expect("info");
    let yuv = rgb
        .chunks(3)
        .map(|p| {
            let (r, g, b) = (f32::from(p[0]), f32::from(p[1]), f32::from(p[2]));
            [
                0.299 * r + 0.587 * g + 0.114 * b,
                128.0 - 0.168736 * r - 0.331264 * g + 0.5 * b,
                128.0 + 0.5 * r - 0.418688 * g - 0.081312 * b,
            ]
        })
        .collect();
    (usize::from(info.width), usize::from(info.height), yuv)
}

/// Mean absolute difference of the Y plane and of each chroma plane against the reference.
fn compare(jpeg: &[u8], nv: &[u8], dims: [u32; 4], nv21: bool) -> (f32, f32) {
    let (w, _h, yuv) = reference_yuv(jpeg);
    let [ow, oh, ws, hs] = dims.map(|v| v as usize);
    let (mut dy, mut dc, mut ny, mut nc) = (0f32, 0f32, 0f32, 0f32);
    for y in 0..oh {
        for x in 0..ow {
            dy += (f32::from(nv[y * ws + x]) - yuv[y * w + x][0]).abs();
            ny += 1.0;
        }
    }
    let uv = ws * hs;
    for by in 0..oh / 2 {
        for bx in 0..ow / 2 {
            let mean = |c: usize| {
                let px = |x: usize, y: usize| yuv[y * w + x][c];
                (px(2 * bx, 2 * by)
                    + px(2 * bx + 1, 2 * by)
                    + px(2 * bx, 2 * by + 1)
                    + px(2 * bx + 1, 2 * by + 1))
                    / 4.0
            };
            let (u, v) = (nv[uv + by * ws + 2 * bx], nv[uv + by * ws + 2 * bx + 1]);
            let (u, v) = if nv21 { (v, u) } else { (u, v) };
            dc += (f32::from(u) - mean(1)).abs() + (f32::from(v) - mean(2)).abs();
            nc += 2.0;
        }
    }
    (dy / ny, dc / nc)
}

/// A straightforward bilinear resize with half-pixel centres, in floating point.
fn reference_bilinear(src: &[u8], sw: usize, sh: usize, dw: usize, dh: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(dw * dh);
    for y in 0..dh {
        let fy = ((y as f32 + 0.5) * sh as f32 / dh as f32 - 0.5).clamp(0.0, (sh - 1) as f32);
        let (y0, wy) = (fy.floor() as usize, fy - fy.floor());
        let y1 = (y0 + 1).min(sh - 1);
        for x in 0..dw {
            let fx = ((x as f32 + 0.5) * sw as f32 / dw as f32 - 0.5).clamp(0.0, (sw - 1) as f32);
            let (x0, wx) = (fx.floor() as usize, fx - fx.floor());
            let x1 = (x0 + 1).min(sw - 1);
            let p = |x: usize, y: usize| f32::from(src[y * sw + x]);
            let top = p(x0, y0) * (1.0 - wx) + p(x1, y0) * wx;
            let bottom = p(x0, y1) * (1.0 - wx) + p(x1, y1) * wx;
            out.push(top * (1.0 - wy) + bottom * wy);
        }
    }
    out
}

/// Resizes an NV12 picture (`w` x `h`, tightly strided) to `dw` x `dh` with `interp`;
/// returns the output (tightly strided).
fn resize(env: &Env, src: &[u8], w: u32, h: u32, dw: u32, dh: u32, interp: u32) -> Vec<u8> {
    let input = upload(src);
    let in_desc = pic(input, src.len() as u32, 1, w, h, w, h);
    let bytes = dw * dh * 3 / 2;
    let out = media(bytes as usize);
    let out_desc = pic(out, bytes, 1, dw, dh, dw, dh);
    let cfg = acldvppCreateResizeConfig();
    ok(acldvppSetResizeConfigInterpolation(cfg, interp), "interp");
    let ch = channel(1);
    ok(
        acldvppVpcResizeAsync(ch, in_desc, out_desc, cfg, env.stream),
        "resize",
    );
    ok(aclrtSynchronizeStream(env.stream), "synchronize");
    assert_eq!(acldvppGetPicDescRetCode(out_desc), 0);
    let mut v = vec![0u8; bytes as usize];
    // SAFETY: `out` holds `bytes` bytes, the task is done.
    unsafe { std::ptr::copy(out.cast::<u8>(), v.as_mut_ptr(), v.len()) };
    for d in [in_desc, out_desc] {
        ok(acldvppDestroyPicDesc(d), "destroy");
    }
    ok(acldvppDestroyResizeConfig(cfg), "destroy cfg");
    ok(acldvppDestroyChannel(ch), "destroy channel");
    ok(acldvppDestroyChannelDesc(ch), "destroy channel desc");
    ok(acldvppFree(input), "free");
    ok(acldvppFree(out), "free");
    v
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

/// Everything a decode needs, for the hazard cases: input, output, descriptions, channel.
struct Decode {
    input: *mut c_void,
    out: *mut c_void,
    desc: *mut c_void,
    ch: *mut c_void,
    len: u32,
}

fn prepare_decode(w: u16, h: u16) -> Decode {
    let jpeg = encode(w, h, false, false, "420");
    let input = upload(&jpeg);
    let mut need = 0;
    ok(
        acldvppJpegPredictDecSize(jpeg.as_ptr().cast(), jpeg.len() as u32, 1, &mut need),
        "predict",
    );
    let out = media(need as usize);
    Decode {
        input,
        out,
        desc: pic(out, need, 1, 0, 0, 0, 0),
        ch: channel(3),
        len: jpeg.len() as u32,
    }
}

fn submit(env: &Env, d: &Decode) -> i32 {
    acldvppJpegDecodeAsync(d.ch, d.input, d.len, d.desc, env.stream)
}

/// A kernel that holds its stream for a while (the tasks behind it stay pending).
fn hold(env: &Env, micros: u64) {
    ok(
        aclsimLaunchKernel(env.stream, micros, None, null_mut(), null_mut(), 0),
        "a kernel holding the stream",
    );
}

// ---- The cases --------------------------------------------------------------------------

#[test]
fn dv7_image_info_reports_size_components_and_sampling() {
    isolated(
        "dv7_image_info_reports_size_components_and_sampling",
        || {
            ok(aclInit(std::ptr::null()), "init");
            for (sampling, format) in [("444", 0), ("422", 1), ("420", 2)] {
                let jpeg = encode(100, 60, false, false, sampling);
                let (mut w, mut h, mut c, mut f) = (0, 0, 0, -1);
                ok(
                    acldvppJpegGetImageInfoV2(
                        jpeg.as_ptr().cast(),
                        jpeg.len() as u32,
                        &mut w,
                        &mut h,
                        &mut c,
                        &mut f,
                    ),
                    "info",
                );
                assert_eq!((w, h, c, f), (100, 60, 3, format), "{sampling}");
                ok(
                    acldvppJpegGetImageInfo(
                        jpeg.as_ptr().cast(),
                        jpeg.len() as u32,
                        &mut w,
                        &mut h,
                        &mut c,
                    ),
                    "info v1",
                );
            }
            let gray = encode(64, 48, true, false, "420");
            let (mut w, mut h, mut c, mut f) = (0, 0, 0, -1);
            ok(
                acldvppJpegGetImageInfoV2(
                    gray.as_ptr().cast(),
                    gray.len() as u32,
                    &mut w,
                    &mut h,
                    &mut c,
                    &mut f,
                ),
                "gray",
            );
            assert_eq!((w, h, c, f), (64, 48, 1, 3));
            // NULL outputs are allowed.
            ok(
                acldvppJpegGetImageInfoV2(
                    gray.as_ptr().cast(),
                    gray.len() as u32,
                    &mut w,
                    &mut h,
                    null_mut(),
                    null_mut(),
                ),
                "nulls",
            );
            let mut size = 0;
            ok(
                acldvppJpegPredictDecSize(gray.as_ptr().cast(), gray.len() as u32, 1, &mut size),
                "predict",
            );
            assert_eq!(size, 64 * 48 * 3 / 2);
            let odd = encode(101, 61, false, false, "420");
            ok(
                acldvppJpegPredictDecSize(odd.as_ptr().cast(), odd.len() as u32, 2, &mut size),
                "predict odd",
            );
            assert_eq!(size, align(100, 64) * align(60, 16) * 3 / 2);
            assert!(findings().is_empty(), "{:?}", findings());
            ok(aclFinalize(), "finalize");
        },
    );
}

#[test]
fn dv8_decode_matches_the_reference_decoder_in_nv12_and_nv21() {
    isolated(
        "dv8_decode_matches_the_reference_decoder_in_nv12_and_nv21",
        || {
            let env = setup();
            for (sampling, gray, w, h) in [
                ("420", false, 128, 96),
                ("444", false, 100, 50),
                ("422", false, 77, 41),
                ("420", true, 64, 40),
            ] {
                let jpeg = encode(w, h, gray, false, sampling);
                for (format, nv21) in [(1, false), (2, true)] {
                    let (nv, dims) = decode(&env, &jpeg, format);
                    let (ew, eh) = (u32::from(w) & !1, u32::from(h) & !1);
                    assert_eq!(
                        dims,
                        [ew, eh, align(ew, 64), align(eh, 16)],
                        "{sampling} {w}x{h}"
                    );
                    let (dy, dc) = compare(&jpeg, &nv, dims, nv21);
                    assert!(
                        dy < 1.5,
                        "{sampling} {w}x{h} gray {gray}: luma off by {dy} on average"
                    );
                    if gray {
                        let uv = (dims[2] * dims[3]) as usize;
                        for by in 0..dims[1] as usize / 2 {
                            let row = &nv[uv + by * dims[2] as usize..][..dims[0] as usize];
                            assert!(row.iter().all(|&b| b == 0x80), "gray chroma is 0x80");
                        }
                    } else {
                        assert!(
                            dc < 3.0,
                            "{sampling} {w}x{h}: chroma off by {dc} on average"
                        );
                    }
                    // Padding carries the simulator's pattern.
                    if dims[2] > dims[0] {
                        assert_eq!(nv[dims[0] as usize], 0xA5, "padding");
                    }
                }
            }
            assert!(findings().is_empty(), "{:?}", findings());
            teardown(env);
        },
    );
}

#[test]
fn dv8_precision_mode_align_up_rounds_odd_sizes_up() {
    isolated("dv8_precision_mode_align_up_rounds_odd_sizes_up", || {
        let env = setup();
        let jpeg = encode(77, 41, false, false, "420");
        let input = upload(&jpeg);
        let (w, h) = (78, 42);
        let need = align(w, 64) * align(h, 16) * 3 / 2;
        let out = media(need as usize);
        let desc = pic(out, need, 1, 0, 0, 0, 0);
        let ch = acldvppCreateChannelDesc();
        ok(acldvppSetChannelDescMode(ch, 2), "mode");
        let up = 1i32.to_ne_bytes();
        ok(
            acldvppSetChannelDescParam(ch, 5, 4, up.as_ptr().cast()),
            "precision",
        );
        ok(acldvppCreateChannel(ch), "channel");
        ok(
            acldvppJpegDecodeAsync(ch, input, jpeg.len() as u32, desc, env.stream),
            "decode",
        );
        ok(aclrtSynchronizeStream(env.stream), "sync");
        assert_eq!(
            (acldvppGetPicDescWidth(desc), acldvppGetPicDescHeight(desc)),
            (w, h)
        );
        ok(acldvppDestroyChannel(ch), "");
        ok(acldvppDestroyChannelDesc(ch), "");
        ok(acldvppDestroyPicDesc(desc), "");
        ok(acldvppFree(input), "");
        ok(acldvppFree(out), "");
        teardown(env);
    });
}

#[test]
fn dv7_progressive_and_out_of_range_jpegs_are_refused_at_submission() {
    isolated(
        "dv7_progressive_and_out_of_range_jpegs_are_refused_at_submission",
        || {
            let env = setup();
            let progressive = encode(64, 64, false, true, "420");
            let (mut w, mut h, mut c) = (0, 0, 0);
            // The header is readable: the info functions report it.
            ok(
                acldvppJpegGetImageInfo(
                    progressive.as_ptr().cast(),
                    progressive.len() as u32,
                    &mut w,
                    &mut h,
                    &mut c,
                ),
                "info",
            );
            let mut size = 0;
            assert_eq!(
                acldvppJpegPredictDecSize(
                    progressive.as_ptr().cast(),
                    progressive.len() as u32,
                    1,
                    &mut size
                ),
                148052
            );
            let d = prepare_decode(64, 64);
            let input = upload(&progressive);
            assert_eq!(
                acldvppJpegDecodeAsync(d.ch, input, progressive.len() as u32, d.desc, env.stream),
                148052
            );
            let small = encode(16, 16, false, false, "420");
            let tiny = upload(&small);
            assert_eq!(
                acldvppJpegDecodeAsync(d.ch, tiny, small.len() as u32, d.desc, env.stream),
                100000
            );
            // Nothing was queued: the stream is idle and the description untouched.
            let mut status = -1;
            ok(aclrtStreamQuery(env.stream, &mut status), "query");
            assert_eq!(status, 0);
            assert_eq!(acldvppGetPicDescWidth(d.desc), 0);
            // A progressive frame marker, arithmetic and lossless ones, patched into a baseline file.
            let baseline = encode(64, 64, false, false, "420");
            let sof = baseline
                .windows(2)
                .position(|m| m == [0xFF, 0xC0])
                .expect("SOF0");
            for marker in [0xC2u8, 0xC3, 0xC5, 0xC9, 0xCA] {
                let mut patched = baseline.clone();
                patched[sof + 1] = marker;
                let p = upload(&patched);
                assert_eq!(
                    acldvppJpegDecodeAsync(d.ch, p, patched.len() as u32, d.desc, env.stream),
                    148052,
                    "{marker:#x}"
                );
                ok(acldvppFree(p), "free");
            }
            ok(aclrtSynchronizeStream(env.stream), "sync");
            for p in [input, tiny, d.input, d.out] {
                ok(acldvppFree(p), "free");
            }
            ok(acldvppDestroyChannel(d.ch), "");
            ok(acldvppDestroyChannelDesc(d.ch), "");
            ok(acldvppDestroyPicDesc(d.desc), "");
            assert!(findings().is_empty(), "{:?}", findings());
            teardown(env);
        },
    );
}

#[test]
fn dv7_bad_input_is_an_error_code_never_a_crash() {
    isolated("dv7_bad_input_is_an_error_code_never_a_crash", || {
        let env = setup();
        let jpeg = encode(48, 40, false, false, "420");
        let d = prepare_decode(48, 40);
        let input = media(jpeg.len());
        // Truncated at every offset: each is refused at submission, or decodes, or fails
        // when it runs; the stream's synchronisation reports that failure.
        for n in 0..jpeg.len() {
            // SAFETY: `input` holds `jpeg.len()` bytes.
            unsafe { std::ptr::copy(jpeg.as_ptr(), input.cast::<u8>(), n) };
            let (mut w, mut h, mut c) = (0, 0, 0);
            let _ = acldvppJpegGetImageInfo(jpeg.as_ptr().cast(), n as u32, &mut w, &mut h, &mut c);
            if acldvppJpegDecodeAsync(d.ch, input, n.max(1) as u32, d.desc, env.stream) == 0 {
                let r = aclrtSynchronizeStream(env.stream);
                assert!(r == 0 || r == 507000, "offset {n}: {r}");
                if r != 0 {
                    assert_eq!(acldvppGetPicDescRetCode(d.desc), 507000);
                }
            }
        }
        // Corrupt markers and a 65535x65535 header.
        let sof = jpeg
            .windows(2)
            .position(|m| m == [0xFF, 0xC0])
            .expect("SOF0");
        let mut huge = jpeg.clone();
        huge[sof + 5..sof + 9].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
        let mut cases = vec![huge];
        for i in (2..jpeg.len()).step_by(7) {
            let mut c = jpeg.clone();
            c[i] ^= 0xFF;
            cases.push(c);
        }
        for bytes in cases {
            let p = upload(&bytes);
            let (mut w, mut h, mut c) = (0, 0, 0);
            let _ = acldvppJpegGetImageInfo(
                bytes.as_ptr().cast(),
                bytes.len() as u32,
                &mut w,
                &mut h,
                &mut c,
            );
            let mut size = 0;
            let _ =
                acldvppJpegPredictDecSize(bytes.as_ptr().cast(), bytes.len() as u32, 1, &mut size);
            if acldvppJpegDecodeAsync(d.ch, p, bytes.len() as u32, d.desc, env.stream) == 0 {
                let r = aclrtSynchronizeStream(env.stream);
                assert!(r == 0 || r == 507000, "{r}");
            }
            ok(acldvppFree(p), "free");
        }
        let huge_only = {
            let mut h = jpeg.clone();
            h[sof + 5..sof + 9].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
            h
        };
        let (mut w, mut h, mut c) = (0, 0, 0);
        ok(
            acldvppJpegGetImageInfo(
                huge_only.as_ptr().cast(),
                huge_only.len() as u32,
                &mut w,
                &mut h,
                &mut c,
            ),
            "a huge header is readable",
        );
        assert_eq!((w, h), (65535, 65535));
        let p = upload(&huge_only);
        assert_eq!(
            acldvppJpegDecodeAsync(d.ch, p, huge_only.len() as u32, d.desc, env.stream),
            100000
        );
        ok(acldvppFree(p), "free");
        for p in [input, d.input, d.out] {
            ok(acldvppFree(p), "free");
        }
        ok(acldvppDestroyChannel(d.ch), "");
        ok(acldvppDestroyChannelDesc(d.ch), "");
        ok(acldvppDestroyPicDesc(d.desc), "");
        assert!(findings().is_empty(), "{:?}", findings());
        teardown(env);
    });
}

#[test]
fn dv9_bilinear_and_nearest_resize_match_the_references() {
    isolated(
        "dv9_bilinear_and_nearest_resize_match_the_references",
        || {
            let env = setup();
            let (w, h) = (64u32, 48u32);
            let mut src = vec![0u8; (w * h * 3 / 2) as usize];
            for (i, b) in src.iter_mut().enumerate() {
                let (x, y) = (i % w as usize, i / w as usize);
                *b = ((x * 7 + y * 13) % 251) as u8 ^ ((x / 8) as u8 * 16);
            }
            for (dw, dh) in [(32u32, 24u32), (100, 70), (40, 30), (128, 96)] {
                let out = resize(&env, &src, w, h, dw, dh, 1);
                let want = reference_bilinear(
                    &src[..(w * h) as usize],
                    w as usize,
                    h as usize,
                    dw as usize,
                    dh as usize,
                );
                let worst = want
                    .iter()
                    .zip(&out)
                    .map(|(a, b)| (a - f32::from(*b)).abs())
                    .fold(0.0, f32::max);
                assert!(worst <= 1.5, "bilinear {dw}x{dh}: off by {worst}");
                let near = resize(&env, &src, w, h, dw, dh, 2);
                for y in 0..dh as usize {
                    for x in 0..dw as usize {
                        let sx = (x * w as usize / dw as usize).min(w as usize - 1);
                        let sy = (y * h as usize / dh as usize).min(h as usize - 1);
                        assert_eq!(
                            near[y * dw as usize + x],
                            src[sy * w as usize + sx],
                            "nearest {dw}x{dh} at {x},{y}"
                        );
                    }
                }
                // The chroma plane is resized as a 2-channel picture: a constant U, V stays.
            }
            let mut flat = vec![90u8; (w * h) as usize];
            flat.extend((0..w * h / 2).map(|i| if i % 2 == 0 { 60 } else { 200 }));
            let out = resize(&env, &flat, w, h, 30, 20, 1);
            assert!(
                out[30 * 20..].chunks(2).all(|p| p == [60, 200]),
                "chroma kept interleaved"
            );
            assert!(findings().is_empty(), "{:?}", findings());
            teardown(env);
        },
    );
}

#[test]
fn dv9_geometry_interpolation_and_format_are_checked_at_submission() {
    isolated(
        "dv9_geometry_interpolation_and_format_are_checked_at_submission",
        || {
            let env = setup();
            let src = media(64 * 48 * 3 / 2);
            let out = media(32 * 24 * 3 / 2);
            let ch = channel(1);
            let cfg = acldvppCreateResizeConfig();
            let good_in = pic(src, 64 * 48 * 3 / 2, 1, 64, 48, 64, 48);
            let good_out = pic(out, 32 * 24 * 3 / 2, 1, 32, 24, 32, 24);
            for (w, h, ws, hs, size) in [
                (63, 48, 64, 48, 4608),
                (8, 48, 64, 48, 4608),
                (64, 48, 60, 48, 4608),
                (64, 48, 64, 48, 4000),
                (64, 4, 64, 4, 4608),
            ] {
                let bad = pic(src, size, 1, w, h, ws, hs);
                assert_eq!(
                    acldvppVpcResizeAsync(ch, bad, good_out, cfg, env.stream),
                    100000,
                    "{w}x{h} {ws}x{hs} {size}"
                );
                ok(acldvppDestroyPicDesc(bad), "");
            }
            ok(acldvppSetResizeConfigInterpolation(cfg, 5), "5 is defined");
            assert_eq!(
                acldvppVpcResizeAsync(ch, good_in, good_out, cfg, env.stream),
                200006
            );
            assert_eq!(acldvppSetResizeConfigInterpolation(cfg, 6), 100000);
            ok(acldvppSetResizeConfigInterpolation(cfg, 1), "");
            assert_eq!(acldvppGetResizeConfigInterpolation(cfg), 1);
            ok(acldvppSetPicDescFormat(good_in, 12), "RGB");
            assert_eq!(
                acldvppVpcResizeAsync(ch, good_in, good_out, cfg, env.stream),
                200006
            );
            ok(acldvppSetPicDescFormat(good_in, 2), "NV21 in, NV12 out");
            ok(
                acldvppVpcResizeAsync(ch, good_in, good_out, cfg, env.stream),
                "resize",
            );
            ok(aclrtSynchronizeStream(env.stream), "sync");
            for d in [good_in, good_out] {
                ok(acldvppDestroyPicDesc(d), "");
            }
            ok(acldvppDestroyResizeConfig(cfg), "");
            ok(acldvppDestroyChannel(ch), "");
            ok(acldvppDestroyChannelDesc(ch), "");
            ok(acldvppFree(src), "");
            ok(acldvppFree(out), "");
            assert!(findings().is_empty(), "{:?}", findings());
            teardown(env);
        },
    );
}

#[test]
fn dv3_channel_lifecycle_modes_and_148051() {
    isolated("dv3_channel_lifecycle_modes_and_148051", || {
        let env = setup();
        let ch = acldvppCreateChannelDesc();
        assert_eq!(acldvppSetChannelDescMode(ch, 0), 100000);
        assert_eq!(acldvppSetChannelDescMode(ch, 16), 100000);
        ok(acldvppSetChannelDescMode(ch, 1), "VPC only");
        ok(acldvppCreateChannel(ch), "create");
        assert_eq!(acldvppCreateChannel(ch), 100000, "a second channel");
        assert_eq!(
            acldvppSetChannelDescMode(ch, 3),
            100000,
            "mode after the channel"
        );
        assert_eq!(acldvppDestroyChannelDesc(ch), 148051);
        // A decode on a VPC-only channel.
        let d = prepare_decode(64, 64);
        assert_eq!(
            acldvppJpegDecodeAsync(ch, d.input, d.len, d.desc, env.stream),
            100000
        );
        ok(acldvppDestroyChannel(ch), "destroy");
        assert_eq!(acldvppDestroyChannel(ch), 100000, "no channel any more");
        assert_eq!(
            acldvppJpegDecodeAsync(ch, d.input, d.len, d.desc, env.stream),
            100000
        );
        ok(acldvppDestroyChannelDesc(ch), "destroy desc");
        // A destroyed description used again.
        assert_eq!(acldvppCreateChannel(ch), 100000);
        // Without a mode, every mode.
        let all = acldvppCreateChannelDesc();
        ok(acldvppCreateChannel(all), "no mode");
        ok(
            acldvppJpegDecodeAsync(all, d.input, d.len, d.desc, env.stream),
            "decode",
        );
        ok(aclrtSynchronizeStream(env.stream), "sync");
        ok(acldvppDestroyChannel(all), "");
        ok(acldvppDestroyChannelDesc(all), "");
        ok(acldvppDestroyChannel(d.ch), "");
        ok(acldvppDestroyChannelDesc(d.ch), "");
        ok(acldvppDestroyPicDesc(d.desc), "");
        ok(acldvppFree(d.input), "");
        ok(acldvppFree(d.out), "");
        let r = rules();
        assert_eq!(
            r.iter().filter(|f| *f == "DV3").count(),
            5,
            "{:?}",
            findings()
        );
        assert_eq!(
            r.iter().filter(|f| *f == "DV10").count(),
            1,
            "{:?}",
            findings()
        );
        teardown(env);
    });
}

#[test]
fn dv2_dv5_media_memory_alignment_pairs_and_context() {
    isolated("dv2_dv5_media_memory_alignment_pairs_and_context", || {
        ok(aclInit(std::ptr::null()), "init");
        let mut p = null_mut();
        assert_eq!(acldvppMalloc(&mut p, 100), 107002, "no context");
        let env = {
            ok(aclrtSetDevice(0), "");
            let mut ctx = null_mut();
            ok(aclrtCreateContext(&mut ctx, 0), "");
            let mut stream = null_mut();
            ok(aclrtCreateStream(&mut stream), "");
            Env { stream }
        };
        for size in [1usize, 31, 32, 33, 1000, 4096] {
            let p = media(size);
            assert_eq!(p as usize % 128, 0, "{size}: 128-byte aligned");
            // ALIGN_UP(size, 32) + 32 usable bytes: the last one is writable.
            let usable = size.div_ceil(32) * 32 + 32;
            // SAFETY: the simulator gives `usable` bytes.
            unsafe { p.cast::<u8>().add(usable - 1).write(1) };
            ok(acldvppFree(p), "free");
        }
        let mut dev = null_mut();
        ok(aclrtMalloc(&mut dev, 4096, 0), "aclrtMalloc");
        assert_eq!(acldvppFree(dev), 100000);
        let m = media(64);
        assert_eq!(aclrtFree(m), 107000);
        // A decode from aclrtMalloc memory.
        let d = prepare_decode(64, 64);
        assert_eq!(
            acldvppJpegDecodeAsync(d.ch, dev, 64, d.desc, env.stream),
            100000
        );
        ok(aclrtFree(dev), "");
        ok(acldvppFree(m), "");
        ok(acldvppDestroyChannel(d.ch), "");
        ok(acldvppDestroyChannelDesc(d.ch), "");
        ok(acldvppDestroyPicDesc(d.desc), "");
        ok(acldvppFree(d.input), "");
        ok(acldvppFree(d.out), "");
        assert_eq!(rules(), ["DV5", "DV5", "DV5"], "{:?}", findings());
        teardown(env);
    });
}

#[test]
fn dv6_dv10_hazards_while_a_decode_is_pending_are_flagged() {
    isolated(
        "dv6_dv10_hazards_while_a_decode_is_pending_are_flagged",
        || {
            let env = setup();
            let d = prepare_decode(64, 64);
            hold(&env, 200_000);
            ok(submit(&env, &d), "decode");
            // Reads of what the decode writes, before it ran: the values set before.
            assert_eq!(acldvppGetPicDescWidth(d.desc), 0);
            let _ = acldvppGetPicDescRetCode(d.desc);
            ok(acldvppSetPicDescSize(d.desc, 1), "a setter while pending");
            // A synchronous read of the output.
            let mut host = vec![0u8; 16];
            ok(
                aclrtMemcpy(host.as_mut_ptr().cast(), 16, d.out, 16, 2),
                "read the output",
            );
            // A destroy and a free while pending: the task still runs.
            ok(acldvppDestroyPicDesc(d.desc), "destroy desc");
            ok(acldvppFree(d.input), "free the input");
            ok(acldvppDestroyChannel(d.ch), "destroy the channel");
            ok(aclrtSynchronizeStream(env.stream), "the decode still ran");
            ok(acldvppDestroyChannelDesc(d.ch), "");
            ok(acldvppFree(d.out), "");
            let r = rules();
            assert_eq!(
                r.iter().filter(|f| *f == "DV6").count(),
                4,
                "{:?}",
                findings()
            );
            assert_eq!(
                r.iter().filter(|f| *f == "DV10").count(),
                3,
                "{:?}",
                findings()
            );
            teardown(env);
        },
    );
}

#[test]
fn dv6_a_resize_reading_a_pending_decodes_description_is_flagged() {
    isolated(
        "dv6_a_resize_reading_a_pending_decodes_description_is_flagged",
        || {
            let env = setup();
            let d = prepare_decode(64, 64);
            hold(&env, 100_000);
            ok(submit(&env, &d), "decode");
            ok(acldvppSetPicDescWidth(d.desc, 64), "");
            ok(acldvppSetPicDescHeight(d.desc, 64), "");
            ok(acldvppSetPicDescWidthStride(d.desc, 64), "");
            ok(acldvppSetPicDescHeightStride(d.desc, 64), "");
            let out = media(32 * 32 * 3 / 2);
            let out_desc = pic(out, 32 * 32 * 3 / 2, 1, 32, 32, 32, 32);
            let cfg = acldvppCreateResizeConfig();
            ok(
                acldvppVpcResizeAsync(d.ch, d.desc, out_desc, cfg, env.stream),
                "resize",
            );
            ok(aclrtSynchronizeStream(env.stream), "sync");
            assert!(rules().contains(&"DV6".to_string()), "{:?}", findings());
            aclsimClearFindings();
            // Ordered by the stream and described apart: clean.
            let in_desc = pic(d.out, 64 * 64 * 3 / 2, 1, 64, 64, 64, 64);
            ok(submit(&env, &d), "decode");
            ok(
                acldvppVpcResizeAsync(d.ch, in_desc, out_desc, cfg, env.stream),
                "resize",
            );
            ok(aclrtSynchronizeStream(env.stream), "sync");
            assert!(findings().is_empty(), "{:?}", findings());
            for x in [d.desc, out_desc, in_desc] {
                ok(acldvppDestroyPicDesc(x), "");
            }
            ok(acldvppDestroyResizeConfig(cfg), "");
            ok(acldvppDestroyChannel(d.ch), "");
            ok(acldvppDestroyChannelDesc(d.ch), "");
            for p in [d.input, d.out, out] {
                ok(acldvppFree(p), "");
            }
            teardown(env);
        },
    );
}

#[test]
fn dv4_a_channel_used_on_two_streams_at_once_is_flagged() {
    isolated(
        "dv4_a_channel_used_on_two_streams_at_once_is_flagged",
        || {
            let env = setup();
            let mut other = null_mut();
            ok(aclrtCreateStream(&mut other), "");
            let d = prepare_decode(64, 64);
            hold(&env, 100_000);
            ok(submit(&env, &d), "decode");
            ok(
                acldvppJpegDecodeAsync(d.ch, d.input, d.len, d.desc, other),
                "on another stream",
            );
            ok(aclrtSynchronizeStream(env.stream), "");
            ok(aclrtSynchronizeStream(other), "");
            assert_eq!(rules(), ["DV4"], "{:?}", findings());
            ok(aclrtDestroyStream(other), "");
            ok(acldvppDestroyChannel(d.ch), "");
            ok(acldvppDestroyChannelDesc(d.ch), "");
            ok(acldvppDestroyPicDesc(d.desc), "");
            ok(acldvppFree(d.input), "");
            ok(acldvppFree(d.out), "");
            teardown(env);
        },
    );
}

#[test]
fn p3_dv6_an_injected_task_failure_reaches_the_sync_and_the_ret_code() {
    isolated(
        "p3_dv6_an_injected_task_failure_reaches_the_sync_and_the_ret_code",
        || {
            let env = setup();
            let d = prepare_decode(64, 64);
            ok(aclsimInjectTaskFailure(env.stream, 507011), "inject");
            ok(submit(&env, &d), "the submission succeeds");
            assert_eq!(aclrtSynchronizeStream(env.stream), 507011);
            assert_eq!(acldvppGetPicDescRetCode(d.desc), 507011);
            // The next one succeeds and clears the return code.
            ok(submit(&env, &d), "again");
            ok(aclrtSynchronizeStream(env.stream), "");
            assert_eq!(acldvppGetPicDescRetCode(d.desc), 0);
            // A failure injected on the call itself: nothing queued.
            let name = CString::new("acldvppJpegDecodeAsync").unwrap();
            ok(aclsimInjectFault(name.as_ptr(), 507000, 1), "");
            assert_eq!(submit(&env, &d), 507000);
            ok(acldvppDestroyChannel(d.ch), "");
            ok(acldvppDestroyChannelDesc(d.ch), "");
            ok(acldvppDestroyPicDesc(d.desc), "");
            ok(acldvppFree(d.input), "");
            ok(acldvppFree(d.out), "");
            assert!(findings().is_empty(), "{:?}", findings());
            teardown(env);
        },
    );
}

#[test]
fn e2_a_decode_on_one_stream_is_joined_by_an_event_before_a_resize_on_another() {
    isolated(
        "e2_a_decode_on_one_stream_is_joined_by_an_event_before_a_resize_on_another",
        || {
            let env = setup();
            let mut other = null_mut();
            ok(aclrtCreateStream(&mut other), "");
            let d = prepare_decode(64, 64);
            let vpc = channel(1);
            let mut ev = null_mut();
            ok(aclrtCreateEvent(&mut ev), "");
            hold(&env, 50_000);
            ok(submit(&env, &d), "decode");
            ok(aclrtRecordEvent(ev, env.stream), "");
            ok(aclrtStreamWaitEvent(other, ev), "");
            let in_desc = pic(d.out, 64 * 64 * 3 / 2, 1, 64, 64, 64, 64);
            let out = media(32 * 32 * 3 / 2);
            let out_desc = pic(out, 32 * 32 * 3 / 2, 1, 32, 32, 32, 32);
            let cfg = acldvppCreateResizeConfig();
            ok(
                acldvppVpcResizeAsync(vpc, in_desc, out_desc, cfg, other),
                "resize",
            );
            ok(aclrtSynchronizeStream(other), "");
            // The resize read the decoded picture: its luma is not the memory's zeros.
            // SAFETY: 32 * 32 bytes of the output, the task is done.
            let luma = unsafe { std::slice::from_raw_parts(out.cast::<u8>(), 32 * 32) };
            assert!(luma.iter().any(|&b| b != 0));
            ok(aclrtSynchronizeStream(env.stream), "");
            assert!(findings().is_empty(), "{:?}", findings());
            ok(aclrtDestroyEvent(ev), "");
            ok(aclrtDestroyStream(other), "");
            for x in [d.desc, in_desc, out_desc] {
                ok(acldvppDestroyPicDesc(x), "");
            }
            ok(acldvppDestroyResizeConfig(cfg), "");
            for c in [d.ch, vpc] {
                ok(acldvppDestroyChannel(c), "");
                ok(acldvppDestroyChannelDesc(c), "");
            }
            for p in [d.input, d.out, out] {
                ok(acldvppFree(p), "");
            }
            teardown(env);
        },
    );
}

#[test]
fn p2_d3_live_media_objects_are_reported() {
    isolated("p2_d3_live_media_objects_are_reported", || {
        let env = setup();
        let d = prepare_decode(64, 64);
        assert!(aclsimLiveObjectCount() >= 5);
        ok(aclrtDestroyStream(env.stream), "");
        let mut ctx = null_mut();
        ok(aclrtGetCurrentContext(&mut ctx), "");
        ok(aclrtDestroyContext(ctx), "");
        ok(
            aclrtResetDevice(0),
            "the reset lists the channel and the memory",
        );
        ok(aclFinalize(), "finalize lists the descriptions");
        let f = findings();
        assert!(
            f.iter()
                .any(|(r, m)| r == "D3" && m.contains("DVPP channel")),
            "{f:?}"
        );
        assert!(
            f.iter()
                .any(|(r, m)| r == "P2" && m.contains("DVPP picture description")),
            "{f:?}"
        );
        let _ = d;
    });
}

#[test]
fn p1_media_calls_before_init_are_refused() {
    isolated("p1_media_calls_before_init_are_refused", || {
        let mut p = null_mut();
        assert_eq!(acldvppMalloc(&mut p, 64), 100001);
        assert!(acldvppCreateChannelDesc().is_null());
        assert!(acldvppCreatePicDesc().is_null());
        let jpeg = encode(64, 64, false, false, "420");
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
        assert_eq!(acldvppMalloc(null_mut(), 64), 100000, "NULL first");
    });
}
