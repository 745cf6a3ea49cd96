//! An application library built on ascend-typestate: one function a real program would have
//! (upload, wait across streams, download), tested in `tests/` on the simulator.

use ascend_typestate::{Acl, MallocPolicy, Result};

/// Doubles every element on the device side of a two-stream round trip: `data` is copied to
/// the device on an upload stream, a download stream waits for the upload through an event
/// (E2, E3, E4), and copies the result back. Returns what came back.
pub fn round_trip(acl: &Acl, device_id: i32, data: &[u32]) -> Result<Vec<u32>> {
    let device = acl.set_device(device_id)?;
    let ctx = device.create_context()?;
    let (upload, download) = (ctx.create_stream()?, ctx.create_stream()?);
    let mut on_device = ctx.alloc::<u32>(data.len(), MallocPolicy::HugeFirst)?;
    let mut back = vec![0u32; data.len()];
    ctx.async_scope(|scope| {
        scope.copy(&upload, &mut on_device, data)?;
        Ok(())
    })?;
    let event = ctx.create_event()?.record(&upload)?;
    let event = event.wait_and_reset(&download)?;
    ctx.async_scope(|scope| {
        scope.copy(&download, &mut back[..], &on_device)?;
        Ok(())
    })?;
    event.destroy()?;
    on_device.free()?;
    upload.destroy()?;
    download.destroy()?;
    ctx.destroy()?;
    device.reset()?;
    Ok(back)
}
