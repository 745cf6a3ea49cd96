//! Callbacks and report threads (C1-C9).

use super::*;

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
        super::hostfunc::reject_subscription(rt, sid, threadId)?; // C10
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
        HOST_CV.broadcast();
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
        let item = loop {
            let rt = rt_of(&mut g)?;
            let Some(ts) = rt.subs.get_mut(&me) else {
                return Err(code::RT_THREAD_SUBSCRIBE);
            };
            if let Some(i) = ts.queue.pop_front() {
                break i;
            }
            let step = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(code::RT_REPORT_TIMEOUT); // C6
                    }
                    d - now
                }
                None => Duration::from_millis(200),
            };
            HOST_CV.wait_timeout(&mut g, step);
        };
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
        if let Some(s) = rt.streams.get_mut(&item.stream) {
            s.cb_outstanding = s.cb_outstanding.saturating_sub(1);
            if item.block {
                if let Some(t) = s.tasks.front_mut()
                    && t.id == item.task
                {
                    t.state = TaskState::CbDone;
                }
                if let Some(cv) = s.cv.as_ref() {
                    cv.signal();
                }
            }
        }
        rt.progress += 1;
        HOST_CV.broadcast();
        Ok(())
    })
}
