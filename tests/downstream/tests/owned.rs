//! A test binary of its own (its own process): the owned runtime, `Acl::init` then
//! `finalize`, which runs `aclFinalize` and lets the simulator check for leaks (P2).

use ascend_typestate::Acl;

#[test]
fn init_round_trip_finalize() {
    let acl = Acl::init().unwrap();
    let back = downstream_check::round_trip(&acl, 0, &[7; 100]).unwrap();
    assert_eq!(back, [7; 100]);
    let sim = acl.simulator().unwrap();
    acl.finalize().unwrap();
    assert_eq!(sim.live_objects(), 0);
    assert!(sim.findings().is_empty(), "{:#?}", sim.findings());
}
