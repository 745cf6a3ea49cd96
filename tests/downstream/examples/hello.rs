//! `cargo run --example hello`: an example of a downstream crate loads the simulator (a
//! dev-dependency) with no environment variable and no setup.

fn main() -> Result<(), ascend_typestate::Error> {
    let acl = ascend_typestate::Acl::init()?;
    println!("runtime library: {}", acl.library());
    let back = downstream_check::round_trip(&acl, 0, &[1, 2, 3])?;
    assert_eq!(back, [1, 2, 3]);
    println!("round trip: {back:?}");
    acl.finalize()?;
    Ok(())
}
