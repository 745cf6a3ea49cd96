//! The simulator's extension API, for tests of programs built on this crate: the protocol
//! checker's findings, the live-object count, fault injection and call counts. Available
//! when the loaded library is the CPU simulator built from `sim/` ([`Acl::simulator`] is
//! `None` on the vendor runtime).
//!
//! ```no_run
//! # use ascend_typestate::Acl;
//! let acl = Acl::init()?;
//! if let Some(sim) = acl.simulator() {
//!     sim.clear_findings();
//!     // ... run the code under test ...
//!     for finding in sim.findings() {
//!         eprintln!("[{}] {}", finding.rule, finding.message);
//!     }
//! }
//! # Ok::<(), ascend_typestate::Error>(())
//! ```

use std::ffi::{CString, c_char};

use crate::error::{Error, Result};
use crate::runtime::Acl;
use crate::sys::loader::SimulatorTable;

/// One finding of the simulator's protocol checker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The rule ID of `docs/protocol.md` (`"E4"`, `"M2"`, ...).
    pub rule: String,
    /// What happened, the handles involved and what to do.
    pub message: String,
}

/// Access to the simulator's checker (see the [module docs](self)).
#[derive(Clone, Copy)]
pub struct Simulator<'a> {
    table: &'a SimulatorTable,
}

impl Acl {
    /// The simulator's extension API, when the loaded runtime is the simulator.
    pub fn simulator(&self) -> Option<Simulator<'static>> {
        self.api_static()
            .simulator()
            .map(|table| Simulator { table })
    }
}

impl Simulator<'_> {
    /// Every finding made since the last [`clear_findings`](Self::clear_findings), in order.
    pub fn findings(&self) -> Vec<Finding> {
        // SAFETY: no arguments.
        let count = unsafe { (self.table.aclsimFindingCount)() };
        let mut out = Vec::with_capacity(count);
        for index in 0..count {
            let mut rule = [0u8; 16];
            let mut message = vec![0u8; 4096];
            // SAFETY: both buffers are writable for the capacities passed.
            let code = unsafe {
                (self.table.aclsimGetFinding)(
                    index,
                    rule.as_mut_ptr().cast::<c_char>(),
                    rule.len(),
                    message.as_mut_ptr().cast::<c_char>(),
                    message.len(),
                )
            };
            if code != 0 {
                // Cleared concurrently: what was read so far is all there is.
                break;
            }
            out.push(Finding {
                rule: c_text(&rule),
                message: c_text(&message),
            });
        }
        out
    }

    /// Forgets every finding.
    pub fn clear_findings(&self) {
        // SAFETY: no arguments.
        unsafe { (self.table.aclsimClearFindings)() }
    }

    /// Live runtime objects (created contexts, streams, events, allocations, subscriptions).
    pub fn live_objects(&self) -> usize {
        // SAFETY: no arguments.
        unsafe { (self.table.aclsimLiveObjectCount)() }
    }

    /// Fault injection (`aclsimInjectFaultAt`): after the next `skip` calls of the runtime
    /// function named `call` (e.g. `"aclrtRecordEvent"`), the `times` calls after them return
    /// `code` and do nothing else. Every call of `call` counts toward `skip`. Disarmed by
    /// [`clear_faults`](Self::clear_faults) and by `aclFinalize`.
    ///
    /// Errors: the simulator's code ([`Error::Runtime`]: 100001 when the runtime is not
    /// initialized, 100000 for a zero `code` or `times`, or a name that can never fire),
    /// [`Error::InvalidArgument`] for a name containing a NUL byte, [`Error::Unsupported`]
    /// for a simulator build without it.
    ///
    /// ```no_run
    /// # use ascend_typestate::Acl;
    /// let acl = Acl::init()?;
    /// if let Some(sim) = acl.simulator() {
    ///     // The second stream creation fails with ACL_ERROR_RT_INTERNAL_ERROR.
    ///     sim.inject_fault("aclrtCreateStream", 507000, 1, 1)?;
    /// }
    /// # Ok::<(), ascend_typestate::Error>(())
    /// ```
    pub fn inject_fault(&self, call: &str, code: i32, skip: u32, times: u32) -> Result<()> {
        const SYMBOL: &str = "aclsimInjectFaultAt";
        let inject = self
            .table
            .aclsimInjectFaultAt
            .ok_or(Error::Unsupported { symbol: SYMBOL })?;
        let name = CString::new(call)
            .map_err(|_| Error::InvalidArgument("a function name contains a NUL byte"))?;
        // SAFETY: a NUL-terminated string that outlives the call.
        let result = unsafe { inject(name.as_ptr(), code, skip, times) };
        crate::error::check(result).map_err(|code| Error::Runtime { call: SYMBOL, code })
    }

    /// Disarms every injected fault (`aclsimClearFaults`); nothing on a simulator build
    /// without it.
    pub fn clear_faults(&self) {
        if let Some(clear) = self.table.aclsimClearFaults {
            // SAFETY: no arguments.
            unsafe { clear() }
        }
    }

    /// How many times the runtime function named `call` was called since the last
    /// [`reset_call_counts`](Self::reset_call_counts) or process start, failing calls
    /// included (`aclsimCallCount`). 0 for an unknown name, a name containing a NUL byte, or
    /// a simulator build without call counts.
    pub fn call_count(&self, call: &str) -> u64 {
        let (Some(count), Ok(name)) = (self.table.aclsimCallCount, CString::new(call)) else {
            return 0;
        };
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { count(name.as_ptr()) }
    }

    /// Sets every call count to 0 (`aclsimResetCallCounts`).
    pub fn reset_call_counts(&self) {
        if let Some(reset) = self.table.aclsimResetCallCounts {
            // SAFETY: no arguments.
            unsafe { reset() }
        }
    }
}

fn c_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
