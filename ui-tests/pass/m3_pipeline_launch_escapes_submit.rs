// M3: twin of ui-tests/fail/m3_pipeline_launch_escapes_submit.rs, the same program in the legal order (uses the stream inside the closure); it compiles.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn double(x: f32) -> f32 {
    x * 2.0
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    let slot = pipeline.next_slot()?;
    slot.submit(|launch| {
        let stream = launch.stream();
        stream.is_complete()?;
        Ok(())
    })?;
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
