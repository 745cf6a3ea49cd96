//! The state of the functions beyond the seeds (docs/protocol.md P5, D8, S5-S12, C10, C12): one
//! [`Extra`] value inside [`Rt`](crate::state::Rt), and the constants of the simulated
//! device. Re-exported by `crate::extra` (its public path), whose rules change it.
//!
//! Layer: plain data (part of `state`); imports `errmsg` and `state::code`, nothing above.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use crate::state::code;

/// `ACL_STOP_ON_FAILURE` (S6).
pub const STOP_ON_FAILURE: u64 = 1;
/// `aclrtGetOpTimeOutInterval` (P5): the granularity of operator execution timeouts, in µs.
pub const OP_TIMEOUT_INTERVAL_US: u64 = 4096;
/// The longest operator execution timeout CANN documents for `aclrtSetOpExecuteTimeOut`
/// (P5: 547, 1091 or 2176 s depending on the product): a model execution longer than this
/// could never complete, so the simulator refuses such a model at load, and a kernel
/// (`aclsimLaunchKernel`) of a longer duration. `aclrtSetOpExecuteTimeOut(V2)` caps the
/// limit there (a multiple of the interval, so rounding up and capping commute).
pub const MAX_OP_EXEC_TIMEOUT_US: u64 = 2176 * 1_000_000;
const _: () = assert!(MAX_OP_EXEC_TIMEOUT_US.is_multiple_of(OP_TIMEOUT_INTERVAL_US));
/// The default of `ACLSIM_DEVICE_MEMORY` (D8): 8 GiB per device.
pub const DEFAULT_DEVICE_MEMORY: u64 = 8 << 30;
/// The default of `ACLSIM_SOC_NAME` (D8).
pub const DEFAULT_SOC_NAME: &str = "Ascend310B-aclsim";

/// What the simulator remembers about one stream beyond [`Stream`](crate::state::Stream).
#[derive(Default)]
pub struct StreamExtra {
    /// S6: the mode set by `aclrtSetStreamFailureMode` (None: never set, i.e. CONTINUE).
    pub failure_mode: Option<u64>,
    /// S7: `aclrtCreateStreamWithConfig` arguments (0, 0 for `aclrtCreateStream`).
    pub priority: u32,
    pub flags: u32,
    /// C10: host functions ever launched on the stream.
    pub host_funcs: u64,
    /// `aclsimInjectTaskFailure`: codes the next executable tasks fail with, in order.
    pub inject: VecDeque<i32>,
    /// C12: the thread subscribed by `aclrtSubscribeHostFunc` (a slot of its own, beside
    /// the report subscription of C1).
    pub host_func_thread: Option<u64>,
}

/// `aclrtStreamConfigHandle` (S9): the public struct of `acl_rt.h` (LP64: 32 bytes).
#[repr(C)]
#[derive(Default)]
pub struct StreamConfig {
    pub workptr: usize,
    pub work_size: usize,
    pub flag: usize,
    pub priority: u32,
}
const _: () = assert!(std::mem::size_of::<StreamConfig>() == 32);

/// `aclrtStreamStateCallback` (S12).
pub type StateFn = unsafe extern "C" fn(*mut libc::c_void, i32, *mut libc::c_void);

/// C12: a thread subscribed by `aclrtSubscribeHostFunc`.
pub struct HostFuncSub {
    pub device: i32,
    pub streams: HashSet<u64>,
    /// Its condvar while it is parked in `aclrtProcessHostFunc`.
    pub waiter: Option<usize>,
}

pub struct Extra {
    /// P5: the operator execution timeout in µs (a multiple of the interval; 0 = none).
    pub op_exec_timeout_us: u64,
    /// D8: bytes of memory per device (`ACLSIM_DEVICE_MEMORY`).
    pub device_memory: u64,
    /// D8, M: bytes in use per device: live (or deferred-free) `aclrtMalloc` allocations and
    /// the work and weight memory of models the runtime allocated at load.
    pub device_used: HashMap<i32, u64>,
    /// `aclrtMallocHost` limit: the host's physical memory (page-locked memory cannot
    /// exceed it; CANN documents no other limit).
    pub host_memory: u64,
    /// Bytes of live (or deferred-free) `aclrtMallocHost` allocations.
    pub host_used: u64,
    /// D8: `aclrtGetSocName` (`ACLSIM_SOC_NAME`).
    pub soc_name: String,
    pub streams: HashMap<u64, StreamExtra>,
    /// S6: contexts stopped by a failed task of a STOP_ON_FAILURE stream, with the code.
    pub stopped: HashMap<u64, i32>,
    /// S6: events whose record a stop dropped, with the code their next synchronize reports.
    pub failed_records: HashMap<u64, i32>,
    /// Tasks (by id) that fail with the code when their body has run (P5 timeouts).
    pub task_fail: HashMap<u64, i32>,
    /// Injected failures armed on any stream (fast path of [`intercept`](crate::extra::intercept)).
    pub injected: usize,
    /// S9: live configuration handles, by address (the caller reads and writes them).
    pub config_handles: HashMap<usize, Box<StreamConfig>>,
    /// S12: registered stream state callbacks by name (called in name order), with `args`.
    pub state_callbacks: BTreeMap<String, (StateFn, usize)>,
    /// C12: threads subscribed by `aclrtSubscribeHostFunc`.
    pub host_func_subs: HashMap<u64, HostFuncSub>,
}

impl Extra {
    /// The state `aclInit` starts with (environment variables read now).
    pub fn from_env() -> Self {
        let device_memory = std::env::var("ACLSIM_DEVICE_MEMORY")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_DEVICE_MEMORY);
        // D8: the name must start with "Ascend"; any other value is ignored.
        let soc_name = std::env::var("ACLSIM_SOC_NAME")
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| v.starts_with("Ascend") && !v.contains('\0'))
            .unwrap_or_else(|| DEFAULT_SOC_NAME.to_string());
        Extra {
            op_exec_timeout_us: 0,
            device_memory,
            device_used: HashMap::new(),
            host_memory: physical_memory(),
            host_used: 0,
            soc_name,
            streams: HashMap::new(),
            stopped: HashMap::new(),
            failed_records: HashMap::new(),
            task_fail: HashMap::new(),
            injected: 0,
            config_handles: HashMap::new(),
            state_callbacks: BTreeMap::new(),
            host_func_subs: HashMap::new(),
        }
    }

    /// D8: free memory of `device` (what `aclrtGetMemInfo` reports).
    pub fn device_free(&self, device: i32) -> u64 {
        let used = self.device_used.get(&device).copied().unwrap_or(0);
        self.device_memory.saturating_sub(used)
    }

    /// Counts `bytes` against the host's memory (`host`) or `device`'s; 207001
    /// (`ACL_ERROR_RT_MEMORY_ALLOCATION`) when fewer are free, counting nothing.
    pub fn charge(&mut self, host: bool, device: i32, bytes: u64) -> Result<(), i32> {
        let (used, total, what) = if host {
            (self.host_used, self.host_memory, "host".to_string())
        } else {
            let used = self.device_used.get(&device).copied().unwrap_or(0);
            (used, self.device_memory, format!("device {device}"))
        };
        let free = total.saturating_sub(used);
        if bytes > free {
            return Err(crate::errmsg::why(
                code::RT_MEMORY_ALLOCATION,
                format!("{bytes} B requested, {free} B of the {what}'s {total} B are free"),
            ));
        }
        if host {
            self.host_used = used + bytes;
        } else {
            self.device_used.insert(device, used + bytes);
        }
        Ok(())
    }

    /// Returns bytes counted by [`Extra::charge`].
    pub fn uncharge(&mut self, host: bool, device: i32, bytes: u64) {
        if host {
            self.host_used = self.host_used.saturating_sub(bytes);
        } else if let Some(used) = self.device_used.get_mut(&device) {
            *used = used.saturating_sub(bytes);
        }
    }

    /// Whether [`intercept`](crate::extra::intercept) may have anything to do.
    #[inline]
    pub fn intercepts(&self) -> bool {
        self.injected > 0 || !self.stopped.is_empty()
    }
}

/// The host's physical memory in bytes (`u64::MAX` if unknown).
fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    // SAFETY: as above.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    match (u64::try_from(pages), u64::try_from(page)) {
        (Ok(n), Ok(p)) if n > 0 && p > 0 => n.saturating_mul(p),
        _ => u64::MAX,
    }
}

/// Rounds a timeout in µs up to a multiple of the interval (P5); None on overflow.
pub fn round_timeout(us: u64) -> Option<u64> {
    us.checked_next_multiple_of(OP_TIMEOUT_INTERVAL_US)
}
