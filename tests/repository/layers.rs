//! The crate's layout claims (src/lib.rs, "Layers"; issue 13), checked on the source text:
//! `sys` and `result` never name the typed API or the simulator module; only
//! `src/simulator.rs` knows the simulator's `aclsim*` symbols; nothing is `#[doc(hidden)]`;
//! the only public modules are the layers `sys`, `result` and `simulator` (every typed item
//! has one path: its re-export at the root).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources(under: &str) -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(under);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read");
            (p, text)
        })
        .collect()
}

const TYPED_MODULES: [&str; 10] = [
    "callback",
    "context",
    "device",
    "event",
    "host_fn",
    "memory",
    "runtime",
    "stream",
    "simulator",
    "assertions",
];

#[test]
fn sys_and_result_never_reach_up_into_the_typed_api() {
    let mut found = Vec::new();
    for dir in ["src/sys", "src/result"] {
        for (path, text) in sources(dir) {
            for module in TYPED_MODULES {
                if text.contains(&format!("crate::{module}")) {
                    found.push(format!("{}: crate::{module}", path.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a lower layer names the typed API: {found:#?}"
    );
}

#[test]
fn only_the_simulator_module_knows_the_simulators_symbols() {
    let found: Vec<_> = sources("src")
        .into_iter()
        .filter(|(path, text)| {
            !path.ends_with("simulator.rs")
                && (text.contains("aclsim") || text.contains("SimulatorTable"))
        })
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(
        found.is_empty(),
        "simulator-specific code outside src/simulator.rs: {found:?}"
    );
}

#[test]
fn nothing_is_doc_hidden() {
    let found: Vec<_> = sources("src")
        .into_iter()
        .filter(|(_, text)| text.contains("doc(hidden)"))
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(
        found.is_empty(),
        "#[doc(hidden)] items a user could name: {found:?}"
    );
}

#[test]
fn the_only_public_modules_are_the_layers() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("src/lib.rs");
    let mut public: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';'))
        .collect();
    public.sort_unstable();
    assert_eq!(public, ["result", "simulator", "sys"]);
    // And a typed module's item is reachable only through its root re-export.
    for module in TYPED_MODULES
        .iter()
        .filter(|m| !["simulator", "assertions"].contains(m))
    {
        assert!(
            lib.lines().any(|l| l.trim() == format!("mod {module};")),
            "`{module}` is not a private module of src/lib.rs"
        );
    }
}
