// E4 (brand): twin of ui-tests/fail/e4_inner_proof_returned_by_outer_scope.rs, the same program in the legal order; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let outer = ctx.create_event()?.record(&s1)?;
    let inner = ctx.create_event()?.record(&s1)?;
    let outer = outer.wait(&s2, |outer_waited| {
        let mut outer_proof = None;
        let inner = inner.wait(&s2, |_inner_waited| {
            outer_proof = Some(outer_waited.reset()?);
            Err(Error::InvalidArgument("leave the inner scope early"))
        });
        drop(inner);
        Ok(outer_proof.unwrap())
    })?;
    outer.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
