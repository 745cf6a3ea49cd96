//! placeholder crate docs
pub mod context;
pub mod device;
pub mod error;
pub mod event;
pub mod result;
pub mod runtime;
pub mod stream;
pub mod sys;

pub use context::Context;
pub use device::Device;
pub use error::{AclError, Error, LoadError, Result};
pub use event::{Created, Event, Recorded, Reset, ResetDone, WaitError, Waited};
pub use runtime::{Acl, Failed, InitOptions, Timeout, set_drop_error_handler};
pub use stream::Stream;
