//! Many `#[test]`s in one process, run in parallel by cargo's default test runner, each
//! needing the runtime: they share it through `Acl::shared()` (initialised once, never
//! finalized). check.sh runs this file 20 times.

use ascend_typestate::Acl;

fn acl() -> &'static Acl {
    Acl::shared().expect("the simulator is a dev-dependency: it loads without setup")
}

/// No protocol violation reached the simulator's checker (findings are process-wide:
/// every test here must stay clean for any of them to pass).
fn assert_clean(acl: &Acl) {
    let sim = acl.simulator().expect("tests run on the simulator");
    let findings = sim.findings();
    assert!(findings.is_empty(), "{findings:#?}");
}

macro_rules! round_trips {
    ($($name:ident: $device:expr, $len:expr;)*) => {$(
        #[test]
        fn $name() {
            let acl = acl();
            let data: Vec<u32> = (0..$len).collect();
            for _ in 0..20 {
                let back = downstream_check::round_trip(acl, $device, &data).unwrap();
                assert_eq!(back, data);
            }
            assert_clean(acl);
        }
    )*};
}

round_trips! {
    round_trip_small_device_0: 0, 16;
    round_trip_large_device_0: 0, 1 << 16;
    round_trip_small_device_1: 1, 16;
    round_trip_large_device_1: 1, 1 << 16;
    round_trip_odd_length_0: 0, 1001;
    round_trip_odd_length_1: 1, 4099;
}

#[test]
fn a_second_owned_runtime_is_refused_with_a_hint() {
    let _shared = acl();
    let err = Acl::init().expect_err("the shared runtime is alive (P2)");
    assert!(err.to_string().contains("Acl::shared()"), "{err}");
}

#[test]
fn handles_move_to_spawned_threads() {
    let acl = acl();
    let workers: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let device = acl.set_device(i % 2).unwrap();
                let ctx = device.create_context().unwrap();
                let stream = ctx.create_stream().unwrap();
                stream.synchronize().unwrap();
                stream.destroy().unwrap();
                ctx.destroy().unwrap();
                device // a Device<'static> outlives the thread that set it
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap().reset().unwrap();
    }
    assert_clean(acl);
}
