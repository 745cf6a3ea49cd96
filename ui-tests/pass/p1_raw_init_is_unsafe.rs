// P1, P2: twin of ui-tests/fail/p1_raw_init_is_unsafe.rs: the raw `aclInit` in an `unsafe`
// block; it compiles.

use ascend_typestate::sys::loader::load_global;

fn program() -> Result<(), Box<dyn std::error::Error>> {
    let api = load_global(&Default::default())?;
    // SAFETY: no `Acl` lives in this process: the runtime is used through this raw layer
    // only, which finalizes it once done.
    unsafe { api.init(None)? };
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
