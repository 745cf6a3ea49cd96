// M3: what a kernel gets (`Launch`: the compute stream and the slot's device buffers) is
// only lent for the call of `submit`'s closure: it cannot be kept to issue work on the slot's
// buffers after the frame was submitted (the closure is `for<'l>`: E0521).
// Twin: ui-tests/pass/m3_pipeline_launch_escapes_submit.rs uses the stream inside the closure.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn double(x: f32) -> f32 {
    x * 2.0
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    let slot = pipeline.next_slot()?;
    let mut kept = None;
    slot.submit(|launch| {
        kept = Some(launch.stream());
        Ok(())
    })?;
    let _ = kept;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
