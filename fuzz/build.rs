//! typed_sequences loads the simulator's cdylib (libascendcl.so), which cargo-fuzz builds
//! with AddressSanitizer and coverage instrumentation: their runtime is linked into the fuzz
//! binary, so the binary exports its symbols for the library to find.
fn main() {
    println!("cargo:rustc-link-arg-bin=typed_sequences=-Wl,--export-dynamic");
}
