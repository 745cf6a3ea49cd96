// M1: twin of ui-tests/fail/m1_foreign_source.rs, the same program in the legal order; it compiles.

use ascend_typestate::MallocPolicy;
use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let stream = ctx.create_stream()?;
    let mut dev = ctx.alloc::<u64>(1 << 24, MallocPolicy::HugeFirst)?;
    let source = vec![0u64; 1 << 24];
    ctx.async_scope(|scope| scope.copy(&stream, &mut dev, &source).map(drop))?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
