//! Random copy programs through the typed memory API, run on the simulator and compared with
//! a model (M1, M2, S1, S2).
//!
//! A program has 1-3 streams, 2-4 device buffers and 2-3 host buffers (a `Vec<u32>`, a pinned
//! [`HostBuffer`], and a third of either kind) of 1-4096 `u32` elements, and up to 30
//! operations:
//! * synchronous copies of every kind (H2D, D2H, D2D, H2H) between in-bounds views: a whole
//!   buffer is passed as itself (`DeviceBuffer`, `Vec`, `HostBuffer`), a part as a
//!   `DeviceBuffer::slice` / `slice_mut` or a sub-slice, so copies are often partial;
//! * synchronous memsets of a whole device buffer;
//! * async scopes of up to 8 generated copies, memsets and simulated kernels
//!   (`simulated_map`) on random streams. Each buffer has one role per scope (the borrow
//!   checker allows nothing else): written once, or only read. A later operation may read a
//!   buffer written earlier in the scope only on the same stream, through the `Pending` result
//!   (S1; on another stream the typed API inserts a join after the writing task, which the
//!   model does not need to know about); `legalize` drops the operations that cannot be written this way, so a shrunk failure
//!   is a program the typed API accepts.
//!
//! Views are never empty in generated programs; `empty_view_at_the_end_of_a_device_buffer`
//! covers empty views (zero-element copies are no-ops, never issued to the runtime).
//!
//! Some copies (and kernels) are illegal by length (the source longer than the destination),
//! and some async memsets target host memory: both must be `Error::InvalidArgument`, before
//! any runtime call (M1), and change nothing.
//!
//! The model is plain `Vec<u32>` arithmetic, applied in program order. After every operation
//! (an async scope counts as one: it has synchronised its streams when it returns, S2), every
//! device buffer is read back (D2H) and every buffer compared with the model. Each case ends
//! with zero checker findings and zero live runtime objects.

use proptest::prelude::*;

use super::random_program_gen::{Buf, HostKind, Op, Program, View, program};
use super::random_program_run::run_case;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 32,
        // A case takes milliseconds: shrink far enough to print a minimal program.
        max_shrink_iters: 4096,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_copy_programs_match_the_model(program in program()) {
        run_case(&program).map_err(TestCaseError::fail)?;
    }
}

/// The bug found outside the generator (its views are never empty): an empty view at the end
/// of a device buffer, `slice(len..)`, points one past the allocation, and a copy from or to
/// it used to issue `aclrtMemcpy` with `count` 0 there (an M1 finding, `Error::Runtime`
/// 100000). Zero-element copies are now no-ops that never reach the runtime.
#[test]
fn empty_view_at_the_end_of_a_device_buffer() {
    let program = Program {
        streams: 1,
        dev_lens: vec![16, 16],
        hosts: vec![(HostKind::Vec, 16), (HostKind::Pinned, 16)],
        ops: vec![Op::Copy {
            dst: View {
                buf: Buf::Dev(0),
                start: 16,
                end: 16,
            },
            src: View {
                buf: Buf::Host(0),
                start: 16,
                end: 16,
            },
        }],
    };
    run_case(&program).unwrap();
}
