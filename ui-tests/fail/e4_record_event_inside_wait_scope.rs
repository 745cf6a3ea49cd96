// E4/E1: inside a wait scope the event must be reset before it is recorded again. The event
// was consumed by `wait` and is `Recorded`, a state without `record` (E0599: trait bound
// `Recorded: Recordable` not satisfied).
// Twin: ui-tests/pass/e4_record_event_inside_wait_scope.rs records after the scope ends.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?;
    let ctx = device.create_context()?;
    let s1 = ctx.create_stream()?;
    let s2 = ctx.create_stream()?;
    let event = ctx.create_event()?.record(&s1)?;
    let event = event.wait(&s2, |waited| {
        let _again = event.record(&s1);
        waited.reset()
    })?;
    event.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
