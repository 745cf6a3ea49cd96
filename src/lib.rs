//! placeholder crate docs
pub mod error;
pub mod result;
pub mod sys;

pub use error::{AclError, Error, LoadError, Result};
