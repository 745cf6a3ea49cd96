//! Access to the simulator from integration tests: one runtime session at a time per test
//! process (the runtime is process-wide, P2), and the simulator's extension API (`aclsim*`:
//! checker findings, live-object count, synthetic kernels).

use std::ffi::{c_char, c_void};
use std::sync::{Mutex, MutexGuard};

use ascend_typestate::{Acl, InitOptions};

static RUNTIME: Mutex<()> = Mutex::new(());

/// One checker finding: its rule ID (`"E4"`) and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub rule: String,
    pub message: String,
}

/// A test's exclusive use of the simulated runtime.
pub struct Session {
    pub acl: Option<Acl>,
    pub sim: Sim,
    _lock: MutexGuard<'static, ()>,
}

impl Session {
    /// Takes the runtime (waiting for other tests of this process), clears old findings and
    /// initialises it through the simulator.
    pub fn start() -> Session {
        let lock = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
        let path = super::simulator_path();
        let sim = Sim::open(&path);
        sim.clear_findings();
        // An earlier session's `expect_findings` ends here.
        sim.set_quiet(-1);
        let acl = Acl::init_with(&InitOptions::default().library(&path)).expect("aclInit");
        Session {
            acl: Some(acl),
            sim,
            _lock: lock,
        }
    }

    /// This test provokes findings on purpose and asserts them: they are not printed, so
    /// that a passing run prints no `aclsim:` line. Until the next `Session::start`.
    pub fn expect_findings(&self) {
        self.sim.set_quiet(1);
    }

    /// Device `id`, set and in its default context (the samples' pattern), for tests whose
    /// subject is not the device itself.
    pub fn default_device(
        &self,
        id: i32,
    ) -> ascend_typestate::Device<'_, ascend_typestate::DefaultContext> {
        self.acl()
            .set_device(id)
            .and_then(|d| d.into_default_context())
            .expect("set the device and take its default context")
    }

    pub fn acl(&self) -> &Acl {
        self.acl.as_ref().expect("the session's Acl was finalized")
    }

    /// Finalizes and returns every finding made during the session (leaks included, P2).
    pub fn finish(mut self) -> Vec<Finding> {
        if let Some(acl) = self.acl.take() {
            acl.finalize().expect("aclFinalize");
        }
        self.sim.findings()
    }
}

/// An initialised runtime whose token is leaked (`'static`: the only way safe code reaches a
/// handle from inside a callback or a kernel), and the simulator's API. The runtime is never
/// finalized: call it in a process of its own (a child, `support::child`).
pub fn leaked_runtime() -> (&'static Acl, Sim) {
    let path = super::simulator_path();
    let sim = Sim::open(&path);
    sim.clear_findings();
    let acl = Acl::init_with(&InitOptions::default().library(&path)).unwrap();
    (Box::leak(Box::new(acl)), sim)
}

type KernelFn = unsafe extern "C" fn(*mut c_void, *const *mut c_void, usize);

/// The simulator's extension API, resolved from the same loaded library.
pub struct Sim {
    lib: libloading::Library,
}

impl Sim {
    pub fn open(path: &std::path::Path) -> Sim {
        // SAFETY: the simulator; opening it again returns the already loaded instance.
        let lib = unsafe { libloading::Library::new(path) }.expect("open the simulator");
        Sim { lib }
    }

    fn symbol<T: Copy>(&self, name: &str) -> T {
        // SAFETY: the aclsim.h prototypes, mirrored by the callers' types.
        unsafe {
            *self
                .lib
                .get::<T>(name.as_bytes())
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        }
    }

    /// `aclsimSetQuiet`: 1 silences printed findings, 0 prints them, -1 follows the
    /// environment (`ACLSIM_QUIET`).
    pub fn set_quiet(&self, quiet: i32) {
        let f: unsafe extern "C" fn(i32) -> i32 = self.symbol("aclsimSetQuiet");
        // SAFETY: takes an int.
        unsafe { f(quiet) };
    }

    pub fn clear_findings(&self) {
        let f: unsafe extern "C" fn() = self.symbol("aclsimClearFindings");
        // SAFETY: no arguments.
        unsafe { f() }
    }

    pub fn findings(&self) -> Vec<Finding> {
        let count: unsafe extern "C" fn() -> usize = self.symbol("aclsimFindingCount");
        let get: unsafe extern "C" fn(usize, *mut c_char, usize, *mut c_char, usize) -> i32 =
            self.symbol("aclsimGetFinding");
        // SAFETY: no arguments.
        let n = unsafe { count() };
        (0..n)
            .map(|i| {
                let mut rule = [0u8; 16];
                let mut message = vec![0u8; 4096];
                // SAFETY: both buffers are writable for the capacities given.
                let rc = unsafe {
                    get(
                        i,
                        rule.as_mut_ptr().cast(),
                        rule.len(),
                        message.as_mut_ptr().cast(),
                        message.len(),
                    )
                };
                assert_eq!(rc, 0, "aclsimGetFinding({i})");
                let text = |b: &[u8]| {
                    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                    String::from_utf8_lossy(&b[..end]).into_owned()
                };
                Finding {
                    rule: text(&rule),
                    message: text(&message),
                }
            })
            .collect()
    }

    /// Makes the next `times` calls of the runtime function `call` fail with `code`, without
    /// effect (`aclsimInjectFault`).
    pub fn inject_fault(&self, call: &str, code: i32, times: u32) {
        let f: unsafe extern "C" fn(*const c_char, i32, u32) -> i32 =
            self.symbol("aclsimInjectFault");
        let call = std::ffi::CString::new(call).expect("a function name");
        // SAFETY: a NUL-terminated string that outlives the call.
        let rc = unsafe { f(call.as_ptr(), code, times) };
        assert_eq!(rc, 0, "aclsimInjectFault");
    }

    /// Fault injection after `skip` calls (`aclsimInjectFaultAt`): the `times` calls of
    /// `call` after the next `skip` ones fail with `code`, without effect.
    pub fn inject_fault_at(&self, call: &str, code: i32, skip: u32, times: u32) {
        let f: unsafe extern "C" fn(*const c_char, i32, u32, u32) -> i32 =
            self.symbol("aclsimInjectFaultAt");
        let call = std::ffi::CString::new(call).expect("a function name");
        // SAFETY: a NUL-terminated string that outlives the call.
        let rc = unsafe { f(call.as_ptr(), code, skip, times) };
        assert_eq!(rc, 0, "aclsimInjectFaultAt");
    }

    /// Disarms every injected fault (`aclsimClearFaults`).
    /// `aclsimInjectTaskFailure`: the next copy, memset, kernel or host function executed on
    /// the raw stream fails asynchronously with `code`.
    pub fn inject_task_failure(&self, stream: *mut c_void, code: i32) {
        let f: unsafe extern "C" fn(*mut c_void, i32) -> i32 =
            self.symbol("aclsimInjectTaskFailure");
        // SAFETY: a live stream (the simulator checks the handle), an integer code.
        assert_eq!(unsafe { f(stream, code) }, 0, "aclsimInjectTaskFailure");
    }

    pub fn clear_faults(&self) {
        let f: unsafe extern "C" fn() = self.symbol("aclsimClearFaults");
        // SAFETY: no arguments.
        unsafe { f() }
    }

    /// Calls of the runtime function `call` since the last `reset_call_counts`
    /// (`aclsimCallCount`).
    pub fn call_count(&self, call: &str) -> u64 {
        let f: unsafe extern "C" fn(*const c_char) -> u64 = self.symbol("aclsimCallCount");
        let call = std::ffi::CString::new(call).expect("a function name");
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { f(call.as_ptr()) }
    }

    /// Sets every call count to 0 (`aclsimResetCallCounts`).
    pub fn reset_call_counts(&self) {
        let f: unsafe extern "C" fn() = self.symbol("aclsimResetCallCounts");
        // SAFETY: no arguments.
        unsafe { f() }
    }

    /// Whether the runtime is initialized: asks `aclrtGetRunMode` directly, which answers
    /// 100001 (P1) when it is not.
    pub fn runtime_initialized(&self) -> bool {
        let f: unsafe extern "C" fn(*mut i32) -> i32 = self.symbol("aclrtGetRunMode");
        let mut mode = 0;
        // SAFETY: a writable output for the mode.
        let rc = unsafe { f(&mut mode) };
        rc != 100001
    }

    pub fn live_objects(&self) -> usize {
        let f: unsafe extern "C" fn() -> usize = self.symbol("aclsimLiveObjectCount");
        // SAFETY: no arguments.
        unsafe { f() }
    }

    /// Enqueues a synthetic kernel of `micros` µs on a raw stream (no body, no buffers).
    pub fn sleep_kernel(&self, stream: *mut c_void, micros: u64) {
        let f: unsafe extern "C" fn(
            *mut c_void,
            u64,
            Option<KernelFn>,
            *mut c_void,
            *const *mut c_void,
            usize,
        ) -> i32 = self.symbol("aclsimLaunchKernel");
        // SAFETY: a live stream of the current context (the caller binds it), no buffers.
        let rc = unsafe {
            f(
                stream,
                micros,
                None,
                std::ptr::null_mut(),
                std::ptr::null(),
                0,
            )
        };
        assert_eq!(rc, 0, "aclsimLaunchKernel");
    }
}

/// Asserts that a session produced no finding.
pub fn assert_no_findings(findings: &[Finding]) {
    assert!(findings.is_empty(), "checker findings: {findings:#?}");
}

/// Every finding is a task discarded by `aclrtDestroyStreamForce` (S8), and there are as
/// many as `expected` allows (a task the stream's worker had already started is not
/// discarded: it finishes).
#[allow(dead_code)]
pub fn assert_only_discarded(findings: &[Finding], expected: std::ops::RangeInclusive<usize>) {
    let discarded = findings
        .iter()
        .filter(|f| f.rule == "S8" && f.message.contains("discarded"))
        .count();
    assert_eq!(discarded, findings.len(), "other findings: {findings:#?}");
    assert!(
        expected.contains(&discarded),
        "{discarded} discarded tasks, expected {expected:?}: {findings:#?}"
    );
}

impl Sim {
    /// Enqueues a synthetic kernel of `micros` µs on a raw stream whose `body` runs on the
    /// stream's worker thread when the task is reached, as `body(user_data, NULL, 0)` (no
    /// buffers). `user_data` must stay valid until the stream has passed the task.
    pub fn body_kernel(
        &self,
        stream: *mut c_void,
        micros: u64,
        body: KernelFn,
        user_data: *mut c_void,
    ) {
        let f: unsafe extern "C" fn(
            *mut c_void,
            u64,
            Option<KernelFn>,
            *mut c_void,
            *const *mut c_void,
            usize,
        ) -> i32 = self.symbol("aclsimLaunchKernel");
        // SAFETY: a live stream of the current context (the caller binds it), no buffers;
        // the caller keeps `user_data` valid for `body` (see above).
        let rc = unsafe { f(stream, micros, Some(body), user_data, std::ptr::null(), 0) };
        assert_eq!(rc, 0, "aclsimLaunchKernel");
    }
}
