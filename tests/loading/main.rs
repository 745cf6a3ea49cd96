//! Loading the runtime library and the error model: the search order, C stubs and the model
//! library, strict loading, ELF pre-checks of bad library files, bare names on
//! `LD_LIBRARY_PATH`, unloading (P2), error codes.
//!
//! One test binary, one module per subject (`tests/README.md`): its tests run on parallel
//! threads of one process, so a test that changes process-wide state runs its body in a
//! child process (`support::child`, `support::isolated`).

#[path = "../support/mod.rs"]
mod support;

mod bare_names;
mod elf_prechecks;
mod errors;
mod library_common;
mod library_stubs;
mod search_order;
mod strict_loading;
mod unload;
