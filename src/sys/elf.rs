//! What a library file's ELF header and program headers show, checked before `dlopen`.
//!
//! The system loader maps a library's segments and follows its program headers without
//! checking them against the file: a truncated copy dies of `SIGBUS` inside `dlopen`, a
//! `PT_DYNAMIC` whose address is not where its bytes are mapped of `SIGSEGV`. These checks
//! refuse, with a reason, what the headers alone show cannot be loaded into this process (see
//! the [loader's docs](super::loader#pre-checks) for the list and for what they cannot see).
//!
//! Bounded: at most the ELF header and [`MAX_PROGRAM_HEADERS`] program headers are read,
//! with positioned reads; nothing is mapped, and the file's size only enters comparisons.

use std::fs::File;
use std::os::unix::fs::{FileExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

/// The most program headers accepted (real libraries have about ten; the count field allows
/// 65,535, and `PN_XNUM` extended numbering is not used for libraries).
pub(crate) const MAX_PROGRAM_HEADERS: u16 = 1024;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const PT_NOTE: u32 = 4;
const PT_PHDR: u32 = 6;
const PT_TLS: u32 = 7;
const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
const PT_GNU_PROPERTY: u32 = 0x6474_e553;
const ET_DYN: u16 = 3;
/// `p_flags`: writable.
const PF_W: u32 = 2;

/// An opened library file that passed the checks, kept open until the library is loaded
/// so that its device and inode stay its own (an inode number is not reused while open).
#[derive(Debug)]
pub(crate) struct CheckedFile {
    _file: File,
    /// Device and inode of the file checked.
    pub(crate) id: (u64, u64),
}

/// Why a file was refused: the reason, for a `TriedPath`, and whether the system loader's
/// own search would pass over such a file and look on.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) reason: String,
    /// glibc's search for a bare name goes on past it (its `open_path` and `open_verify`):
    /// nothing there, no permission to open it, or an ELF file of another class or machine
    /// (a 32-bit library in a directory that also serves 64-bit programs). Any other
    /// refusal is a file glibc would open and fail on, or block on.
    pub(crate) passed_over: bool,
}

impl From<String> for Refused {
    fn from(reason: String) -> Refused {
        Refused {
            reason,
            passed_over: false,
        }
    }
}

/// Opens `path` without blocking (a FIFO swapped in after the caller's `stat` must not hang
/// the open) and checks what its headers show. The error is the reason, for a `TriedPath`.
pub(crate) fn open_checked(path: &Path) -> Result<CheckedFile, String> {
    open_verified(path).map_err(|refused| refused.reason)
}

/// [`open_checked`], saying also whether the system loader's search would pass over the
/// file ([`Refused::passed_over`]).
pub(crate) fn open_verified(path: &Path) -> Result<CheckedFile, Refused> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| Refused {
            passed_over: matches!(
                e.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::NotADirectory
                    | std::io::ErrorKind::PermissionDenied
            ),
            reason: if e.kind() == std::io::ErrorKind::NotFound {
                "does not exist".to_owned()
            } else {
                e.to_string()
            },
        })?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned().into());
    }
    check(&file, meta.len())?;
    Ok(CheckedFile {
        id: (meta.dev(), meta.ino()),
        _file: file,
    })
}

/// This process's ELF class, byte order and machine, if the checks know its architecture.
struct Target {
    bits: u32,
    big_endian: bool,
    machine: Option<u16>,
}

const TARGET: Target = Target {
    bits: usize::BITS,
    big_endian: cfg!(target_endian = "big"),
    machine: if cfg!(target_arch = "x86_64") {
        Some(62)
    } else if cfg!(target_arch = "aarch64") {
        Some(183)
    } else if cfg!(target_arch = "x86") {
        Some(3)
    } else if cfg!(target_arch = "arm") {
        Some(40)
    } else {
        None
    },
};

fn machine_name(machine: u16) -> String {
    match machine {
        3 => "x86".to_owned(),
        40 => "arm".to_owned(),
        62 => "x86_64".to_owned(),
        183 => "aarch64".to_owned(),
        other => format!("another machine (e_machine {other})"),
    }
}

/// Little- or big-endian fields of a byte slice; out-of-range reads give 0 (the callers
/// read only within sizes they checked).
struct Fields<'a> {
    bytes: &'a [u8],
    big: bool,
}

impl Fields<'_> {
    fn take<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = self.bytes.get(at..at + N) {
            out.copy_from_slice(src);
        }
        if self.big == cfg!(target_endian = "little") {
            out.reverse();
        }
        out
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_ne_bytes(self.take(at))
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_ne_bytes(self.take(at))
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from_ne_bytes(self.take(at))
    }
    /// An ELF32 word, widened.
    fn u32_wide(&self, at: usize) -> u64 {
        u64::from(self.u32(at))
    }
}

/// One program header, widened.
#[derive(Clone, Copy)]
struct Segment {
    kind: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
}

fn segment_name(kind: u32) -> &'static str {
    match kind {
        PT_LOAD => "PT_LOAD",
        PT_DYNAMIC => "PT_DYNAMIC",
        PT_INTERP => "PT_INTERP",
        PT_NOTE => "PT_NOTE",
        PT_PHDR => "PT_PHDR",
        PT_TLS => "PT_TLS",
        PT_GNU_EH_FRAME => "PT_GNU_EH_FRAME",
        PT_GNU_PROPERTY => "PT_GNU_PROPERTY",
        _ => "segment",
    }
}

fn type_name(kind: u16) -> &'static str {
    match kind {
        0 => "no file type",
        1 => "a relocatable object",
        2 => "an executable",
        4 => "a core dump",
        _ => "an unknown type",
    }
}

fn read_at(file: &File, buf: &mut [u8], offset: u64, what: &str) -> Result<(), String> {
    file.read_exact_at(buf, offset)
        .map_err(|e| format!("cannot read the {what}: {e}"))
}

/// The checks proper, on an open regular file of `size` bytes.
fn check(file: &File, size: u64) -> Result<(), Refused> {
    if size == 0 {
        return Err("empty file".to_owned().into());
    }
    let mut header = [0u8; 64];
    let head_len = header
        .len()
        .min(usize::try_from(size).unwrap_or(usize::MAX));
    read_at(file, &mut header[..head_len], 0, "ELF header")?;
    let magic = b"\x7fELF";
    let seen = head_len.min(magic.len());
    if header[..seen] != magic[..seen] {
        return Err("not an ELF file".to_owned().into());
    }
    let truncated_header = |needed: u64| {
        let unit = if size == 1 { "byte" } else { "bytes" };
        format!("truncated: {size} {unit}, shorter than an ELF header ({needed} bytes)")
    };
    // The identification (16 bytes) and e_machine (bytes 18-19) name the file's target.
    if size < 20 {
        return Err(truncated_header(if size < 5 || header[4] != 1 { 64 } else { 52 }).into());
    }
    let wide = match header[4] {
        1 => false,
        2 => true,
        other => return Err(format!("malformed ELF: unknown class {other} (EI_CLASS)").into()),
    };
    let big = match header[5] {
        1 => false,
        2 => true,
        other => {
            return Err(format!("malformed ELF: unknown byte order {other} (EI_DATA)").into());
        }
    };
    let fields = Fields {
        bytes: &header,
        big,
    };
    let bits = if wide { 64 } else { 32 };
    let machine = fields.u16(18);
    // A library for another target: the system loader's search passes over it.
    let other_target = |reason: String| Refused {
        reason,
        passed_over: true,
    };
    if let Some(ours) = TARGET.machine
        && (machine != ours || bits != TARGET.bits)
    {
        return Err(other_target(format!(
            "a {bits}-bit ELF file for {}; this process is {}-bit {}",
            machine_name(machine),
            TARGET.bits,
            machine_name(ours)
        )));
    }
    if bits != TARGET.bits {
        return Err(other_target(format!(
            "a {bits}-bit ELF file; this process is {}-bit",
            TARGET.bits
        )));
    }
    if big != TARGET.big_endian {
        let order = |big: bool| if big { "big-endian" } else { "little-endian" };
        return Err(format!(
            "a {} ELF file; this process is {}",
            order(big),
            order(TARGET.big_endian)
        )
        .into());
    }
    Ok(layout(file, size, &header, wide, big)?)
}

/// The checks of a file of this process's target: ELF type, program headers, segments and
/// section headers.
fn layout(file: &File, size: u64, header: &[u8; 64], wide: bool, big: bool) -> Result<(), String> {
    let fields = Fields { bytes: header, big };
    let truncated_header = |needed: u64| {
        format!("truncated: {size} bytes, shorter than an ELF header ({needed} bytes)")
    };
    let header_size: u64 = if wide { 64 } else { 52 };
    if size < header_size {
        return Err(truncated_header(header_size));
    }
    let kind = fields.u16(16);
    if kind != ET_DYN {
        return Err(format!(
            "not a shared library: ELF type {kind} ({}), not ET_DYN",
            type_name(kind)
        ));
    }
    // The header fields after e_entry, by class.
    let (phoff, shoff, at) = if wide {
        (fields.u64(32), fields.u64(40), 52)
    } else {
        (fields.u32_wide(28), fields.u32_wide(32), 40)
    };
    let (phentsize, phnum) = (fields.u16(at + 2), fields.u16(at + 4));
    let (shentsize, shnum) = (fields.u16(at + 6), fields.u16(at + 8));
    let entry_size: u16 = if wide { 56 } else { 32 };
    if phnum == 0 {
        return Err("malformed ELF: no program headers".to_owned());
    }
    if phentsize != entry_size {
        return Err(format!(
            "malformed ELF: program headers of {phentsize} bytes, expected {entry_size}"
        ));
    }
    if phnum > MAX_PROGRAM_HEADERS {
        return Err(format!(
            "malformed ELF: {phnum} program headers (at most {MAX_PROGRAM_HEADERS} accepted)"
        ));
    }
    let table_len = u64::from(phnum) * u64::from(entry_size);
    let table_end = phoff.checked_add(table_len);
    if table_end.is_none_or(|end| end > size) {
        return Err(format!(
            "truncated: the program headers (bytes {phoff}..{}) end beyond the end of the \
             file ({size} bytes)",
            phoff.saturating_add(table_len)
        ));
    }
    // At most MAX_PROGRAM_HEADERS * 56 bytes.
    let mut table = vec![0u8; usize::from(phnum) * usize::from(entry_size)];
    read_at(file, &mut table, phoff, "program headers")?;
    let table = Fields { bytes: &table, big };
    let segments = (0..usize::from(phnum)).map(|i| {
        let at = i * usize::from(entry_size);
        if wide {
            Segment {
                kind: table.u32(at),
                flags: table.u32(at + 4),
                offset: table.u64(at + 8),
                vaddr: table.u64(at + 16),
                filesz: table.u64(at + 32),
                memsz: table.u64(at + 40),
            }
        } else {
            Segment {
                kind: table.u32(at),
                flags: table.u32(at + 24),
                offset: table.u32_wide(at + 4),
                vaddr: table.u32_wide(at + 8),
                filesz: table.u32_wide(at + 16),
                memsz: table.u32_wide(at + 20),
            }
        }
    });
    check_segments(segments, size, phoff..phoff + table_len)?;
    // The section headers are not used for loading, but linkers write them last: a table
    // beyond the end of the file is a copy cut short (`e_shnum` 0 with an offset: extended
    // numbering, at least one entry).
    if shoff != 0 {
        let entries = u64::from(shnum.max(1));
        let end = shoff.saturating_add(entries * u64::from(shentsize));
        if end > size {
            return Err(format!(
                "truncated: the section headers (bytes {shoff}..{end}) end beyond the end of \
                 the file ({size} bytes)"
            ));
        }
    }
    Ok(())
}

/// The program headers: loadable segments within the file, a dynamic segment, and every
/// segment the loader or the unwinder reads through memory mapped by one loadable segment,
/// at the address its file offset gives (the file holding `program_headers`, for `PT_PHDR`).
fn check_segments(
    segments: impl Iterator<Item = Segment> + Clone,
    size: u64,
    program_headers: std::ops::Range<u64>,
) -> Result<(), String> {
    let mut loads = 0usize;
    for (index, segment) in segments.clone().enumerate() {
        let in_file = segment.filesz == 0
            || segment
                .offset
                .checked_add(segment.filesz)
                .is_some_and(|end| end <= size);
        if (segment.kind == PT_LOAD || segment.kind == PT_DYNAMIC) && !in_file {
            return Err(format!(
                "truncated: {} segment (program header {index}, bytes {}..{}) ends beyond \
                 the end of the file ({size} bytes)",
                segment_name(segment.kind),
                segment.offset,
                segment.offset.saturating_add(segment.filesz)
            ));
        }
        loads += usize::from(segment.kind == PT_LOAD);
    }
    if loads == 0 {
        return Err("malformed ELF: no PT_LOAD segment".to_owned());
    }
    if !segments.clone().any(|s| s.kind == PT_DYNAMIC) {
        return Err(
            "not a shared library: no PT_DYNAMIC segment (nothing to link against)".to_owned(),
        );
    }
    for (index, segment) in segments.clone().enumerate() {
        // How many bytes the loader reads through memory (a TLS segment's initial image is
        // copied from there; the rest of it is zeros).
        let len = match segment.kind {
            PT_TLS => segment.filesz,
            PT_DYNAMIC | PT_INTERP | PT_NOTE | PT_PHDR | PT_GNU_EH_FRAME | PT_GNU_PROPERTY => {
                segment.memsz
            }
            _ => continue,
        };
        let name = segment_name(segment.kind);
        let Some(load) = segments
            .clone()
            .find(|load| load.kind == PT_LOAD && maps(load, &segment, len))
        else {
            return Err(format!(
                "malformed ELF: the {name} segment (program header {index}: file offset \
                 {:#x}, address {:#x}) is not where any PT_LOAD segment maps its bytes (inside \
                 one, at the same distance from its start in the file and in memory)",
                segment.offset, segment.vaddr
            ));
        };
        // glibc before 2.35 relocates the dynamic section in place (later ones too, unless
        // PT_DYNAMIC itself is marked read-only): in a read-only segment, SIGSEGV.
        if segment.kind == PT_DYNAMIC && load.flags & PF_W == 0 {
            return Err(format!(
                "malformed ELF: the PT_DYNAMIC segment (program header {index}) lies in a \
                 read-only PT_LOAD segment; the system loader may write to it"
            ));
        }
        // The unwinder finds the segments through the program headers in memory.
        if segment.kind == PT_PHDR
            && (segment.offset != program_headers.start
                || segment.filesz != program_headers.end - program_headers.start)
        {
            return Err(format!(
                "malformed ELF: the PT_PHDR segment (program header {index}, bytes {}..{}) is \
                 not the program header table (bytes {}..{})",
                segment.offset,
                segment.offset.saturating_add(segment.filesz),
                program_headers.start,
                program_headers.end
            ));
        }
    }
    Ok(())
}

/// Whether `load` maps the first `len` bytes of `segment` in memory from the segment's own
/// bytes in the file: both ranges inside `load`'s, at the same distance from its start, and
/// read from the file (not the zero-filled tail beyond its `p_filesz`) for the bytes the
/// file holds.
fn maps(load: &Segment, segment: &Segment, len: u64) -> bool {
    let (Some(delta), Some(file_delta)) = (
        segment.vaddr.checked_sub(load.vaddr),
        segment.offset.checked_sub(load.offset),
    ) else {
        return false;
    };
    let in_memory = delta.checked_add(len).is_some_and(|end| end <= load.memsz);
    let in_file = delta
        .checked_add(segment.filesz.min(len))
        .is_some_and(|end| end <= load.filesz);
    delta == file_delta && in_memory && in_file
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Every regular file under `dir` (links not followed), at most `depth` levels down.
    fn files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && depth > 0 {
                files(&entry.path(), depth - 1, out);
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }

    /// The checks refuse no shared library or position-independent executable this system
    /// runs: every ELF file of this process's target with type `ET_DYN` in the system's
    /// library and program directories, the Rust toolchain's, and Cargo's `deps` directory
    /// (the simulator, proc-macro libraries). Not run by default (it depends on the
    /// machine): `cargo test --lib -- --ignored system_files`.
    #[test]
    #[ignore = "reads the whole system's libraries; run on purpose"]
    fn system_files_pass_the_checks() {
        let mut dirs: Vec<PathBuf> = [
            "/lib",
            "/lib64",
            "/usr/lib",
            "/usr/lib64",
            "/usr/local/lib",
            "/usr/bin",
            "/usr/sbin",
            "/usr/libexec",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        if let Ok(out) = std::process::Command::new("rustc")
            .args(["--print", "sysroot"])
            .output()
        {
            dirs.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
        }
        // This test's own directory: the simulator and the proc-macro libraries Cargo built.
        if let Some(deps) = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
        {
            dirs.push(deps);
        }
        let mut all = Vec::new();
        for dir in &dirs {
            files(dir, 8, &mut all);
        }
        // Separate debug information (`/usr/lib/debug/.build-id/*.debug`) keeps the program
        // headers of its library without the bytes: no file to load, and refused.
        all.retain(|p| p.extension().is_none_or(|e| e != "debug"));
        let mut seen = std::collections::HashSet::new();
        let (mut checked, mut refused) = (0usize, Vec::new());
        for path in &all {
            let Ok(file) = File::open(path) else {
                continue;
            };
            // `/lib` is often a link to `/usr/lib`: each file once.
            if !file
                .metadata()
                .is_ok_and(|m| seen.insert((m.dev(), m.ino())))
            {
                continue;
            }
            let mut head = [0u8; 20];
            if file.read_exact_at(&mut head, 0).is_err() || head[..4] != *b"\x7fELF" {
                continue;
            }
            let fields = Fields {
                bytes: &head,
                big: head[5] == 2,
            };
            let bits = if head[4] == 2 { 64 } else { 32 };
            if bits != TARGET.bits
                || TARGET.machine.is_some_and(|m| m != fields.u16(18))
                || fields.u16(16) != ET_DYN
            {
                continue;
            }
            checked += 1;
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            if let Err(e) = check(&file, size) {
                refused.push(format!("{}: {}", path.display(), e.reason));
            }
        }
        println!("{checked} ELF files of type ET_DYN checked under {dirs:?}");
        assert!(checked > 0, "no file to check");
        assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
    }
}
