// D2, D3: twin of ui-tests/fail/d3_raw_create_stream_is_unsafe.rs: the raw call in an
// `unsafe` block; it compiles.

use ascend_typestate::{Acl, Error};

fn program(acl: &Acl) -> Result<(), Error> {
    // SAFETY: the caller destroys the stream before the context that is current here.
    let _stream = unsafe { acl.api().create_stream()? };
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
