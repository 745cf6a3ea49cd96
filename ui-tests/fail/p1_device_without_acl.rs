// P1: `aclInit` comes before every other call. A `Device` (and so everything created from
// it) is only obtained from an initialised `Acl`: there is no public constructor (E0599).
// Twin: ui-tests/pass/p1_device_without_acl.rs gets the device from `Acl::set_device`.

use ascend_typestate::{Device, Error};

fn program() -> Result<(), Error> {
    let device = Device::new(0)?;
    device.reset()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
