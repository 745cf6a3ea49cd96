//! Host-function subscription, the user-thread flavour (C12): `aclrtSubscribeHostFunc`,
//! `aclrtProcessHostFunc`, `aclrtUnSubscribeHostFunc`.
//!
//! In CANN the subscribed thread runs the host work of CPU operators of models executed with
//! `aclmdlExecuteV2` (IPV350, compact library). The simulator has no such operators: the
//! subscriptions and their errors are modelled, and `aclrtProcessHostFunc` finds no work: it
//! waits until its timeout (507012), its thread's last subscription ends (107012) or
//! `aclFinalize` (100001).
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers and every layer
//! below, never the reverse.

use std::ffi::c_void;
use std::time::{Duration, Instant};

use crate::calls::CallId;
use crate::extra::HostFuncSub;
use crate::pt::self_id;
use crate::state::code;
use crate::{Call, calls, enter, errmsg, exec, ffi, rt_of, stream_for};

/// C12: the stream of a host-function subscription: never NULL (107000, where other calls
/// take NULL for the default stream).
fn subscribed_stream(rt: &mut crate::state::Rt, stream: *mut c_void) -> Result<u64, i32> {
    if stream.is_null() {
        return Err(errmsg::why(
            code::RT_PARAM_INVALID,
            "a stream is needed (C12)",
        ));
    }
    stream_for(rt, stream as usize, false)
}

/// C12: a stream is unsubscribed before it is destroyed (`call`: one of the destroys). The
/// destroy ends the subscription here; the finding says the program should have.
pub(super) fn report_destroy_of_subscribed(rt: &mut crate::state::Rt, sid: u64, call: &str) {
    if let Some(t) = rt.extra.streams.get(&sid).and_then(|x| x.host_func_thread) {
        rt.report(
            "C12",
            format!(
                "{call}({:#x}) while thread {t:#x} is still subscribed to its host work (aclrtSubscribeHostFunc): call aclrtUnSubscribeHostFunc first, once its tasks are done (C12)",
                crate::sh(sid)
            ),
        );
    }
}

/// C12: binds thread `hostFuncThreadId` (its `pthread_self()`) to the stream's host work.
/// NULL stream: 107000; the stream's slot taken: 107011; the thread serving streams of
/// another device: 107012.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSubscribeHostFunc(hostFuncThreadId: u64, exeStream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtSubscribeHostFunc);
    ffi(|| {
        let mut g = enter("aclrtSubscribeHostFunc", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = subscribed_stream(rt, exeStream)?;
        let dev = rt.streams.get(&sid).map_or(-1, |s| s.device);
        if let Some(t) = rt.extra.streams.get(&sid).and_then(|x| x.host_func_thread) {
            return Err(errmsg::why(
                code::RT_STREAM_SUBSCRIBE,
                format!("thread {t:#x} already serves this stream's host functions (C12)"),
            ));
        }
        if let Some(sub) = rt.extra.host_func_subs.get(&hostFuncThreadId)
            && sub.device != dev
        {
            return Err(errmsg::why(
                code::RT_THREAD_SUBSCRIBE,
                format!(
                    "thread {hostFuncThreadId:#x} serves streams of device {} (C12)",
                    sub.device
                ),
            ));
        }
        rt.extra
            .host_func_subs
            .entry(hostFuncThreadId)
            .or_insert_with(|| HostFuncSub {
                device: dev,
                streams: Default::default(),
                waiter: None,
            })
            .streams
            .insert(sid);
        rt.extra.streams.entry(sid).or_default().host_func_thread = Some(hostFuncThreadId);
        Ok(())
    })
}

/// C12: ends the subscription. NULL stream: 107000; another thread (or none) subscribed:
/// 107011.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtUnSubscribeHostFunc(hostFuncThreadId: u64, exeStream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtUnSubscribeHostFunc);
    ffi(|| {
        let mut g = enter("aclrtUnSubscribeHostFunc", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = subscribed_stream(rt, exeStream)?;
        let slot = rt
            .extra
            .streams
            .get_mut(&sid)
            .map(|x| &mut x.host_func_thread);
        match slot {
            Some(t) if *t == Some(hostFuncThreadId) => *t = None,
            _ => {
                return Err(errmsg::why(
                    code::RT_STREAM_SUBSCRIBE,
                    format!(
                        "thread {hostFuncThreadId:#x} is not subscribed to this stream's host functions (C12)"
                    ),
                ));
            }
        }
        crate::extra::drop_host_func_stream(rt, hostFuncThreadId, sid);
        Ok(())
    })
}

/// C12: `-1` waits forever, `> 0` ms, else 107000; a thread without a subscription: 107012.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtProcessHostFunc(timeout: i32) -> i32 {
    calls::count(CallId::aclrtProcessHostFunc);
    ffi(|| {
        let mut g = enter("aclrtProcessHostFunc", Call::Action)?;
        if timeout == 0 || timeout < -1 {
            return Err(errmsg::why(
                code::RT_PARAM_INVALID,
                format!("timeout {timeout}: -1 (forever) or > 0 ms (C12)"),
            ));
        }
        let me = self_id();
        let deadline =
            (timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
        exec::with_wait_cv(|cv, addr| {
            let r = loop {
                let rt = rt_of(&mut g)?;
                let Some(sub) = rt.extra.host_func_subs.get_mut(&me) else {
                    break Err(code::RT_THREAD_SUBSCRIBE);
                };
                sub.waiter = Some(addr);
                match deadline {
                    Some(d) => {
                        let now = Instant::now();
                        if now >= d {
                            break Err(code::RT_REPORT_TIMEOUT);
                        }
                        cv.wait_timeout(&mut g, d - now);
                    }
                    None => cv.wait(&mut g),
                }
            };
            if let Some(sub) =
                g.rt.as_deref_mut()
                    .and_then(|rt| rt.extra.host_func_subs.get_mut(&me))
                && sub.waiter == Some(addr)
            {
                sub.waiter = None;
            }
            r
        })
    })
}
