// E4 (brand): a `ResetDone` proof cannot leave its wait scope. Here a nested scope's proof
// is smuggled out and returned by the outer scope, whose own reset is skipped: the inner
// brand escapes its closure, a lifetime error.
// Twin: ui-tests/pass/e4_inner_proof_returned_by_outer_scope.rs returns each scope's own proof.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let outer = ctx.create_event()?.record(&s1)?;
    let inner = ctx.create_event()?.record(&s1)?;
    let outer = outer.wait(&s2, |_outer_waited| {
        let mut inner_proof = None;
        let inner = inner.wait(&s2, |inner_waited| {
            inner_proof = Some(inner_waited.reset()?);
            Err(Error::InvalidArgument("leave the inner scope early"))
        });
        drop(inner);
        Ok(inner_proof.unwrap())
    })?;
    outer.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
