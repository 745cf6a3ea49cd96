//! The exported C entry points, one file per area of `include/ascendcl.h`, plus the
//! simulator's own extensions (`ext`, `sim/include/aclsim.h`). Shared helpers (`ffi`,
//! `enter`, handle resolution) live in the crate root.

use super::*;

mod callback;
mod device;
mod event;
mod ext;
mod hostfunc;
mod info;
mod memory;
pub(crate) mod model;
mod optimeout;
mod process;
mod stream;
mod stream_ctl;

pub use callback::*;
pub use device::*;
pub use event::*;
pub use ext::*;
pub use hostfunc::*;
pub use info::*;
pub use memory::*;
pub use model::*;
pub use optimeout::*;
pub use process::*;
pub use stream::*;
pub use stream_ctl::*;
