//! Finding and opening the runtime library (`src/sys/loader.rs`).
//!
//! Bad library files: refused before `dlopen`, through every entry (each in a
//! child process): truncated, empty, special or huge files, ELF files for another target,
//! patched copies of the simulator, segments not mapped from their own bytes.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use ascend_typestate::LoadError;
use ascend_typestate::sys::loader::{Api, LoadOptions};

use super::library_common::{
    PT_LOAD, SWEEP_ENTRY, SWEEP_PATH, elf64_header, machines, simulator_bytes, sweep_in_child,
};

/// Each entry and the `TriedPath::source` it reports.
const ENTRIES: [(&str, &str); 3] = [
    ("strict", "strict"),
    ("library", "caller"),
    ("env", "ASCEND_ACL_LIB"),
];

/// Not a test of its own: the child side of the sweep (passes trivially otherwise). Prints
/// one `SWEEP` line per path tried, or what else happened.
#[test]
fn sweep_child() {
    use ascend_typestate::{Acl, Error, InitOptions};
    let Some(entry) = std::env::var_os(SWEEP_ENTRY) else {
        return;
    };
    let path = PathBuf::from(std::env::var_os(SWEEP_PATH).unwrap_or_default());
    let result = match entry.to_str() {
        Some("strict") => Acl::init_with(&InitOptions::default().strict_library(&path)),
        Some("library") => Acl::init_with(&InitOptions::default().library(&path)),
        Some("env") => Acl::init(), // ASCEND_ACL_LIB names the file.
        _ => {
            // `path` is a runtime with a model library beside it.
            let api = Api::load(&LoadOptions::default().path(&path)).expect("the runtime loads");
            match api.models() {
                Ok(_) => println!("SWEEP\tmodels found"),
                Err(missing) => {
                    for (file, reason) in &missing.tried {
                        let reason = reason.as_deref().unwrap_or("-");
                        println!("SWEEP\tmodel\t{}\t{reason}", file.display());
                    }
                }
            }
            return;
        }
    };
    match result {
        Ok(acl) => println!("SWEEP\tloaded\t{}", acl.library()),
        Err(Error::Load(error)) => match *error {
            LoadError::NotFound { tried } => {
                for t in tried {
                    println!("SWEEP\trefused\t{}\t{}", t.source, t.reason);
                }
            }
            other => println!("SWEEP\tanother load error\t{other:?}"),
        },
        Err(other) => println!("SWEEP\tanother error\t{other:?}"),
    }
}

/// Loads `path` through every entry, each in a child process (a `SIGBUS` fails this test, not
/// the harness): each is a typed `Error::Load(NotFound)` naming that one file with a reason
/// containing `expected`. Returns the slowest child's time.
fn refused_by_every_entry(path: &Path, expected: &str) -> std::time::Duration {
    let mut slowest = std::time::Duration::ZERO;
    for (entry, source) in ENTRIES {
        let (lines, took) = sweep_in_child(entry, path);
        slowest = slowest.max(took);
        assert_eq!(lines.len(), 1, "{entry} {}: {lines:?}", path.display());
        let line = &lines[0];
        assert_eq!(
            line[..2],
            ["refused", source],
            "{entry} {}: {line:?}",
            path.display()
        );
        assert!(
            line[2].contains(expected),
            "{entry} {}: expected a reason with `{expected}`, got `{}`",
            path.display(),
            line[2]
        );
    }
    slowest
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// The offset in the file of each program header and its `p_type` (ELF64).
fn program_headers(bytes: &[u8]) -> Vec<(usize, u32)> {
    let phoff = usize::try_from(u64_at(bytes, 32)).unwrap();
    let (size, count) = (
        usize::from(u16_at(bytes, 54)),
        usize::from(u16_at(bytes, 56)),
    );
    assert_eq!(size, 56);
    (0..count)
        .map(|i| {
            let at = phoff + i * size;
            (
                at,
                u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()),
            )
        })
        .collect()
}

/// The program header of the simulator's first segment of type `kind`.
fn first_of(bytes: &[u8], kind: u32) -> usize {
    program_headers(bytes)
        .into_iter()
        .find(|&(_, k)| k == kind)
        .map(|(at, _)| at)
        .unwrap_or_else(|| panic!("no segment of type {kind}"))
}

const PT_DYNAMIC: u32 = 2;

#[test]
fn the_whole_simulator_loads_through_every_entry_in_a_child() {
    // The control: the sweep's harness sees a load succeed, and the checks accept the
    // simulator (a copy, so that strict loading's file is the one checked).
    let dir = support::scratch_dir("sweep-whole");
    let copy = dir.join("libascendcl.so");
    std::fs::copy(support::simulator_path(), &copy).unwrap();
    for (entry, _) in ENTRIES {
        let (lines, _) = sweep_in_child(entry, &copy);
        assert_eq!(lines.len(), 1, "{entry}: {lines:?}");
        assert_eq!(lines[0][0], "loaded", "{entry}: {lines:?}");
    }
}

#[test]
fn truncated_copies_of_the_simulator_are_refused_through_every_entry() {
    let bytes = simulator_bytes();
    let dir = support::scratch_dir("sweep-truncated");
    // Where the loadable segments end, and where the section headers begin.
    let loads_end = program_headers(&bytes)
        .into_iter()
        .filter(|&(_, kind)| kind == PT_LOAD)
        .map(|(at, _)| u64_at(&bytes, at + 8) + u64_at(&bytes, at + 32))
        .max()
        .unwrap();
    let loads_end = usize::try_from(loads_end).unwrap();
    let half = bytes.len() / 2;
    assert!(
        u64_at(&bytes, 40) as usize > half,
        "section headers in the second half"
    );
    let cases: [(usize, &str); 9] = [
        (0, "empty file"),
        (1, "shorter than an ELF header"),
        (16, "shorter than an ELF header"),
        (63, "shorter than an ELF header"),
        (64, "truncated: the program headers"),
        (4096, "truncated: PT_LOAD segment"),
        (loads_end - 1, "truncated: PT_LOAD segment"),
        // Every segment is there, the section headers are not: still a copy cut short.
        (loads_end, "truncated: the section headers"),
        (half, "truncated"),
    ];
    for (size, expected) in cases {
        let path = dir.join(format!("libascendcl-{size}.so"));
        std::fs::write(&path, &bytes[..size]).unwrap();
        refused_by_every_entry(&path, expected);
    }
}

#[test]
fn an_empty_file_a_text_file_and_a_directory_are_refused_through_every_entry() {
    let dir = support::scratch_dir("sweep-not-libraries");
    let empty = dir.join("empty.so");
    std::fs::File::create(&empty).unwrap();
    refused_by_every_entry(&empty, "empty file");
    let text = dir.join("text.so");
    std::fs::write(&text, "INPUT(libascendcl.so.1)\n").unwrap();
    refused_by_every_entry(&text, "not an ELF file");
    let directory = dir.join("libascendcl.so");
    std::fs::create_dir(&directory).unwrap();
    refused_by_every_entry(&directory, "not a regular file");
}

#[test]
fn special_files_and_link_loops_are_refused_through_every_entry() {
    refused_by_every_entry(Path::new("/dev/zero"), "not a regular file");
    let dir = support::scratch_dir("sweep-loop");
    let (a, b) = (dir.join("a.so"), dir.join("b.so"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    refused_by_every_entry(&a, "symbolic links");
}

#[test]
fn a_fifo_is_refused_through_every_entry_without_blocking() {
    let dir = support::scratch_dir("sweep-fifo");
    let fifo = dir.join("libascendcl.so");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let slowest = refused_by_every_entry(&fifo, "not a regular file");
    eprintln!("FIFO: slowest child {slowest:?}");
}

#[test]
fn a_huge_sparse_file_is_refused_without_being_read() {
    let dir = support::scratch_dir("sweep-sparse");
    let size = 8 << 30;
    // Zeros.
    let zeros = dir.join("zeros.so");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(size)
        .unwrap();
    let slowest = refused_by_every_entry(&zeros, "not an ELF file");
    eprintln!("8 GiB of zeros: slowest child {slowest:?}");
    // A header claiming the most program headers the field allows, at the file's end.
    let claims = dir.join("claims.so");
    let mut header = elf64_header(machines().0, false);
    put_u64(&mut header, 32, size - 64);
    header[56..58].copy_from_slice(&u16::MAX.to_le_bytes());
    std::fs::write(&claims, &header).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&claims)
        .unwrap()
        .set_len(size)
        .unwrap();
    let slowest = refused_by_every_entry(&claims, "65535 program headers");
    eprintln!("8 GiB claiming 65535 program headers: slowest child {slowest:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn elf_files_for_another_target_are_refused_through_every_entry() {
    let dir = support::scratch_dir("sweep-targets");
    let (ours, other) = machines();
    let name = |m: u16| if m == 183 { "aarch64" } else { "x86_64" };
    // Another machine, header crafted by hand.
    let foreign = dir.join("foreign.so");
    std::fs::write(&foreign, elf64_header(other, false)).unwrap();
    let expected = format!(
        "a 64-bit ELF file for {}; this process is 64-bit {}",
        name(other),
        name(ours)
    );
    refused_by_every_entry(&foreign, &expected);
    // A 32-bit library of this machine's family (x86 or arm), header crafted by hand.
    let (ours32, name32) = if ours == 183 {
        (40u16, "arm")
    } else {
        (3, "x86")
    };
    let mut elf32 = vec![0u8; 52];
    elf32[..7].copy_from_slice(b"\x7fELF\x01\x01\x01");
    elf32[16..18].copy_from_slice(&3u16.to_le_bytes());
    elf32[18..20].copy_from_slice(&ours32.to_le_bytes());
    let bits32 = dir.join("elf32.so");
    std::fs::write(&bits32, &elf32).unwrap();
    refused_by_every_entry(&bits32, &format!("a 32-bit ELF file for {name32}"));
    // This machine, the other byte order.
    let big = dir.join("big-endian.so");
    std::fs::write(&big, elf64_header(ours, true)).unwrap();
    refused_by_every_entry(&big, "a big-endian ELF file; this process is little-endian");
}

/// Copies of the simulator with one header field changed, each refused before `dlopen`
/// (unchanged, the copy loads: `the_whole_simulator_loads_through_every_entry_in_a_child`).
#[test]
fn patched_copies_of_the_simulator_are_refused_through_every_entry() {
    let bytes = simulator_bytes();
    let dir = support::scratch_dir("sweep-patched");
    let len = bytes.len() as u64;
    let write = |name: &str, patch: &dyn Fn(&mut Vec<u8>)| {
        let mut copy = bytes.clone();
        patch(&mut copy);
        let path = dir.join(name);
        std::fs::write(&path, copy).unwrap();
        path
    };
    // An executable, not a library.
    let exec = write("exec.so", &|b| {
        b[16..18].copy_from_slice(&2u16.to_le_bytes())
    });
    refused_by_every_entry(&exec, "not a shared library: ELF type 2");
    // The program headers past the end of the file.
    let phoff = write("phoff.so", &|b| put_u64(b, 32, len - 8));
    refused_by_every_entry(&phoff, "truncated: the program headers");
    // The last PT_LOAD's bytes past the end of the file (its size grown by the file's).
    let last_load = program_headers(&bytes)
        .into_iter()
        .rfind(|&(_, kind)| kind == PT_LOAD)
        .unwrap()
        .0;
    let load = write("load.so", &|b| {
        let filesz = u64_at(b, last_load + 32);
        put_u64(b, last_load + 32, filesz + len);
        let memsz = u64_at(b, last_load + 40);
        put_u64(b, last_load + 40, memsz + len);
    });
    refused_by_every_entry(&load, "truncated: PT_LOAD segment");
    // No PT_DYNAMIC (its header made PT_NULL).
    let dynamic = first_of(&bytes, PT_DYNAMIC);
    let no_dynamic = write("no-dynamic.so", &|b| b[dynamic..dynamic + 4].fill(0));
    refused_by_every_entry(&no_dynamic, "no PT_DYNAMIC segment");
    // PT_DYNAMIC in no loaded segment (`dlopen` dies of SIGSEGV on it).
    let stray = write("stray-dynamic.so", &|b| {
        put_u64(b, dynamic + 16, 1 << 40);
        put_u64(b, dynamic + 24, 1 << 40);
    });
    refused_by_every_entry(&stray, "the PT_DYNAMIC segment (program header");
}

/// Segments the loader (or the unwinder) reads in memory must be where one `PT_LOAD` maps
/// their own bytes: each copy of the simulator below moves one of them, or takes the write
/// permission from the segment holding `PT_DYNAMIC`, and is refused before `dlopen`.
#[test]
fn segments_read_in_memory_must_be_mapped_from_their_own_bytes() {
    const PT_TLS: u32 = 7;
    const PT_PHDR: u32 = 6;
    const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
    let bytes = simulator_bytes();
    let dir = support::scratch_dir("sweep-segments");
    let write = |name: &str, patch: &dyn Fn(&mut Vec<u8>)| {
        let mut copy = bytes.clone();
        patch(&mut copy);
        let path = dir.join(name);
        std::fs::write(&path, copy).unwrap();
        path
    };
    // The file offset moved, the address kept: memory no longer holds those bytes.
    for (kind, name) in [(PT_GNU_EH_FRAME, "PT_GNU_EH_FRAME"), (PT_TLS, "PT_TLS")] {
        let Some((at, _)) = program_headers(&bytes)
            .into_iter()
            .find(|&(_, k)| k == kind)
        else {
            eprintln!("note: the simulator has no {name} segment; case skipped");
            continue;
        };
        let moved = write(&format!("moved-{name}.so"), &|b| {
            let offset = u64_at(b, at + 8);
            put_u64(b, at + 8, offset + 16);
        });
        refused_by_every_entry(&moved, &format!("the {name} segment (program header"));
    }
    // PT_PHDR moved by 8 bytes in the file and in memory: consistent, but not the table.
    if let Some((at, _)) = program_headers(&bytes)
        .into_iter()
        .find(|&(_, k)| k == PT_PHDR)
    {
        let phdr = write("moved-phdr.so", &|b| {
            let (offset, vaddr) = (u64_at(b, at + 8), u64_at(b, at + 16));
            put_u64(b, at + 8, offset + 8);
            put_u64(b, at + 16, vaddr + 8);
        });
        refused_by_every_entry(&phdr, "is not the program header table");
    }
    // The segment holding the dynamic section made read-only (glibc writes to it).
    let dynamic = first_of(&bytes, PT_DYNAMIC);
    let dynamic_at = u64_at(&bytes, dynamic + 16);
    let holder = program_headers(&bytes)
        .into_iter()
        .find(|&(at, kind)| {
            let (vaddr, memsz) = (u64_at(&bytes, at + 16), u64_at(&bytes, at + 40));
            kind == PT_LOAD && (vaddr..vaddr + memsz).contains(&dynamic_at)
        })
        .expect("the PT_LOAD holding PT_DYNAMIC")
        .0;
    let read_only = write("read-only-dynamic.so", &|b| {
        b[holder + 4] &= !2; // PF_W
    });
    refused_by_every_entry(&read_only, "lies in a read-only PT_LOAD segment");
}
