//! Copy bandwidth of the typed API on the simulator: host-to-device,
//! device-to-host and device-to-device copies of 1, 64 and 256 MiB, each one async scope
//! (`aclrtMemcpyAsync` + synchronize). Criterion prints the throughput (GiB/s);
//! `scripts/bench_summary.sh` tabulates the medians.
//!
//! ```sh
//! cargo bench -p ascend-typestate-benches --bench bandwidth
//! ```

use std::time::Duration;

use ascend_typestate::MallocPolicy;
use ascend_typestate::{Acl, Context};
use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};

const MIB: usize = 1 << 20;
const SIZES_MIB: [usize; 3] = [1, 64, 256];

fn bandwidth(c: &mut Criterion, ctx: &Context<'_>) {
    let stream = ctx.create_stream().unwrap();
    let max = SIZES_MIB[SIZES_MIB.len() - 1] * MIB;
    let mut host = ctx.alloc_host::<u8>(max).unwrap();
    let mut dev_a = ctx.alloc::<u8>(max, MallocPolicy::HugeFirst).unwrap();
    let mut dev_b = ctx.alloc::<u8>(max, MallocPolicy::HugeFirst).unwrap();
    for (i, byte) in host.iter_mut().enumerate() {
        *byte = i as u8;
    }

    let mut group = c.benchmark_group("bandwidth");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for mib in SIZES_MIB {
        let len = mib * MIB;
        group.throughput(Throughput::Bytes(len as u64));
        let id = |kind: &str| BenchmarkId::new(kind, format!("{mib}MiB"));
        group.bench_function(id("h2d"), |b| {
            let src = &host[..len];
            let mut dst = dev_a.slice_mut(..len).unwrap();
            b.iter(|| {
                ctx.async_scope(|s| s.copy(&stream, &mut dst, src).map(drop))
                    .unwrap()
            })
        });
        group.bench_function(id("d2h"), |b| {
            let src = dev_a.slice(..len).unwrap();
            let dst = &mut host[..len];
            b.iter(|| {
                ctx.async_scope(|s| s.copy(&stream, dst, &src).map(drop))
                    .unwrap()
            })
        });
        group.bench_function(id("d2d"), |b| {
            let src = dev_a.slice(..len).unwrap();
            let mut dst = dev_b.slice_mut(..len).unwrap();
            b.iter(|| {
                ctx.async_scope(|s| s.copy(&stream, &mut dst, &src).map(drop))
                    .unwrap()
            })
        });
    }
    group.finish();
    dev_b.free().unwrap();
    dev_a.free().unwrap();
    host.free().unwrap();
    stream.destroy().unwrap();
}

fn all(c: &mut Criterion) {
    let acl = Acl::init().unwrap();
    assert!(
        acl.simulator().is_some(),
        "these numbers are meant for the simulator"
    );
    let device = acl.set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    bandwidth(c, &ctx);
    ctx.destroy().unwrap();
    device.reset().unwrap();
    acl.finalize().unwrap();
}

criterion_group!(benches, all);
criterion_main!(benches);
