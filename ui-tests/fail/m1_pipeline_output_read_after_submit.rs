// M1, M3: the destination of an asynchronous copy is not read before the copy is done. A
// slot's output (its previous frame, proven done) is read through its `Slot` guard; once
// `submit` consumed the guard, the output copy of the new frame is pending, and the output
// borrowed from the guard cannot be read (E0505).
// Twin: ui-tests/pass/m1_pipeline_output_read_after_submit.rs reads the output before submitting.

use ascend_typestate::{Acl, Error, PipelineConfig};

fn double(x: f32) -> f32 {
    x * 2.0
}

fn program(acl: &Acl) -> Result<(), Error> {
    let device = acl.set_device(0)?.into_default_context()?;
    let mut pipeline = device.create_pipeline::<f32, f32>(PipelineConfig::new(16, 16))?;
    let slot = pipeline.next_slot()?;
    let output = slot.output();
    slot.submit(|launch| launch.simulated_map(std::time::Duration::ZERO, double))?;
    if let Some((_, values)) = output {
        println!("{}", values[0]);
    }
    pipeline.destroy()?;
    Ok(())
}

fn main() {
    // Built, never run: trybuild runs pass cases, and this program needs a runtime.
    let _ = program;
}
