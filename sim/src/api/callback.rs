//! Callbacks and report threads (C1-C9).
//!
//! Layer: C entry points (`api`); imports the crate root's shared helpers, `api::hostfunc`
//! (C11) and every layer below (`exec`, `rules`, `extra`, `state`, `model`, `errmsg`,
//! `calls`, `pt`, `trace`), never the reverse.

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::calls::CallId;
use crate::pt::{PGuard, self_id};
use crate::state::{
    CbFn, CbItem, Global, IN_CALLBACK, MAX_SUBSCRIBED_THREADS, TaskKind, TaskState, ThreadSub, code,
};
use crate::{Call, calls, enter, exec, ffi, rt_of, sh, stream_for};

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSubscribeReport(threadId: u64, stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtSubscribeReport);
    ffi(|| {
        let mut g = enter("aclrtSubscribeReport", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, false)?;
        let (dev, subscribed) = match rt.streams.get(&sid) {
            Some(s) => (s.device, s.subscriber.is_some()),
            None => return Err(code::RT_PARAM_INVALID),
        };
        if subscribed {
            return Err(code::RT_STREAM_SUBSCRIBE); // C2
        }
        super::hostfunc::refuse_report_family(rt, sid, "aclrtSubscribeReport")?; // C11
        match rt.subs.get(&threadId) {
            Some(ts) if ts.device != dev => return Err(code::RT_THREAD_SUBSCRIBE), // C3
            Some(_) => {}
            None if rt.subs.len() >= MAX_SUBSCRIBED_THREADS => {
                return Err(code::RT_THREAD_SUBSCRIBE); // C4 (code chosen, README)
            }
            None => {}
        }
        let ts = rt.subs.entry(threadId).or_insert_with(|| ThreadSub {
            device: dev,
            streams: Default::default(),
            queue: Default::default(),
            waiter: None,
        });
        ts.streams.insert(sid);
        if let Some(s) = rt.streams.get_mut(&sid) {
            s.subscriber = Some(threadId);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtUnSubscribeReport(threadId: u64, stream: *mut c_void) -> i32 {
    calls::count(CallId::aclrtUnSubscribeReport);
    ffi(|| {
        let mut g = enter("aclrtUnSubscribeReport", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let sid = stream_for(rt, stream as usize, false)?;
        super::hostfunc::refuse_report_family(rt, sid, "aclrtUnSubscribeReport")?; // C11
        match rt.streams.get(&sid).and_then(|s| s.subscriber) {
            None => return Err(code::RT_STREAM_SUBSCRIBE), // C9
            Some(t) if t != threadId => return Err(code::RT_THREAD_SUBSCRIBE), // C9
            Some(_) => {}
        }
        let mut dropped = 0usize;
        let mut remove = false;
        let mut blocked_tasks = Vec::new();
        if let Some(ts) = rt.subs.get_mut(&threadId) {
            ts.streams.remove(&sid);
            ts.queue.retain(|i| {
                if i.stream == sid {
                    dropped += 1;
                    if i.block {
                        blocked_tasks.push(i.task);
                    }
                    false
                } else {
                    true
                }
            });
            remove = ts.streams.is_empty();
        }
        if remove {
            // A parked aclrtProcessReport of that thread now returns 107012 (C6).
            rt.wake_reporter(threadId);
            rt.subs.remove(&threadId);
        }
        if let Some(s) = rt.streams.get_mut(&sid) {
            s.subscriber = None;
            s.cb_outstanding = s.cb_outstanding.saturating_sub(dropped as u32);
            for t in s.tasks.iter_mut() {
                if blocked_tasks.contains(&t.id) {
                    t.state = TaskState::CbDone;
                }
            }
            if let Some(cv) = s.cv.as_ref() {
                cv.signal();
            }
        }
        if dropped > 0 {
            rt.report(
                "C1",
                format!(
                    "aclrtUnSubscribeReport({threadId:#x}, {:#x}) dropped {dropped} delivered callback(s) that had not run: unsubscribe only when all tasks are done (C1 step 5)",
                    sh(sid)
                ),
            );
        }
        rt.progress += 1;
        rt.wake_sync_waiters();
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtLaunchCallback(
    fn_: Option<CbFn>,
    userData: *mut c_void,
    blockType: i32,
    stream: *mut c_void,
) -> i32 {
    calls::count(CallId::aclrtLaunchCallback);
    ffi(|| {
        let mut g = enter("aclrtLaunchCallback", Call::Action)?;
        let rt = rt_of(&mut g)?;
        let f = fn_.ok_or(code::INVALID_PARAM)?;
        let block = match blockType {
            0 => false,
            1 => true,
            _ => return Err(code::INVALID_PARAM), // C5
        };
        let sid = stream_for(rt, stream as usize, true)?; // D6
        crate::extra::refuse_if_stopped(rt, sid)?; // S6
        super::hostfunc::refuse_report_family(rt, sid, "aclrtLaunchCallback")?; // C11
        let thread = rt
            .streams
            .get(&sid)
            .and_then(|s| s.subscriber)
            .ok_or(code::RT_STREAM_NO_CB_REG)?; // C5
        exec::enqueue(
            rt,
            sid,
            TaskKind::Callback {
                f,
                ud: userData as usize,
                block,
                thread,
            },
            Vec::new(),
        );
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtProcessReport(timeout: i32) -> i32 {
    calls::count(CallId::aclrtProcessReport);
    ffi(|| {
        let mut g = enter("aclrtProcessReport", Call::Action)?;
        if timeout == 0 || timeout < -1 {
            return Err(code::INVALID_PARAM); // C6
        }
        let rt = rt_of(&mut g)?;
        rt.cur_ctx()?; // C6
        let me = self_id();
        if !rt.subs.contains_key(&me) {
            return Err(code::RT_THREAD_SUBSCRIBE); // C6
        }
        let deadline =
            (timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
        let item = park_for_callback(&mut g, me, deadline)?;
        let panicked = g.unlocked(|| {
            IN_CALLBACK.with(|c| c.set(true));
            let r = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: the callback and its user data as registered by
                // aclrtLaunchCallback; run once, on the subscribed thread (C1).
                unsafe { (item.f)(item.ud as *mut c_void) }
            }));
            IN_CALLBACK.with(|c| c.set(false));
            r.is_err()
        });
        let rt = rt_of(&mut g)?;
        if panicked {
            rt.report(
                "C8",
                format!(
                    "callback of stream {:#x} panicked; a callback must not panic (the panic was caught at the C boundary)",
                    sh(item.stream)
                ),
            );
        }
        let mut head_done = false;
        if let Some(s) = rt.streams.get_mut(&item.stream) {
            s.cb_outstanding = s.cb_outstanding.saturating_sub(1);
            if item.block
                && let Some(t) = s.tasks.front_mut()
                && t.id == item.task
            {
                t.state = TaskState::CbDone;
                head_done = true;
            }
        }
        if head_done {
            // The blocking callback task ends here (C5), not in the stream's worker: the
            // synchronizing host is woken directly, one hand-off fewer. The worker is woken
            // only if more tasks wait behind the callback.
            crate::rules::task::complete_front(rt, item.stream);
            if let Some(s) = rt.streams.get(&item.stream)
                && !s.tasks.is_empty()
                && let Some(cv) = s.cv.as_ref()
            {
                cv.signal();
            }
        }
        rt.progress += 1;
        rt.wake_if_idle(item.stream);
        Ok(())
    })
}

/// Takes the next callback queued for thread `me`, parked on this thread's condvar until
/// one is queued, the subscription ends (107012), the runtime is finalized (100001) or
/// the deadline passes (507012). Nothing else wakes it: an idle report thread costs no CPU.
fn park_for_callback(
    g: &mut PGuard<'static, Global>,
    me: u64,
    deadline: Option<Instant>,
) -> Result<CbItem, i32> {
    exec::with_wait_cv(|cv, addr| {
        let r = loop {
            let rt = rt_of(g)?;
            let Some(ts) = rt.subs.get_mut(&me) else {
                break Err(code::RT_THREAD_SUBSCRIBE);
            };
            if let Some(i) = ts.queue.pop_front() {
                break Ok(i);
            }
            ts.waiter = Some(addr);
            match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break Err(code::RT_REPORT_TIMEOUT); // C6
                    }
                    cv.wait_timeout(g, d - now);
                }
                None => cv.wait(g),
            }
        };
        // Unregister (a new runtime after aclFinalize never saw this address).
        if let Some(ts) = g.rt.as_deref_mut().and_then(|rt| rt.subs.get_mut(&me))
            && ts.waiter == Some(addr)
        {
            ts.waiter = None;
        }
        r
    })
}
