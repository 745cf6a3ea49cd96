//! The typestate API: one module per handle (`runtime`, `device`, `context`, `stream`,
//! `event`, `memory`, `media`, `callback`, `host_fn`, `model`, `pipeline`), the element types
//! (`dtype`), the errors (`error`) and what every handle shares (`handle`: timeouts, the
//! `Failed` error, drop-error reporting, the clean-up policy, the callback marks). Every
//! public item is re-exported at the crate root, its one path. It may import the layers
//! below ([`result`](crate::result), [`sys`](crate::sys)), never the simulator; `handle`
//! and `error` import nothing of their siblings but `error` (and `dtype`), and a handle's
//! module imports its owners' (a stream's, its context's), never its children's.

pub(crate) mod callback;
pub(crate) mod context;
pub(crate) mod device;
pub(crate) mod dtype;
pub(crate) mod error;
pub(crate) mod event;
pub(crate) mod handle;
pub(crate) mod host_fn;
pub(crate) mod join;
pub(crate) mod join_state;
pub(crate) mod lifecycle;
// Model checking: `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`.
#[cfg(all(test, loom))]
pub(crate) mod loom;
pub(crate) mod media;
pub(crate) mod memory;
pub(crate) mod model;
pub(crate) mod pipeline;
pub(crate) mod runtime;
pub(crate) mod stream;
