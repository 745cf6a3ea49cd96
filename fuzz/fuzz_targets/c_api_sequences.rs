//! An arbitrary sequence (at most 64 calls) of the simulator's C entry points with
//! arbitrary arguments: handles picked from a table of every handle returned so far
//! (live, destroyed, of a finalized runtime) or arbitrary values, NULL; device memory from
//! the allocations returned so far at any offset and length. Host memory the runtime
//! would read or write as the caller's (untracked) is always one of this harness's own
//! buffers, within its bounds: the runtime trusts that memory, as the vendor's does.
//!
//! Asserts: no crash, panic, hang or sanitizer error (checker findings are expected and
//! ignored); at the end `aclFinalize` succeeds (once injected faults are cleared) and
//! leaves no runtime behind.
#![no_main]

use std::ffi::{c_char, c_void};
use std::ptr::{null, null_mut};

use arbitrary::Arbitrary;
use ascendcl as sim;
use libfuzzer_sys::fuzz_target;

/// The longest sequence run.
const MAX_CALLS: usize = 64;
/// The harness's own host buffers (untracked memory): sources and destinations apart, so
/// that no copy between them overlaps (the C `memcpy` contract).
const HOST: usize = 4096;

/// A handle argument.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum H {
    /// The n-th handle returned so far (modulo their number; NULL when there is none).
    Seen(u8),
    Null,
    Raw(u64),
}

/// A memory argument.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum P {
    /// The harness's own host buffer, at an offset.
    Own(u16),
    /// A returned allocation (device or host), at an offset (it may run past the end).
    Alloc(u8, u16),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Init,
    Finalize,
    SetDevice(i8),
    ResetDevice(i8),
    ResetDeviceForce(i8),
    CreateContext(i8),
    DestroyContext(H),
    SetCurrentContext(H),
    GetCurrentContext,
    CreateStream,
    CreateStreamWithConfig(u8, u8),
    DestroyStream(H),
    DestroyStreamForce(H),
    SynchronizeStream(H),
    SynchronizeStreamWithTimeout(H, i8),
    StreamQuery(H),
    StreamStop(H),
    StreamAbort(H),
    StreamGetId(H),
    SetStreamFailureMode(H, u8),
    InjectTaskFailure(H, u32),
    DefaultStream,
    CreateEvent,
    CreateEventWithFlag(u8),
    DestroyEvent(H),
    RecordEvent(H, H),
    ResetEvent(H, H),
    QueryEventStatus(H),
    SynchronizeEvent(H),
    SynchronizeEventWithTimeout(H, i8),
    StreamWaitEvent(H, H),
    EventElapsedTime(H, H),
    SetOpWaitTimeout(u8),
    Malloc(u16, u8),
    MallocHost(u16),
    Free(H),
    FreeHost(H),
    Memcpy(P, u16, P, u16, u8),
    MemcpyAsync(P, u16, P, u16, u8, H),
    Memset(P, u16, u8, u16),
    MemsetAsync(P, u16, u8, u16, H),
    Kernel(H, u8, Vec<P>),
    HostFunc(H),
    SynchronizeDevice,
    SynchronizeDeviceWithTimeout(i8),
    LoadModel(bool),
    UnloadModel(H),
    GetLastError(i8),
    PeekAtLastError(i8),
    RecentErrMsg,
    GetResInCurrentThread(i8),
    GetMemInfo(i8),
    InjectFault(u8, u32, u8),
    ClearFaults,
}

/// The functions `Op::InjectFault` arms: the ones the sequences call.
const FAULTS: [&[u8]; 12] = [
    b"aclrtCreateStream\0",
    b"aclrtDestroyStream\0",
    b"aclrtCreateEvent\0",
    b"aclrtDestroyEvent\0",
    b"aclrtRecordEvent\0",
    b"aclrtResetEvent\0",
    b"aclrtSynchronizeStream\0",
    b"aclrtMalloc\0",
    b"aclrtFree\0",
    b"aclrtMemcpyAsync\0",
    b"aclrtResetDevice\0",
    b"aclrtDestroyContext\0",
];

/// A small model that loads and runs (`Op::LoadModel`).
const MODEL: &[u8] = b"aclsim-model 1\ninput x f32 4\noutput y f32 4\nop relu\nop scale 2\n";

/// Kernel and host-function bodies: nothing.
unsafe extern "C" fn kernel(_: *mut c_void, _: *const *mut c_void, _: usize) {}
unsafe extern "C" fn host_fn(_: *mut c_void) {}

struct Harness {
    /// Every handle, model id and allocation returned, in order; never shrinks.
    seen: Vec<usize>,
    /// The allocations returned (a subset of `seen`).
    allocs: Vec<usize>,
    src: Box<[u8; HOST]>,
    dst: Box<[u8; HOST]>,
}

impl Harness {
    fn h(&self, h: H) -> *mut c_void {
        let v = match h {
            H::Seen(i) if self.seen.is_empty() => i as usize,
            H::Seen(i) => self.seen[i as usize % self.seen.len()],
            H::Null => 0,
            H::Raw(v) => v as usize,
        };
        v as *mut c_void
    }

    fn push(&mut self, v: *mut c_void) {
        if !v.is_null() {
            self.seen.push(v as usize);
        }
    }

    /// A pointer for `p` and a length at most `len` that the runtime may touch there: an
    /// allocation it tracks (it checks the range itself) or the harness's own buffer
    /// (`dst`: the destination one), the length then clamped to its end.
    fn mem(&mut self, p: P, len: u16, dst: bool) -> (*mut c_void, usize) {
        let own = if dst {
            self.dst.as_mut_ptr()
        } else {
            self.src.as_mut_ptr()
        };
        let len = usize::from(len);
        if let P::Alloc(i, off) = p
            && !self.allocs.is_empty()
        {
            let base = self.allocs[i as usize % self.allocs.len()];
            let at = base + usize::from(off);
            if tracked(at) {
                return (at as *mut c_void, len);
            }
        }
        let off = match p {
            P::Own(off) | P::Alloc(_, off) => usize::from(off) % HOST,
        };
        // SAFETY: `off < HOST`, inside the buffer.
        (unsafe { own.add(off) }.cast(), len.min(HOST - off))
    }

    fn call(&mut self, op: Op) {
        match op {
            Op::Init => ignore(sim::aclInit(null())),
            Op::Finalize => ignore(sim::aclFinalize()),
            Op::SetDevice(d) => ignore(sim::aclrtSetDevice(d.into())),
            Op::ResetDevice(d) => ignore(sim::aclrtResetDevice(d.into())),
            Op::ResetDeviceForce(d) => ignore(sim::aclrtResetDeviceForce(d.into())),
            Op::CreateContext(d) => {
                let mut c = null_mut();
                if sim::aclrtCreateContext(&mut c, d.into()) == 0 {
                    self.push(c);
                }
            }
            Op::DestroyContext(c) => ignore(sim::aclrtDestroyContext(self.h(c))),
            Op::SetCurrentContext(c) => ignore(sim::aclrtSetCurrentContext(self.h(c))),
            Op::GetCurrentContext => {
                let mut c = null_mut();
                if sim::aclrtGetCurrentContext(&mut c) == 0 {
                    self.push(c);
                }
            }
            Op::CreateStream => {
                let mut s = null_mut();
                if sim::aclrtCreateStream(&mut s) == 0 {
                    self.push(s);
                }
            }
            Op::CreateStreamWithConfig(priority, flag) => {
                let mut s = null_mut();
                if sim::aclrtCreateStreamWithConfig(&mut s, priority.into(), flag.into()) == 0 {
                    self.push(s);
                }
            }
            Op::DestroyStream(s) => ignore(sim::aclrtDestroyStream(self.h(s))),
            Op::DestroyStreamForce(s) => ignore(sim::aclrtDestroyStreamForce(self.h(s))),
            Op::SynchronizeStream(s) => ignore(sim::aclrtSynchronizeStream(self.h(s))),
            Op::SynchronizeStreamWithTimeout(s, t) => {
                ignore(sim::aclrtSynchronizeStreamWithTimeout(self.h(s), t.into()))
            }
            Op::StreamQuery(s) => {
                let mut status = 0;
                ignore(sim::aclrtStreamQuery(self.h(s), &mut status));
            }
            Op::StreamStop(s) => ignore(sim::aclrtStreamStop(self.h(s))),
            Op::StreamAbort(s) => ignore(sim::aclrtStreamAbort(self.h(s))),
            Op::StreamGetId(s) => {
                let mut id = 0;
                ignore(sim::aclrtStreamGetId(self.h(s), &mut id));
            }
            Op::SetStreamFailureMode(s, m) => {
                ignore(sim::aclrtSetStreamFailureMode(self.h(s), m.into()))
            }
            Op::InjectTaskFailure(s, code) => {
                ignore(sim::aclsimInjectTaskFailure(self.h(s), code as i32))
            }
            Op::DefaultStream => {
                let mut s = null_mut();
                if sim::aclrtCtxGetCurrentDefaultStream(&mut s) == 0 {
                    self.push(s);
                }
            }
            Op::CreateEvent => {
                let mut e = null_mut();
                if sim::aclrtCreateEvent(&mut e) == 0 {
                    self.push(e);
                }
            }
            Op::CreateEventWithFlag(flag) => {
                let mut e = null_mut();
                if sim::aclrtCreateEventWithFlag(&mut e, flag.into()) == 0 {
                    self.push(e);
                }
            }
            Op::DestroyEvent(e) => ignore(sim::aclrtDestroyEvent(self.h(e))),
            Op::RecordEvent(e, s) => ignore(sim::aclrtRecordEvent(self.h(e), self.h(s))),
            Op::ResetEvent(e, s) => ignore(sim::aclrtResetEvent(self.h(e), self.h(s))),
            Op::QueryEventStatus(e) => {
                let mut status = 0;
                ignore(sim::aclrtQueryEventStatus(self.h(e), &mut status));
            }
            Op::SynchronizeEvent(e) => ignore(sim::aclrtSynchronizeEvent(self.h(e))),
            Op::SynchronizeEventWithTimeout(e, t) => {
                ignore(sim::aclrtSynchronizeEventWithTimeout(self.h(e), t.into()))
            }
            Op::StreamWaitEvent(s, e) => ignore(sim::aclrtStreamWaitEvent(self.h(s), self.h(e))),
            Op::EventElapsedTime(a, b) => {
                let mut ms = 0.0;
                ignore(sim::aclrtEventElapsedTime(&mut ms, self.h(a), self.h(b)));
            }
            // At most 255 ms: a wait that times out ends the sequence's hang.
            Op::SetOpWaitTimeout(t) => ignore(sim::aclrtSetOpWaitTimeout(t.into())),
            Op::Malloc(size, policy) => {
                let mut p = null_mut();
                if sim::aclrtMalloc(&mut p, size.into(), policy.into()) == 0 {
                    self.push(p);
                    self.allocs.push(p as usize);
                }
            }
            Op::MallocHost(size) => {
                let mut p = null_mut();
                if sim::aclrtMallocHost(&mut p, size.into()) == 0 {
                    self.push(p);
                    self.allocs.push(p as usize);
                }
            }
            Op::Free(p) => ignore(sim::aclrtFree(self.h(p))),
            Op::FreeHost(p) => ignore(sim::aclrtFreeHost(self.h(p))),
            Op::Memcpy(d, max, s, n, kind) => {
                let (d, max) = self.mem(d, max, true);
                let (s, n) = self.mem(s, n, false);
                ignore(sim::aclrtMemcpy(d, max, s, n, kind.into()));
            }
            Op::MemcpyAsync(d, max, s, n, kind, st) => {
                let (d, max) = self.mem(d, max, true);
                let (s, n) = self.mem(s, n, false);
                ignore(sim::aclrtMemcpyAsync(d, max, s, n, kind.into(), self.h(st)));
            }
            Op::Memset(d, max, v, n) => {
                let (d, max) = self.mem(d, max, true);
                ignore(sim::aclrtMemset(d, max, v.into(), n.into()));
            }
            Op::MemsetAsync(d, max, v, n, st) => {
                let (d, max) = self.mem(d, max, true);
                ignore(sim::aclrtMemsetAsync(
                    d,
                    max,
                    v.into(),
                    n.into(),
                    self.h(st),
                ));
            }
            Op::Kernel(s, micros, bufs) => {
                // The body reads none of its buffers: their addresses are checked only.
                let bufs: Vec<*mut c_void> = bufs
                    .into_iter()
                    .take(4)
                    .map(|p| self.mem(p, 0, true).0)
                    .collect();
                let body = if micros % 2 == 0 {
                    Some(kernel as _)
                } else {
                    None
                };
                ignore(sim::aclsimLaunchKernel(
                    self.h(s),
                    u64::from(micros),
                    body,
                    null_mut(),
                    bufs.as_ptr(),
                    bufs.len(),
                ));
            }
            Op::HostFunc(s) => ignore(sim::aclrtLaunchHostFunc(
                self.h(s),
                Some(host_fn),
                null_mut(),
            )),
            Op::SynchronizeDevice => ignore(sim::aclrtSynchronizeDevice()),
            Op::SynchronizeDeviceWithTimeout(t) => {
                ignore(sim::aclrtSynchronizeDeviceWithTimeout(t.into()))
            }
            Op::LoadModel(whole) => {
                let mut id = 0;
                let rc = if whole {
                    sim::aclmdlLoadFromMem(MODEL.as_ptr().cast(), MODEL.len(), &mut id)
                } else {
                    sim::aclmdlLoadFromMem(MODEL.as_ptr().cast(), MODEL.len() / 2, &mut id)
                };
                if rc == 0 {
                    self.seen.push(id as usize);
                }
            }
            Op::UnloadModel(id) => ignore(sim::aclmdlUnload(self.h(id) as usize as u32)),
            Op::GetLastError(level) => ignore(sim::aclrtGetLastError(level.into())),
            Op::PeekAtLastError(level) => ignore(sim::aclrtPeekAtLastError(level.into())),
            Op::RecentErrMsg => {
                let m = sim::aclGetRecentErrMsg();
                if !m.is_null() {
                    // SAFETY: a NUL-terminated message the runtime keeps for the thread.
                    let _ = unsafe { std::ffi::CStr::from_ptr(m) }.to_bytes().len();
                }
            }
            Op::GetResInCurrentThread(kind) => {
                let mut v = 0;
                ignore(sim::aclrtGetResInCurrentThread(kind.into(), &mut v));
            }
            Op::GetMemInfo(attr) => {
                let (mut free, mut total) = (0, 0);
                ignore(sim::aclrtGetMemInfo(attr.into(), &mut free, &mut total));
            }
            Op::InjectFault(which, code, times) => {
                let name = FAULTS[which as usize % FAULTS.len()];
                let name = name.as_ptr().cast::<c_char>();
                ignore(sim::aclsimInjectFault(
                    name,
                    code as i32,
                    u32::from(times % 4),
                ));
            }
            Op::ClearFaults => sim::aclsimClearFaults(),
        }
    }
}

/// Whether `at` lies in an allocation the runtime tracks and has not freed: it checks any
/// range there itself. (A freed one may be forgotten by the time of the call, and its
/// address then passed for the caller's own memory.)
fn tracked(at: usize) -> bool {
    let g = sim::state::G.lock();
    let Some(rt) = g.rt.as_deref() else {
        return false;
    };
    rt.allocs
        .range(..=at)
        .next_back()
        .is_some_and(|(start, a)| at < start + a.size && !a.freed)
}

fuzz_target!(|ops: Vec<Op>| {
    sim::aclsimSetQuiet(1);
    sim::aclsimClearFaults();
    let mut h = Harness {
        seen: Vec::new(),
        allocs: Vec::new(),
        src: Box::new([0x5a; HOST]),
        dst: Box::new([0; HOST]),
    };
    // Most sequences start with a runtime and a device; the rest test the calls before.
    if !matches!(ops.first(), Some(Op::Finalize)) {
        sim::aclInit(null());
        sim::aclrtSetDevice(0);
    }
    for op in ops.into_iter().take(MAX_CALLS) {
        h.call(op);
    }
    sim::aclsimClearFaults();
    let initialized = sim::state::G.lock().rt.is_some();
    let rc = sim::aclFinalize();
    assert!(rc == 0 || !initialized, "aclFinalize: {rc}");
    assert!(
        sim::state::G.lock().rt.is_none(),
        "a runtime after aclFinalize"
    );
    assert_eq!(sim::aclsimLiveObjectCount(), 0);
    sim::aclsimClearFindings();
});

/// A call's return code: any is fine here (the checker's findings are not failures).
fn ignore(_rc: i32) {}
