// P1, P2: the raw layer's `aclInit` changes process-wide runtime state behind the typed
// `Acl` token (a second `aclInit`, or one the token does not know of), so it is `unsafe`
// (E0133), like every raw call that changes runtime state.
// Twin: ui-tests/pass/p1_raw_init_is_unsafe.rs makes the call in an `unsafe` block.

use ascend_typestate::sys::loader::load_global;

fn program() -> Result<(), Box<dyn std::error::Error>> {
    load_global(&Default::default())?.init(None)?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
