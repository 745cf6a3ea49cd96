//! The exported C entry points, one file per area of `include/ascendcl.h`, plus the
//! simulator's own extensions (`ext`, `sim/include/aclsim.h`). Shared helpers (`ffi`,
//! `enter`, handle resolution) live in the crate root.

use super::*;

mod callback;
mod device;
mod event;
mod ext;
mod memory;
mod process;
mod stream;

pub use callback::*;
pub use device::*;
pub use event::*;
pub use ext::*;
pub use memory::*;
pub use process::*;
pub use stream::*;
