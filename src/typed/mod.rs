//! The typestate API: one module per handle, every public item re-exported at the crate root.

pub(crate) mod callback;
pub(crate) mod context;
pub(crate) mod device;
pub(crate) mod dtype;
pub(crate) mod error;
pub(crate) mod event;
pub(crate) mod handle;
pub(crate) mod host_fn;
pub(crate) mod memory;
pub(crate) mod model;
pub(crate) mod pipeline;
pub(crate) mod runtime;
pub(crate) mod stream;
