//! Picture descriptions (DV8, DV10) and resize configurations (DV9): create, destroy, set,
//! get. A setter on a description a pending task uses, and a read of what a pending decode
//! writes (width, height, strides, return code), are DV6 findings.
//!
//! Layer: C entry points; imports its parent (`api::dvpp`) and the layers below.

use std::ffi::c_void;

use super::{bury, ffi_val, new_handle, object_id};
use crate::calls::CallId;
use crate::rules::dvpp::{pic_name, report_in_use, users};
use crate::state::dvpp::{PIC_BASE, PicDesc, RESIZE_BASE, ResizeConfig};
use crate::state::{Rt, STREAM_BASE, code, handle};
use crate::{Call, calls, enter, errmsg, ffi, non_null, rt_of};

/// The live picture description behind `h`.
pub(super) fn pic_id(rt: &mut Rt, call: &str, h: usize) -> Result<u64, i32> {
    object_id(rt, call, PIC_BASE, h, |rt, id| {
        rt.dvpp.pics.get(&id).is_some_and(|p| !p.destroyed)
    })
}

/// The live resize configuration behind `h`.
pub(super) fn config_id(rt: &mut Rt, call: &str, h: usize) -> Result<u64, i32> {
    object_id(rt, call, RESIZE_BASE, h, |rt, id| {
        rt.dvpp.configs.get(&id).is_some_and(|c| !c.destroyed)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppCreatePicDesc() -> *mut c_void {
    calls::count(CallId::acldvppCreatePicDesc);
    ffi_val(std::ptr::null_mut(), || {
        let mut g = enter("acldvppCreatePicDesc", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = rt.new_id();
        rt.dvpp.pics.insert(id, PicDesc::default());
        Ok(new_handle(PIC_BASE, id))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppDestroyPicDesc(picDesc: *mut c_void) -> i32 {
    calls::count(CallId::acldvppDestroyPicDesc);
    ffi(|| {
        const CALL: &str = "acldvppDestroyPicDesc";
        non_null(&[picDesc as usize])?;
        let mut g = enter(CALL, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = pic_id(rt, CALL, picDesc as usize)?;
        let busy = users(rt, None, Some(id), None);
        if busy.is_empty() {
            rt.dvpp.pics.remove(&id);
        } else {
            report_in_use(rt, CALL, format!("{} is destroyed", pic_name(id)), &busy);
            if let Some(p) = rt.dvpp.pics.get_mut(&id) {
                p.destroyed = true;
            }
        }
        bury(rt, handle(PIC_BASE, id), "picture description");
        Ok(())
    })
}

/// Sets a field of a picture description (DV6: a pending task using it is a finding; it
/// keeps what it read at its submission).
fn set_pic(call: &'static str, h: *mut c_void, set: impl FnOnce(&mut PicDesc)) -> i32 {
    ffi(|| {
        non_null(&[h as usize])?;
        let mut g = enter(call, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = pic_id(rt, call, h as usize)?;
        let busy = users(rt, None, Some(id), None);
        if !busy.is_empty() {
            let list: Vec<String> = busy
                .iter()
                .filter_map(|t| rt.dvpp.tasks.get(t).map(|x| (t, x)))
                .map(|(t, x)| {
                    format!(
                        "{} (task {t}) on stream {:#x}",
                        x.call,
                        handle(STREAM_BASE, x.stream)
                    )
                })
                .collect();
            rt.report(
                "DV6",
                format!(
                    "{call}: {} is changed while pending media task(s) use it: {}. A description stays unchanged until every task using it is done (synchronize first); the tasks keep what they read at submission",
                    pic_name(id),
                    list.join(", ")
                ),
            );
        }
        if let Some(p) = rt.dvpp.pics.get_mut(&id) {
            set(p);
        }
        Ok(())
    })
}

/// Reads a field of a picture description; 0 (NULL) when the handle is unknown. `written`:
/// the field is one a pending decode writes when it runs (DV6: a finding, and the caller's
/// value is what is read).
fn get_pic<T: Copy + Default>(
    call: &'static str,
    h: *const c_void,
    written: bool,
    get: impl FnOnce(&PicDesc) -> T,
) -> T {
    ffi_val(T::default(), || {
        non_null(&[h as usize])?;
        let mut g = enter(call, Call::Query)?;
        let rt = rt_of(&mut g)?;
        let id = pic_id(rt, call, h as usize)?;
        let by = rt.dvpp.pics.get(&id).and_then(|p| p.written_by);
        if written && let Some(task) = by {
            let stream = rt.dvpp.tasks.get(&task).map_or(0, |t| t.stream);
            rt.report(
                "DV6",
                format!(
                    "{call}: {} is read while acldvppJpegDecodeAsync (task {task}) on stream {:#x}, which writes it, is pending: read a decode's width, height, strides and return code only once the task is done (synchronize first); this reads the value set before",
                    pic_name(id),
                    handle(STREAM_BASE, stream)
                ),
            );
        }
        rt.dvpp.pics.get(&id).map(get).ok_or(code::INVALID_PARAM)
    })
}

macro_rules! setters {
    ($($name:ident($arg:ident: $ty:ty) => |$p:ident| $body:expr;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $name(picDesc: *mut c_void, $arg: $ty) -> i32 {
                calls::count(CallId::$name);
                set_pic(stringify!($name), picDesc, |$p| $body)
            }
        )*
    };
}

setters! {
    acldvppSetPicDescData(dataDev: *mut c_void) => |p| p.data = dataDev as usize;
    acldvppSetPicDescSize(size: u32) => |p| p.size = size;
    acldvppSetPicDescFormat(format: i32) => |p| p.format = format;
    acldvppSetPicDescWidth(width: u32) => |p| p.width = width;
    acldvppSetPicDescHeight(height: u32) => |p| p.height = height;
    acldvppSetPicDescWidthStride(widthStride: u32) => |p| p.width_stride = widthStride;
    acldvppSetPicDescHeightStride(heightStride: u32) => |p| p.height_stride = heightStride;
}

macro_rules! getters {
    ($($name:ident -> $ty:ty, $written:expr, |$p:ident| $body:expr;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $name(picDesc: *const c_void) -> $ty {
                calls::count(CallId::$name);
                get_pic(stringify!($name), picDesc, $written, |$p| $body)
            }
        )*
    };
}

getters! {
    acldvppGetPicDescSize -> u32, false, |p| p.size;
    acldvppGetPicDescFormat -> i32, false, |p| p.format;
    acldvppGetPicDescWidth -> u32, true, |p| p.width;
    acldvppGetPicDescHeight -> u32, true, |p| p.height;
    acldvppGetPicDescWidthStride -> u32, true, |p| p.width_stride;
    acldvppGetPicDescHeightStride -> u32, true, |p| p.height_stride;
    acldvppGetPicDescRetCode -> u32, true, |p| p.ret_code;
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppGetPicDescData(picDesc: *const c_void) -> *mut c_void {
    calls::count(CallId::acldvppGetPicDescData);
    get_pic("acldvppGetPicDescData", picDesc, false, |p| p.data) as *mut c_void
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppCreateResizeConfig() -> *mut c_void {
    calls::count(CallId::acldvppCreateResizeConfig);
    ffi_val(std::ptr::null_mut(), || {
        let mut g = enter("acldvppCreateResizeConfig", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = rt.new_id();
        rt.dvpp.configs.insert(id, ResizeConfig::default());
        Ok(new_handle(RESIZE_BASE, id))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppDestroyResizeConfig(resizeConfig: *mut c_void) -> i32 {
    calls::count(CallId::acldvppDestroyResizeConfig);
    ffi(|| {
        const CALL: &str = "acldvppDestroyResizeConfig";
        non_null(&[resizeConfig as usize])?;
        let mut g = enter(CALL, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = config_id(rt, CALL, resizeConfig as usize)?;
        let busy = users(rt, None, None, Some(id));
        if busy.is_empty() {
            rt.dvpp.configs.remove(&id);
        } else {
            let what = format!(
                "resize configuration {:#x} is destroyed",
                handle(RESIZE_BASE, id)
            );
            report_in_use(rt, CALL, what, &busy);
            if let Some(c) = rt.dvpp.configs.get_mut(&id) {
                c.destroyed = true;
            }
        }
        bury(rt, handle(RESIZE_BASE, id), "resize configuration");
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppSetResizeConfigInterpolation(
    resizeConfig: *mut c_void,
    interpolation: u32,
) -> i32 {
    calls::count(CallId::acldvppSetResizeConfigInterpolation);
    ffi(|| {
        const CALL: &str = "acldvppSetResizeConfigInterpolation";
        non_null(&[resizeConfig as usize])?;
        let mut g = enter(CALL, Call::Action)?;
        let rt = rt_of(&mut g)?;
        let id = config_id(rt, CALL, resizeConfig as usize)?;
        // DV9: 0 to 5 are documented (5, the in-house filter, is refused at the resize).
        if interpolation > 5 {
            return Err(errmsg::why(
                code::INVALID_PARAM,
                format!("interpolation {interpolation}: 0 to 5 are defined (DV9)"),
            ));
        }
        if !users(rt, None, None, Some(id)).is_empty() {
            rt.report(
                "DV6",
                format!(
                    "{CALL}: resize configuration {:#x} is changed while a pending resize uses it; the task keeps what it read at submission",
                    handle(RESIZE_BASE, id)
                ),
            );
        }
        if let Some(c) = rt.dvpp.configs.get_mut(&id) {
            c.interpolation = interpolation;
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn acldvppGetResizeConfigInterpolation(resizeConfig: *const c_void) -> u32 {
    calls::count(CallId::acldvppGetResizeConfigInterpolation);
    ffi_val(0, || {
        const CALL: &str = "acldvppGetResizeConfigInterpolation";
        non_null(&[resizeConfig as usize])?;
        let mut g = enter(CALL, Call::Query)?;
        let rt = rt_of(&mut g)?;
        let id = config_id(rt, CALL, resizeConfig as usize)?;
        Ok(rt.dvpp.configs.get(&id).map_or(0, |c| c.interpolation))
    })
}

/// A description's `(data, size, format, width, height, ws, hs)` at a submission.
pub(super) fn snapshot(rt: &Rt, id: u64) -> Option<(usize, u32, i32, u32, u32, u32, u32)> {
    rt.dvpp.pics.get(&id).map(|p| {
        (
            p.data,
            p.size,
            p.format,
            p.width,
            p.height,
            p.width_stride,
            p.height_stride,
        )
    })
}
