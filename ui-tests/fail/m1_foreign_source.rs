// M1: only this crate's buffers (and the results of earlier copies of the same scope) can be
// the source of an asynchronous copy: `Source` is sealed, so a foreign implementation that
// could report any pointer and length does not compile (E0277, the private `Sealed` bound).
// Twin: ui-tests/pass/m1_foreign_source.rs copies from a `Vec` instead.

use std::ffi::c_void;

use ascend_typestate::{Location, MallocPolicy, Source};
use ascend_typestate::{Acl, Error};

pub struct Forged(*const c_void);

impl<'scope> Source<'scope, u64> for &'scope Forged {
    const LOCATION: Location = Location::Host;
    fn as_ptr(&self) -> *const c_void {
        self.0
    }
    fn len(&self) -> usize {
        1 << 24
    }
    fn device_id(&self) -> Option<i32> {
        None
    }
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let mut dev = ctx.alloc::<u64>(1 << 24, MallocPolicy::HugeFirst)?;
    let forged = Forged(std::ptr::null());
    ctx.async_scope(|scope| scope.copy(&stream, &mut dev, &forged).map(drop))?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
