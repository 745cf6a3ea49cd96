//! The simulator's extension API, for tests of programs built on this crate: the protocol
//! checker's findings and the live-object count. Available when the loaded library is the
//! CPU simulator built from `sim/` ([`Acl::simulator`] is `None` on the vendor runtime).
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

use std::ffi::c_char;

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
}

fn c_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
