//! Bad input: every function that takes a path, a size or bytes
//! from the user answers bad input with a typed error (never a signal, a hang or an unbounded
//! allocation), and the simulator never blocks other threads on a slow file.
//!
//! One test per attack. Each asserts the correct behaviour, so it fails while the library or
//! the simulator is wrong. Attacks that could crash, hang or exhaust memory run in a child
//! process with a deadline (`tests/support/child.rs`): a signal or a hang fails that test only.
//! This module: `loader_*` library paths.

use crate::support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ascend_typestate::{Acl, Error, InitOptions, LoadError};

use super::bad_inputs_common::{is_child, mkfifo, run_child};

/// TOCTOU in the loader: another thread swaps the library path between a valid ELF (a shared
/// library without the runtime's symbols, so every load fails cleanly and is tried again) and
/// a FIFO, by `rename`. The check sees the ELF, `dlopen` may open the FIFO and wait for a
/// writer forever.
///
/// A documented limit, not a fix: a file replaced between the check and `dlopen` is outside
/// what the pre-checks promise (the loader's docs, "Changes after the check": whoever can
/// rename files in the runtime's directory chooses the code that runs). So this test does
/// not assert that every `Acl::init_with` returns on its own. It asserts that the only way
/// one does not is the documented one: blocked in `dlopen`'s open of the swapped-in FIFO.
/// A monitor thread, when a call has not returned for 500 ms, opens the FIFO's write end
/// without blocking (which succeeds only while someone has it open for reading, here the
/// blocked loader) and closes it; the call must then return, with a typed error. A call that
/// is blocked for 10 s while no one reads the FIFO, or that stays blocked 5 s after the
/// writer came and went, fails the test (the child exits at once, without running exit handlers, which
/// would wait for the loader's lock).
///
/// Not in the default run: it races a renaming thread against the loader, and on a loaded
/// 2-core machine one run of CI's test command was killed at its 60 s bound (the monitor's
/// unblocking raced a newer swap). Run it with `cargo test --test models bad_library_paths::
/// -- --ignored`; a deterministic test of the limit is future work.
#[test]
#[ignore = "timing-dependent demonstration of a documented limit (see the doc comment)"]
fn loader_a_library_swapped_for_a_fifo_after_the_check_blocks_only_on_that_fifo() {
    if !is_child() {
        let out = run_child(
            "loader_a_library_swapped_for_a_fifo_after_the_check_blocks_only_on_that_fifo",
            &[],
            Duration::from_secs(60),
        );
        eprintln!(
            "{}",
            out.lines()
                .filter(|l| l.contains("loader:"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        return;
    }
    let lib = support::compile_shared_library(
        "bad_input_not_a_runtime",
        "int bad_input_nothing(void) { return 0; }\n",
    );
    let dir = lib.parent().unwrap().to_path_buf();
    let fifo = dir.join("lib.fifo");
    mkfifo(&fifo);
    let path = dir.join("libascendcl.so");
    std::fs::hard_link(&lib, &path).unwrap();
    let stop = AtomicBool::new(false);
    let (started, finished, stalls) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    // Ends the child now: `exit` would run the loader's exit handlers, which wait for the
    // lock the blocked `dlopen` holds.
    let fail = |why: String| -> ! {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "loader: FAILED: {why}");
        let _ = std::io::stderr().flush();
        // SAFETY: `_exit` ends the process without running any code of it.
        unsafe { libc::_exit(3) }
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            let (tmp_a, tmp_b) = (dir.join("tmp.a"), dir.join("tmp.b"));
            while !stop.load(Ordering::SeqCst) {
                let _ = std::fs::hard_link(&lib, &tmp_a);
                let _ = std::fs::rename(&tmp_a, &path);
                let _ = std::fs::hard_link(&fifo, &tmp_b);
                let _ = std::fs::rename(&tmp_b, &path);
            }
        });
        s.spawn(|| {
            use std::os::unix::fs::OpenOptionsExt as _;
            let mut last = (0, Instant::now());
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
                let done = finished.load(Ordering::SeqCst);
                if done != last.0 || started.load(Ordering::SeqCst) == done {
                    last = (done, Instant::now());
                    continue;
                }
                let blocked = last.1.elapsed();
                if blocked < Duration::from_millis(500) {
                    continue;
                }
                // The documented stall, if the FIFO has a reader: let it see end of file. A
                // call slow for another reason (a loaded machine) gets 10 s before it counts
                // as a hang.
                let writer = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo);
                match writer {
                    Ok(writer) => drop(writer),
                    Err(_) if blocked < Duration::from_secs(10) => continue,
                    Err(e) => fail(format!(
                        "Acl::init_with blocked for {blocked:?} while no one reads the FIFO \
                         ({e}): a hang the loader's docs do not describe"
                    )),
                }
                stalls.fetch_add(1, Ordering::SeqCst);
                let released = Instant::now();
                while finished.load(Ordering::SeqCst) == done {
                    if released.elapsed() > Duration::from_secs(5) {
                        fail(
                            "Acl::init_with still blocked 5 s after a writer opened and \
                              closed the FIFO"
                                .to_owned(),
                        );
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                last = (finished.load(Ordering::SeqCst), Instant::now());
            }
        });
        let (mut missing, mut refused, mut other) = (0, 0, Vec::new());
        let begun = Instant::now();
        while begun.elapsed() < Duration::from_secs(10) {
            started.fetch_add(1, Ordering::SeqCst);
            let result = Acl::init_with(&InitOptions::default().library(&path));
            finished.fetch_add(1, Ordering::SeqCst);
            match result {
                Ok(_) => panic!("a library without aclInit loaded"),
                Err(Error::Load(e)) => match *e {
                    LoadError::MissingSymbol { .. } => missing += 1,
                    LoadError::NotFound { .. } => refused += 1,
                    e => other.push(format!("{e:?}")),
                },
                Err(e) => other.push(format!("{e:?}")),
            }
        }
        stop.store(true, Ordering::SeqCst);
        println!(
            "loader: {missing} loads without the runtime's symbols, {refused} refused; \
             {} stalled in dlopen on the swapped-in FIFO until a writer came (the documented \
             limit); others {other:?}",
            stalls.load(Ordering::SeqCst)
        );
    });
}

/// Search step 4 (the system loader): a FIFO named `libascendcl.so` in a directory of
/// `LD_LIBRARY_PATH`. `Acl::init()` must return (an error, or the simulator found later),
/// not wait forever for a writer.
#[test]
fn loader_a_fifo_on_the_system_search_path_does_not_hang() {
    if !is_child() {
        let dir = support::scratch_dir("bad_input_ld_fifo");
        mkfifo(&dir.join("libascendcl.so"));
        let mut search = dir.into_os_string();
        if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
            search.push(":");
            search.push(old);
        }
        run_child(
            "loader_a_fifo_on_the_system_search_path_does_not_hang",
            &[("LD_LIBRARY_PATH", &search)],
            Duration::from_secs(30),
        );
        return;
    }
    match Acl::init() {
        Ok(acl) => {
            println!("loaded {}", acl.library());
            acl.finalize().unwrap();
        }
        Err(e) => println!("refused: {e}"),
    }
}

/// A copy of the simulator whose `PT_DYNAMIC` header says its dynamic section is at the start
/// of the code segment (its `p_vaddr` moved inside another `PT_LOAD`, `p_offset` unchanged, so
/// the headers contradict each other): the system loader reads code as dynamic entries and dies
/// of `SIGSEGV`. A header-level inconsistency the pre-checks can see, so a typed error.
#[test]
fn loader_a_pt_dynamic_moved_inside_another_segment_is_refused() {
    if !is_child() {
        let bytes = std::fs::read(support::simulator_path()).unwrap();
        assert_eq!(
            bytes[..6],
            *b"\x7fELF\x02\x01",
            "a 64-bit little-endian ELF"
        );
        let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap());
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let phoff = usize::try_from(u64_at(32)).unwrap();
        let headers: Vec<usize> = (0..usize::from(u16_at(56)))
            .map(|i| phoff + i * 56)
            .collect();
        let dynamic = *headers
            .iter()
            .find(|&&h| u32_at(h) == 2)
            .expect("PT_DYNAMIC");
        // The executable PT_LOAD (flags & PF_X).
        let code = *headers
            .iter()
            .find(|&&h| u32_at(h) == 1 && u32_at(h + 4) & 1 == 1)
            .expect("an executable PT_LOAD");
        let (code_vaddr, code_memsz) = (u64_at(code + 16), u64_at(code + 40));
        assert!(u64_at(dynamic + 40) <= code_memsz);
        let mut copy = bytes.clone();
        copy[dynamic + 16..dynamic + 24].copy_from_slice(&code_vaddr.to_le_bytes());
        copy[dynamic + 24..dynamic + 32].copy_from_slice(&code_vaddr.to_le_bytes());
        let dir = support::scratch_dir("bad_input_dynamic_in_code");
        let path = dir.join("libascendcl.so");
        std::fs::write(&path, copy).unwrap();
        run_child(
            "loader_a_pt_dynamic_moved_inside_another_segment_is_refused",
            &[("BAD_INPUTS_LIBRARY", path.as_os_str())],
            Duration::from_secs(30),
        );
        return;
    }
    let path = PathBuf::from(std::env::var_os("BAD_INPUTS_LIBRARY").expect("the library"));
    match Acl::init_with(&InitOptions::default().library(&path)) {
        Ok(acl) => panic!("loaded {}", acl.library()),
        Err(e) => println!("refused: {e}"),
    }
}
