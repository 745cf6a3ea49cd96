// D2, D3: a raw `aclrtCreateStream` creates a stream in whatever context is current on the
// thread, which the typed API does not track (a context destroyed under it, D3), so it is
// `unsafe` (E0133).
// Twin: ui-tests/pass/d3_raw_create_stream_is_unsafe.rs makes the call in an `unsafe` block.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    let _stream = acl.api().create_stream()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
