//! Arbitrary bytes as a JPEG file: the typed layer's header reader
//! (`ascend_typestate::JpegHeader::parse`), then the simulator's DVPP V1 path through the C
//! ABI: `acldvppJpegGetImageInfoV2` on the bytes, and when it reads a header,
//! `acldvppJpegPredictDecSize`, the bytes copied into media memory (`acldvppMalloc`) and
//! `acldvppJpegDecodeAsync` into an output of the predicted size (skipped above 512 KiB: the
//! decode is then submitted with a small output, which it must refuse), synchronised; a
//! picture that decodes is resized to 32x32 (`acldvppVpcResizeAsync`). Everything is
//! released after each input.
//!
//! Asserts: no crash, panic or sanitizer error; a header the typed layer accepts is one
//! the runtime predicts a decode for; sizes beyond JPEGD's 16384x16384 are refused with an
//! error code at submission, before any allocation; after each input nothing is left
//! (the live objects are those before it). Hangs and unbounded allocations are libFuzzer's
//! `-timeout` and `-rss_limit_mb`.
#![no_main]

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use ascendcl as sim;
use libfuzzer_sys::fuzz_target;

/// `PIXEL_FORMAT_YUV_SEMIPLANAR_420` (NV12) and `..._YVU_...` (NV21).
const NV12: i32 = 1;
const NV21: i32 = 2;
/// The largest output decoded: 512 KiB (about 590 x 590 pixels). The per-pixel conversion
/// costs about half a microsecond under coverage instrumentation: a 4000 x 3000 picture
/// takes seconds, and would crowd out every other input.
const MAX_OUTPUT: u32 = 512 << 10;
/// JPEGD's largest width and height (DV7).
const JPEGD_MAX: u32 = 16384;
/// The resize's output: 32 x 32 NV12.
const SIDE: u32 = 32;

/// The handles kept for the process: its stream and a channel for decodes and resizes.
struct Env {
    stream: usize,
    channel: usize,
}

/// Device 0 in its default context, a stream and a channel (every mode), once per
/// process; findings are not printed.
fn setup() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        sim::aclsimSetQuiet(1);
        assert_eq!(sim::aclInit(null()), 0, "aclInit");
        assert_eq!(sim::aclrtSetDevice(0), 0, "aclrtSetDevice");
        let mut stream = null_mut();
        assert_eq!(sim::aclrtCreateStream(&mut stream), 0, "aclrtCreateStream");
        let channel = sim::acldvppCreateChannelDesc();
        assert!(!channel.is_null(), "acldvppCreateChannelDesc");
        assert_eq!(
            sim::acldvppCreateChannel(channel),
            0,
            "acldvppCreateChannel"
        );
        Env {
            stream: stream as usize,
            channel: channel as usize,
        }
    })
}

/// Media memory of `size` bytes (at least 1), holding `bytes` at its start.
fn media(size: usize, bytes: &[u8]) -> *mut c_void {
    let mut p = null_mut();
    assert_eq!(sim::acldvppMalloc(&mut p, size.max(1)), 0, "acldvppMalloc");
    // SAFETY: `p` holds at least `size >= bytes.len()` bytes (acldvppMalloc) and is not
    // the harness's `bytes`.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.cast::<u8>(), bytes.len()) };
    p
}

/// A picture description of `data` (`size` bytes) in `format`, `w` x `h`, strides `ws` x `hs`.
fn pic(data: *mut c_void, size: u32, format: i32, dims: [u32; 4]) -> *mut c_void {
    let d = sim::acldvppCreatePicDesc();
    assert!(!d.is_null(), "acldvppCreatePicDesc");
    assert_eq!(sim::acldvppSetPicDescData(d, data), 0);
    assert_eq!(sim::acldvppSetPicDescSize(d, size), 0);
    assert_eq!(sim::acldvppSetPicDescFormat(d, format), 0);
    assert_eq!(sim::acldvppSetPicDescWidth(d, dims[0]), 0);
    assert_eq!(sim::acldvppSetPicDescHeight(d, dims[1]), 0);
    assert_eq!(sim::acldvppSetPicDescWidthStride(d, dims[2]), 0);
    assert_eq!(sim::acldvppSetPicDescHeightStride(d, dims[3]), 0);
    d
}

fn release(descs: &[*mut c_void], mem: &[*mut c_void]) {
    for &d in descs {
        assert_eq!(sim::acldvppDestroyPicDesc(d), 0, "acldvppDestroyPicDesc");
    }
    for &p in mem {
        assert_eq!(sim::acldvppFree(p), 0, "acldvppFree");
    }
}

/// Resizes the decoded picture (`dims`: w, h, ws, hs as the decode wrote them) to 32x32.
fn resize(env: &Env, data: *mut c_void, size: u32, format: i32, dims: [u32; 4], nearest: bool) {
    let out_bytes = SIDE * SIDE * 3 / 2;
    let out = media(out_bytes as usize, &[]);
    let input = pic(data, size, format, dims);
    let output = pic(out, out_bytes, NV12, [SIDE; 4]);
    let config = sim::acldvppCreateResizeConfig();
    assert!(!config.is_null(), "acldvppCreateResizeConfig");
    let interpolation = if nearest { 2 } else { 0 };
    assert_eq!(
        sim::acldvppSetResizeConfigInterpolation(config, interpolation),
        0
    );
    let stream = env.stream as *mut c_void;
    let channel = env.channel as *mut c_void;
    // The decoded sizes are within VPC's input range (DV9) unless wider than 8192.
    let rc = sim::acldvppVpcResizeAsync(channel, input, output, config, stream);
    let fits = dims[0] <= 8192 && dims[1] <= 8192;
    if rc == 0 {
        assert!(fits, "a {dims:?} input resized");
        assert_eq!(sim::aclrtSynchronizeStream(stream), 0, "resize");
        assert_eq!(sim::acldvppGetPicDescRetCode(output), 0, "resize ret code");
    } else {
        assert!(!fits, "acldvppVpcResizeAsync {dims:?}: {rc}");
    }
    assert_eq!(sim::acldvppDestroyResizeConfig(config), 0);
    release(&[input, output], &[out]);
}

fn decode(env: &Env, data: &[u8], format: i32, width: u32, height: u32) {
    let stream = env.stream as *mut c_void;
    let channel = env.channel as *mut c_void;
    let len = data.len() as u32;
    let mut need = 0;
    let predicted = sim::acldvppJpegPredictDecSize(data.as_ptr().cast(), len, format, &mut need);
    if width > JPEGD_MAX || height > JPEGD_MAX {
        assert_ne!(predicted, 0, "a {width}x{height} decode predicted");
    }
    // Too large (or refused): a small output, which the submission must refuse.
    let fits = predicted == 0 && need <= MAX_OUTPUT;
    let size = if fits { need } else { 64 };
    let input = media(data.len(), data);
    let out = media(size as usize, &[]);
    let desc = pic(out, size, format, [0; 4]);
    let rc = sim::acldvppJpegDecodeAsync(channel, input.cast_const(), len, desc, stream);
    if rc == 0 {
        assert!(
            fits,
            "a decode into {size} B submitted ({predicted}, {need} B)"
        );
        let synced = sim::aclrtSynchronizeStream(stream);
        let ret = sim::acldvppGetPicDescRetCode(desc);
        if synced == 0 && ret == 0 {
            let dims = [
                sim::acldvppGetPicDescWidth(desc),
                sim::acldvppGetPicDescHeight(desc),
                sim::acldvppGetPicDescWidthStride(desc),
                sim::acldvppGetPicDescHeightStride(desc),
            ];
            resize(env, out, size, format, dims, len % 2 == 1);
        }
    } else {
        assert!(
            predicted != 0 || !fits,
            "a predicted decode refused at submission: {rc}"
        );
    }
    release(&[desc], &[input, out]);
}

fuzz_target!(|data: &[u8]| {
    let env = setup();
    let before = sim::aclsimLiveObjectCount();
    let typed = ascend_typestate::JpegHeader::parse(data);
    if data.is_empty() || data.len() > u32::MAX as usize {
        return;
    }
    let (mut w, mut h, mut components, mut format) = (0, 0, 0, 0);
    let rc = sim::acldvppJpegGetImageInfoV2(
        data.as_ptr().cast(),
        data.len() as u32,
        &mut w,
        &mut h,
        &mut components,
        &mut format,
    );
    if let Ok(header) = typed {
        assert_eq!(rc, 0, "the runtime reads no header the typed layer read");
        let mut need = 0;
        let predicted = sim::acldvppJpegPredictDecSize(
            data.as_ptr().cast(),
            data.len() as u32,
            NV12,
            &mut need,
        );
        assert_eq!(predicted, 0, "{header:?}: no decode predicted");
    }
    if rc == 0 {
        let out = if data.len() % 4 < 2 { NV12 } else { NV21 };
        decode(env, data, out, w, h);
    }
    // A failed task's code stays for aclrtGetLastError: read it so that none piles up.
    sim::aclrtGetLastError(0);
    sim::aclsimClearFindings();
    assert_eq!(
        sim::aclsimLiveObjectCount(),
        before,
        "objects left by the input"
    );
});
