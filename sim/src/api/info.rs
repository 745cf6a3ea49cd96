//! Versions and diagnostics (P4) and device queries (D8). All of them are queries (allowed
//! inside callbacks, C8) and change no state.
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`, `calls`, `pt`, `trace`),
//! never the reverse.

use std::ffi::{CStr, c_char};
use std::panic::catch_unwind;

use crate::calls::CallId;
use crate::state::code;
use crate::{Call, R, calls, enter, errmsg, ffi, non_null, out, pt, rt_of};

/// `aclrtGetVersion` (deprecated interface version): the AscendCL interface the simulator
/// implements.
pub const INTERFACE_VERSION: (i32, i32, i32) = (1, 16, 0);
/// `aclsysGetVersionStr` of every known package: says it is the simulator.
pub const PACKAGE_VERSION: &str = "8.3.RC1-aclsim";
/// `aclsysGetVersionNum`: 8.3.RC1 as major * 10^7 + minor * 10^5 + release candidate.
pub const PACKAGE_VERSION_NUM: i32 = 80_300_001;
/// Packages `aclsysGetVersionStr`/`Num` know (P4): the directories a CANN install has under
/// `$ASCEND_HOME_PATH/share/info/` (`CANN` on current installs), and `driver` and `firmware`
/// (found through `/etc/ascend_install.info`). Others: 100003, as the runtime answers for a
/// package whose version file it cannot find.
pub const PACKAGES: &[&str] = &[
    "CANN",
    "runtime",
    "compiler",
    "opp",
    "opp_kernel",
    "toolkit",
    "hccl",
    "driver",
    "firmware",
];
/// `ACL_PKG_VERSION_MAX_SIZE`.
const PKG_VERSION_MAX_SIZE: usize = 128;

/// D8 `aclGetDeviceCapability` values (`ACL_DEVICE_INFO_*`).
pub const AI_CORE_NUM: i64 = 8;
pub const VECTOR_CORE_NUM: i64 = 7;
pub const L2_SIZE: i64 = 16 << 20;

#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetVersion(
    majorVersion: *mut i32,
    minorVersion: *mut i32,
    patchVersion: *mut i32,
) -> i32 {
    calls::count(CallId::aclrtGetVersion);
    ffi(|| {
        non_null(&[
            majorVersion as usize,
            minorVersion as usize,
            patchVersion as usize,
        ])?;
        let _g = enter("aclrtGetVersion", Call::Query)?;
        let (a, b, c) = INTERFACE_VERSION;
        out(majorVersion, a)?;
        out(minorVersion, b)?;
        out(patchVersion, c)
    })
}

/// Whether the runtime finds package `name` (P4): the name as given, then (as the runtime
/// tries) with every '-' turned into '_' if it has one, else every '_' into '-'.
fn known_package(name: &str) -> bool {
    let variant = if name.contains('-') {
        name.replace('-', "_")
    } else {
        name.replace('_', "-")
    };
    PACKAGES.contains(&name) || PACKAGES.contains(&variant.as_str())
}

/// Resolves a package name (P4): unknown, non-UTF-8: 100003 (no version file) with a reason.
fn package(pkg: *const c_char) -> R {
    // SAFETY: non-NULL (checked first by the callers), a NUL-terminated string (the API
    // contract of aclsysGetVersionStr/Num).
    let name = unsafe { CStr::from_ptr(pkg) };
    match name.to_str() {
        Ok(n) if known_package(n) => Ok(()),
        _ => Err(errmsg::why(
            code::INVALID_FILE,
            format!(
                "unknown package {:?} (known: {})",
                name.to_string_lossy(),
                PACKAGES.join(", ")
            ),
        )),
    }
}

/// Writes [`PACKAGE_VERSION`], NUL-terminated, into a non-NULL caller buffer.
fn write_version(buf: *mut c_char) {
    let v = PACKAGE_VERSION.as_bytes();
    let n = v.len().min(PKG_VERSION_MAX_SIZE - 1);
    // SAFETY: the caller's buffer holds ACL_PKG_VERSION_MAX_SIZE bytes (P4) and is not
    // NULL (checked first); we write n + 1 <= 128 of them.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buf as *mut u8, n) };
    // SAFETY: as above: byte n < 128.
    let end = unsafe { buf.add(n) };
    // SAFETY: as above.
    unsafe { end.write(0) };
}

#[unsafe(no_mangle)]
pub extern "C" fn aclsysGetVersionStr(pkgName: *mut c_char, versionStr: *mut c_char) -> i32 {
    calls::count(CallId::aclsysGetVersionStr);
    ffi(|| {
        non_null(&[pkgName as usize, versionStr as usize])?;
        let _g = enter("aclsysGetVersionStr", Call::Query)?;
        package(pkgName)?;
        write_version(versionStr);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclsysGetVersionNum(pkgName: *mut c_char, versionNum: *mut i32) -> i32 {
    calls::count(CallId::aclsysGetVersionNum);
    ffi(|| {
        non_null(&[pkgName as usize, versionNum as usize])?;
        let _g = enter("aclsysGetVersionNum", Call::Query)?;
        package(pkgName)?;
        out(versionNum, PACKAGE_VERSION_NUM)
    })
}

/// P4: the reason of the calling thread's last failed runtime call ("name: code: reason"),
/// or NULL if it had none. Works before aclInit and inside callbacks; cannot fail.
#[unsafe(no_mangle)]
pub extern "C" fn aclGetRecentErrMsg() -> *const c_char {
    calls::count(CallId::aclGetRecentErrMsg);
    errmsg::last()
}

/// Interned SoC names: the returned pointer stays valid for the life of the process.
static SOC_NAMES: pt::PMutex<Vec<std::ffi::CString>> = pt::PMutex::new(Vec::new());

fn interned(name: &str) -> *const c_char {
    let mut v = SOC_NAMES.lock();
    if let Some(c) = v.iter().find(|c| c.to_bytes() == name.as_bytes()) {
        return c.as_ptr();
    }
    match std::ffi::CString::new(name) {
        Ok(c) => {
            let p = c.as_ptr();
            v.push(c);
            p
        }
        Err(_) => std::ptr::null(),
    }
}

/// D8: the SoC name ("Ascend310B-aclsim", or `ACLSIM_SOC_NAME`), NULL on failure (before
/// aclInit, or an injected failure; the reason is then the recent error message).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetSocName() -> *const c_char {
    calls::count(CallId::aclrtGetSocName);
    let r = catch_unwind(|| {
        let mut g = enter("aclrtGetSocName", Call::Query)?;
        let rt = rt_of(&mut g)?;
        Ok::<_, i32>(interned(&rt.extra.soc_name))
    });
    match r {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            errmsg::failed(CallId::aclrtGetSocName as usize, e);
            std::ptr::null()
        }
        Err(_) => std::ptr::null(),
    }
}

/// D8: free and total memory of the current context's device: total is
/// `ACLSIM_DEVICE_MEMORY` (default 8 GiB), free is total minus the live device allocations
/// of that device (freed ones still used by pending tasks included) and the work and weight
/// memory of the models the runtime allocated there. Every `attr` reports the same pool.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetMemInfo(attr: i32, free: *mut usize, total: *mut usize) -> i32 {
    calls::count(CallId::aclrtGetMemInfo);
    ffi(|| {
        non_null(&[free as usize, total as usize])?;
        let mut g = enter("aclrtGetMemInfo", Call::Query)?;
        let rt = rt_of(&mut g)?;
        if !(0..=9).contains(&attr) {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("unknown aclrtMemAttr {attr}"),
            ));
        }
        let ctx = rt.cur_ctx()?; // D8
        let dev = rt.contexts.get(&ctx).map_or(-1, |c| c.device);
        let t = rt.extra.device_memory;
        out(total, usize::try_from(t).unwrap_or(usize::MAX))?;
        out(
            free,
            usize::try_from(rt.extra.device_free(dev)).unwrap_or(usize::MAX),
        )
    })
}

/// D8: 107001 for an invalid device id, 100000 for an unknown `deviceInfo`.
#[unsafe(no_mangle)]
pub extern "C" fn aclGetDeviceCapability(deviceId: u32, deviceInfo: i32, value: *mut i64) -> i32 {
    calls::count(CallId::aclGetDeviceCapability);
    ffi(|| {
        non_null(&[value as usize])?;
        let mut g = enter("aclGetDeviceCapability", Call::Query)?;
        let rt = rt_of(&mut g)?;
        if deviceId >= rt.device_count {
            return Err(code::RT_INVALID_DEVICEID);
        }
        let v = match deviceInfo {
            0 => AI_CORE_NUM,
            1 => VECTOR_CORE_NUM,
            2 => L2_SIZE,
            _ => {
                return Err(errmsg::why(
                    code::INVALID_PARAM,
                    format!("unknown aclDeviceInfo {deviceInfo}"),
                ));
            }
        };
        out(value, v)
    })
}
