//! The typed API against raw calls, on the simulator. For each sequence the
//! typed version is compared with the result layer (`acl.api()`), and for (a) and (b) also
//! with the bare function pointers of `api.functions()`:
//!
//! * `events`: record on one stream, wait + reset on another, synchronize both. `raw_api`
//!   is what a C programmer writes; `raw_api_join` issues exactly the typed API's calls,
//!   including the join event it inserts before each re-record (see README, "Benchmarks").
//! * `copy_4k`: `aclrtMemcpyAsync` host-to-device of 4 KiB, then synchronize.
//! * `callback`: launch an empty blocking callback, then synchronize.
//!
//! ```sh
//! cargo bench -p ascend-typestate-benches --bench typed_vs_raw
//! scripts/bench_summary.sh   # medians and typed/raw ratios
//! ```

use std::hint::black_box;
use std::time::Duration;

use ascend_typestate::MallocPolicy;
use ascend_typestate::sys::bindings::ACL_EVENT_SYNC;
use ascend_typestate::sys::loader::{Api, LoadOptions, load_global};
use ascend_typestate::{Acl, Context, Event, ReportThread, Reset};
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "common/mod.rs"]
mod common;
use common::*;

fn configure<'c>(
    c: &'c mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'c, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1500));
    group
}

fn events(c: &mut Criterion, ctx: &Context<'_>, api: &'static Api) {
    let producer = ctx.create_stream().unwrap();
    let consumer = ctx.create_stream().unwrap();
    let mut group = configure(c, "events");

    // Start from a steady state: one cycle already done, so every measured cycle re-records.
    let first: Event<'_, Reset> = ctx.create_event().unwrap().into();
    let mut slot = Some(typed_event_cycle(first, &producer, &consumer).unwrap());
    group.bench_function("typed", |b| {
        b.iter(|| {
            let event = slot.take().unwrap();
            slot = Some(typed_event_cycle(event, &producer, &consumer).unwrap());
        })
    });
    group.bench_function("typed_wait_and_reset", |b| {
        b.iter(|| {
            let event = slot.take().unwrap();
            slot = Some(typed_event_cycle_direct(event, &producer, &consumer).unwrap());
        })
    });
    let last = slot.take().unwrap();
    drop(slot);
    last.destroy().unwrap();

    let (p, q) = (producer.as_raw(), consumer.as_raw());
    // SAFETY: a raw event of the current context, destroyed below.
    let raw = unsafe { api.create_event_with_flag(ACL_EVENT_SYNC) }.unwrap();
    raw_event_cycle(api, raw, p, q).unwrap();
    group.bench_function("raw_api", |b| {
        b.iter(|| raw_event_cycle(api, black_box(raw), p, q).unwrap())
    });
    group.bench_function("raw_api_join", |b| {
        b.iter(|| raw_event_cycle_with_join(api, black_box(raw), p, q).unwrap())
    });
    group.bench_function("raw_fn_table", |b| {
        b.iter(|| fn_table_event_cycle(api, black_box(raw), p, q))
    });
    group.finish();
    // SAFETY: both streams were synchronised after the last cycle; destroyed once.
    unsafe { api.destroy_event(raw) }.unwrap();
    producer.destroy().unwrap();
    consumer.destroy().unwrap();
}

fn copies(c: &mut Criterion, ctx: &Context<'_>, api: &'static Api) {
    let stream = ctx.create_stream().unwrap();
    let mut dev = ctx
        .alloc::<u8>(COPY_BYTES, MallocPolicy::HugeFirst)
        .unwrap();
    let host = ctx.alloc_host::<u8>(COPY_BYTES).unwrap();
    let raw = raw_buffers(api).unwrap();
    let s = stream.as_raw();
    let mut group = configure(c, "copy_4k");
    group.bench_function("typed", |b| {
        b.iter(|| typed_copy(ctx, &stream, &mut dev, &host).unwrap())
    });
    group.bench_function("raw_api", |b| {
        b.iter(|| raw_copy(api, s, black_box(raw.0), raw.1).unwrap())
    });
    group.bench_function("raw_fn_table", |b| {
        b.iter(|| fn_table_copy(api, s, black_box(raw.0), raw.1))
    });
    group.finish();
    free_raw_buffers(api, raw).unwrap();
    dev.free().unwrap();
    host.free().unwrap();
    stream.destroy().unwrap();
}

fn callbacks(c: &mut Criterion, ctx: &Context<'_>, api: &'static Api) {
    let mut group = configure(c, "callback");

    let report = ReportThread::spawn(ctx).unwrap();
    let subscribed = report.subscribe(ctx.create_stream().unwrap()).unwrap();
    group.bench_function("typed", |b| b.iter(|| typed_callback(&subscribed).unwrap()));
    subscribed.unsubscribe().unwrap().destroy().unwrap();
    report.stop().unwrap();

    // SAFETY: a raw stream of the current context, destroyed below.
    let stream = unsafe { api.create_stream() }.unwrap();
    let thread = RawReportThread::spawn(api, ctx.as_raw());
    // SAFETY: the stream is live; the thread processes reports until `stop`.
    unsafe { api.subscribe_report(thread.thread_id, stream) }.unwrap();
    group.bench_function("raw_api", |b| {
        b.iter(|| raw_callback(api, black_box(stream)).unwrap())
    });
    group.finish();
    // SAFETY: every callback ran (synchronised); the stream is live, destroyed once.
    unsafe {
        api.unsubscribe_report(thread.thread_id, stream).unwrap();
        api.destroy_stream(stream).unwrap();
    }
    thread.stop();
}

fn all(c: &mut Criterion) {
    let acl = Acl::init().unwrap();
    assert!(
        acl.simulator().is_some(),
        "these numbers are meant for the simulator"
    );
    // `acl.api()` borrows the token; the raw report thread needs the `'static` table, which
    // is the same one (the library is loaded once per process).
    let api = load_global(&LoadOptions::default()).unwrap();
    assert!(std::ptr::eq(api, acl.api()));
    let device = acl.set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    events(c, &ctx, api);
    copies(c, &ctx, api);
    callbacks(c, &ctx, api);
    ctx.destroy().unwrap();
    device.reset().unwrap();
    acl.finalize().unwrap();
}

criterion_group!(benches, all);
criterion_main!(benches);
