//! Media preprocessing, DVPP V1 (`acldvpp*`, DV2-DV11): media memory (here), channels
//! ([`channel`]), picture descriptions and resize configurations ([`desc`]), the JPEG header
//! functions and the decode ([`jpeg`]), the resize ([`resize`]).
//!
//! Channel descriptions, picture descriptions and resize configurations are host objects
//! behind fake handles (never dereferenced). Each media task holds its channel, its
//! descriptions, its configuration (DV10) and its memory (M2) until it is done, and is
//! registered with the memory it reads and writes (DV6).
//!
//! Layer: C entry points (`api`); may import every layer below and the crate root's shared
//! helpers. This file holds the helpers its children share.

use std::ffi::c_void;

use crate::calls::CallId;
use crate::state::dvpp::TOMBS;
use crate::state::{Alloc, Rt, code, decode, handle, next_alloc_generation};
use crate::{Call, R, calls, enter, errmsg, ffi, non_null, out, rt_of};

mod channel;
mod desc;
mod jpeg;
mod resize;

pub use channel::{
    acldvppCreateChannel, acldvppCreateChannelDesc, acldvppDestroyChannel,
    acldvppDestroyChannelDesc, acldvppSetChannelDescMode, acldvppSetChannelDescParam,
};
pub use desc::{
    acldvppCreatePicDesc, acldvppCreateResizeConfig, acldvppDestroyPicDesc,
    acldvppDestroyResizeConfig, acldvppGetPicDescData, acldvppGetPicDescFormat,
    acldvppGetPicDescHeight, acldvppGetPicDescHeightStride, acldvppGetPicDescRetCode,
    acldvppGetPicDescSize, acldvppGetPicDescWidth, acldvppGetPicDescWidthStride,
    acldvppGetResizeConfigInterpolation, acldvppSetPicDescData, acldvppSetPicDescFormat,
    acldvppSetPicDescHeight, acldvppSetPicDescHeightStride, acldvppSetPicDescSize,
    acldvppSetPicDescWidth, acldvppSetPicDescWidthStride, acldvppSetResizeConfigInterpolation,
};
pub use jpeg::{
    acldvppJpegDecodeAsync, acldvppJpegGetImageInfo, acldvppJpegGetImageInfoV2,
    acldvppJpegPredictDecSize,
};
pub use resize::acldvppVpcResizeAsync;

/// As [`ffi`] for the functions that return a value instead of an error code (0 or NULL
/// on failure, which sets the recent error message).
fn ffi_val<T: Copy>(default: T, f: impl FnOnce() -> Result<T, i32>) -> T {
    let mut v = default;
    let _ = ffi(|| {
        v = f()?;
        Ok(())
    });
    v
}

/// Remembers a destroyed handle (DV10).
fn bury(rt: &mut Rt, h: usize, kind: &'static str) {
    // The oldest goes first (not the lowest address: that would drop every channel
    // description's tomb, however recent, before any picture description's).
    if rt.dvpp.tombs.insert(h, kind).is_none() {
        rt.dvpp.tomb_order.push_back(h);
    }
    while rt.dvpp.tombs.len() > TOMBS {
        let Some(old) = rt.dvpp.tomb_order.pop_front() else {
            break;
        };
        rt.dvpp.tombs.remove(&old);
    }
}

/// The id of a live object behind handle `h` (`live` says whether the registry has it, not
/// destroyed): a destroyed one is a DV10 finding; both are 100000.
fn object_id(
    rt: &mut Rt,
    call: &str,
    base: usize,
    h: usize,
    live: impl Fn(&Rt, u64) -> bool,
) -> Result<u64, i32> {
    if let Some(id) = decode(base, h)
        && live(rt, id)
    {
        return Ok(id);
    }
    if let Some(kind) = rt.dvpp.tombs.get(&h).copied() {
        rt.report(
            "DV10",
            format!(
                "{call}: {kind} {h:#x} was destroyed: a destroyed {kind} must not be used (nor destroyed) again; the call returns 100000"
            ),
        );
        return Err(errmsg::why(
            code::INVALID_PARAM,
            format!("{kind} {h:#x} was destroyed (DV10)"),
        ));
    }
    Err(errmsg::why(
        code::INVALID_PARAM,
        format!("{h:#x} is not a handle of this kind"),
    ))
}

/// The start of the media allocation that holds `[p, +n)` (DV5); anything else is a DV5
/// finding and 100000.
fn media_range(rt: &mut Rt, call: &str, role: &str, p: usize, n: usize) -> Result<usize, i32> {
    let end = p.saturating_add(n.max(1));
    let found = rt
        .allocs
        .range(..=p)
        .next_back()
        .filter(|(start, a)| p < **start + a.size)
        .map(|(start, a)| (*start, a.dvpp, a.freed, end <= *start + a.size));
    let problem = match found {
        Some((start, true, false, true)) => return Ok(start),
        Some((start, true, true, _)) => {
            format!("{p:#x} lies in media allocation {start:#x}, already freed")
        }
        Some((start, true, false, false)) => {
            format!("[{p:#x}, +{n}) overruns media allocation {start:#x}")
        }
        Some((start, false, ..)) => format!(
            "{p:#x} lies in allocation {start:#x} of aclrtMalloc or aclrtMallocHost, not of acldvppMalloc"
        ),
        None => format!("{p:#x} is not memory of acldvppMalloc"),
    };
    rt.report(
        "DV5",
        format!(
            "{call}: the {role} {problem}: every JPEGD and VPC input and output is media memory from acldvppMalloc; the call returns 100000"
        ),
    );
    Err(errmsg::why(
        code::INVALID_PARAM,
        format!("the {role} is not media memory (DV5)"),
    ))
}

/// `acldvppMalloc`'s alignment of the start (DV5).
const MEDIA_ALIGN: usize = 128;

/// `ALIGN_UP(size, 32) + 32` (DV5), `None` on overflow.
fn media_size(size: usize) -> Option<usize> {
    size.checked_next_multiple_of(32)?.checked_add(32)
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppMalloc(devPtr: *mut *mut c_void, size: usize) -> i32 {
    calls::count(CallId::acldvppMalloc);
    ffi(|| {
        non_null(&[devPtr as usize])?;
        let mut g = enter("acldvppMalloc", Call::Action)?;
        let rt = rt_of(&mut g)?;
        if size == 0 {
            return Err(errmsg::why(code::INVALID_PARAM, "a size of 0"));
        }
        // DV2: after a device is set, in a current context (sim choice: 107002 otherwise).
        let ctx = rt.cur_ctx()?;
        let device = rt.contexts.get(&ctx).map_or(-1, |c| c.device);
        let (Some(usable), Some(padded)) = (
            media_size(size),
            media_size(size).and_then(|u| u.checked_add(MEDIA_ALIGN)),
        ) else {
            return Err(code::RT_MEMORY_ALLOCATION);
        };
        rt.extra.charge(false, device, usable as u64)?;
        // SAFETY: plain C allocation of `padded` bytes; checked for NULL below.
        let base = unsafe { libc::calloc(1, padded) };
        if base.is_null() {
            rt.extra.uncharge(false, device, usable as u64);
            return Err(code::RT_MEMORY_ALLOCATION);
        }
        let offset = (MEDIA_ALIGN - (base as usize) % MEDIA_ALIGN) % MEDIA_ALIGN;
        // SAFETY: `offset < MEDIA_ALIGN`, so `usable` bytes from there stay inside the block.
        let p = unsafe { base.cast::<u8>().add(offset) }.cast::<c_void>();
        rt.allocs.insert(
            p as usize,
            Alloc {
                base: base as usize,
                generation: next_alloc_generation(),
                size: usable,
                host: false,
                device,
                uses: 0,
                freed: false,
                dvpp: true,
            },
        );
        out(devPtr, p)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppFree(devPtr: *mut c_void) -> i32 {
    calls::count(CallId::acldvppFree);
    ffi(|| free(devPtr as usize))
}

fn free(key: usize) -> R {
    non_null(&[key])?;
    let mut g = enter("acldvppFree", Call::Action)?;
    let rt = rt_of(&mut g)?;
    let (dvpp, uses) = match rt.allocs.get(&key) {
        Some(a) if !a.freed => (a.dvpp, a.uses),
        _ => return Err(code::RT_PARAM_INVALID),
    };
    if !dvpp {
        rt.report(
            "DV5",
            format!(
                "acldvppFree({key:#x}) on memory of aclrtMalloc or aclrtMallocHost: acldvppMalloc/acldvppFree pair; the call returns 100000"
            ),
        );
        return Err(errmsg::why(
            code::INVALID_PARAM,
            "not memory of acldvppMalloc (DV5)",
        ));
    }
    if uses > 0 {
        let users = crate::rules::dvpp::memory_users(rt, key, 1);
        crate::rules::dvpp::report_in_use(
            rt,
            "acldvppFree",
            format!("media memory {key:#x} is freed"),
            &users,
        );
        if let Some(a) = rt.allocs.get_mut(&key) {
            a.freed = true;
        }
        return Ok(());
    }
    // SAFETY: no task uses it (`uses == 0`).
    unsafe { rt.release_alloc(key) };
    Ok(())
}

/// The handle of object `id` of `base`, for the functions that create one.
fn new_handle(base: usize, id: u64) -> *mut c_void {
    handle(base, id) as *mut c_void
}
