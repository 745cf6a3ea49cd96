//! Checks on the repository itself: the coverage map (docs/coverage.md), the crate's
//! layers, no path outside the repository.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

mod coverage;
mod fidelity;
mod files;
mod layers;
/// The lexer the simulator's layer check uses too.
#[path = "../../sim/tests/common/lexer.rs"]
mod lexer;
