// E4 (brand): a `ResetDone` proof belongs to its own wait scope. Here the outer scope's
// proof is returned by a nested scope of another event, whose own reset is skipped: the
// brands differ, so it is a lifetime error.
// Twin: ui-tests/pass/e4_outer_proof_returned_by_inner_scope.rs returns each scope's own proof.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let outer = ctx.create_event()?.record(&s1)?;
    let inner = ctx.create_event()?.record(&s1)?;
    let outer = outer.wait(&s2, |outer_waited| {
        let mut outer_proof = Some(outer_waited.reset()?);
        let inner = inner.wait(&s2, |_inner_waited| Ok(outer_proof.take().unwrap()))?;
        inner.destroy()?;
        Ok(outer_proof.take().unwrap())
    })?;
    outer.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
