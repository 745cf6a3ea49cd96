//! The simulator's source reads as layers (`sim/src/lib.rs`, "Layers"), checked on the
//! source text: the module list comes from the file tree under `sim/src`, each file's
//! `crate::`/`super::`/`self::` paths (and `use` of its own child modules) are resolved to
//! the file that defines the module they name, and each module has a rank from [`LAYERS`].
//! The test fails on an import that reaches up a layer, on an import cycle between files,
//! on a glob import (`use ...::*`), and on a top-level module missing from [`LAYERS`].
//!
//! The natural parent/child relation may go both ways: a parent declares and re-exports its
//! children, a child uses its parent's items (`super::`, the crate root's helpers). So the
//! cycle check runs twice: once without the edges from a module to its descendants, once
//! without the edges from a module to its ancestors. A cycle made of parent/child pairs
//! only shows in neither; any other cycle (between siblings, or through a parent's
//! re-exports, as in `a -> b -> b::c -> a`) shows in one of them.

#[path = "common/lexer.rs"]
mod lexer;
use lexer::{code_of as code_only, code_only as lines_only, forbidden_constructs, long_functions};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules and their rank, lowest first: a module may import only modules of its
/// own rank or lower (and, within a rank, only without a cycle between files). `""` is the
/// crate root (`lib.rs`: the entry points' shared helpers).
const LAYERS: &[(&str, u8)] = &[
    // Base: no runtime state.
    ("pt", 0),
    ("calls", 0),
    ("trace", 0),
    // Plain data: the runtime state, the model format, the recent error message.
    ("state", 1),
    ("model", 1),
    ("media", 1),
    ("errmsg", 1),
    // The checker's rules that change the state (MD, S6, P5, task release).
    ("rules", 2),
    ("extra", 2),
    // The executor: stream workers, host waits, teardown.
    ("exec", 3),
    // The C entry points and their shared helpers.
    ("", 4),
    ("api", 4),
];

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

/// Inline modules (`mod tests { ... }`): (name, offset of the body's start, of its end).
fn inline_mods(code: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("mod ") {
        let start = from + at;
        from = start + 4;
        if code[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let rest = &code[from..];
        let name_end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let after = rest[name_end..].trim_start();
        if !after.starts_with('{') {
            continue;
        }
        let open = from + name_end + (rest.len() - name_end - after.len());
        let mut depth = 0;
        let mut close = code.len();
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((rest[..name_end].to_string(), open, close));
    }
    out
}

/// `lib.rs` -> "", `api/mod.rs` -> "api", `api/model/load.rs` -> "api::model::load".
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts.join("::")
}

fn parent(module: &str) -> String {
    match module.rfind("::") {
        Some(i) => module[..i].to_string(),
        None => String::new(),
    }
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}::{b}")
    }
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').expect("closing brace")];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(&format!("{prefix}{p}")))
        .collect()
}

/// A `use` tree without its renames (`a as b` -> `a`).
fn without_renames(tree: &str) -> String {
    let words: Vec<&str> = tree.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "as" && i + 1 < words.len() {
            // The alias may carry the tree's punctuation: `b,` `c}` `_};`.
            let alias = words[i + 1];
            let keep = alias.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_');
            out.push(keep);
            i += 2;
        } else {
            out.push(words[i]);
            i += 1;
        }
    }
    out.concat()
}

/// The `use` items of a file: (path, is it a glob).
fn use_paths(code: &str) -> Vec<(String, bool)> {
    use_paths_at(code)
        .into_iter()
        .map(|(_, p, g)| (p, g))
        .collect()
}

/// As [`use_paths`], with the offset of each `use` item.
fn use_paths_at(code: &str) -> Vec<(usize, String, bool)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("use ") {
        let start = from + at;
        from = start + 4;
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = code[from..].find(';') else {
            break;
        };
        for p in expand(&without_renames(&code[from..from + end])) {
            let glob = p.ends_with('*');
            out.push((start, p, glob));
        }
    }
    out
}

/// Every `crate::`, `super::` and `self::` path in the code (outside `use` items too).
fn inline_paths(code: &str) -> Vec<String> {
    inline_paths_at(code).into_iter().map(|(_, p)| p).collect()
}

/// As [`inline_paths`], with the offset of each path.
fn inline_paths_at(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for key in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(key) {
            let start = from + at;
            from = start + key.len();
            let before = code[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let end = code[start..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| start + e);
            out.push((start, code[start..end].trim_end_matches(':').to_string()));
        }
    }
    out
}

struct Tree {
    /// Module path -> file (relative to `sim/src`).
    files: BTreeMap<String, String>,
    /// File -> its code without comments and literals.
    code: BTreeMap<String, String>,
}

fn tree() -> Tree {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&root, &mut paths);
    let mut files = BTreeMap::new();
    let mut code = BTreeMap::new();
    for p in paths {
        let rel = p.strip_prefix(&root).expect("under src").to_path_buf();
        let name = rel.to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&p).expect("read");
        files.insert(module_of(&rel), name.clone());
        code.insert(name, code_only(&text));
    }
    assert!(files.len() > 10, "found only {} files", files.len());
    Tree { files, code }
}

impl Tree {
    /// The module (known to the tree) a path in `module` names: the longest prefix of the
    /// resolved path that is a module; None for paths outside the crate (std, libc).
    fn resolve(&self, module: &str, path: &str) -> Option<String> {
        let mut segs: Vec<&str> = path.split("::").collect();
        let mut base = match segs.first().copied() {
            Some("crate") => {
                segs.remove(0);
                String::new()
            }
            Some("self") => {
                segs.remove(0);
                module.to_string()
            }
            Some("super") => {
                let mut m = module.to_string();
                while segs.first() == Some(&"super") {
                    segs.remove(0);
                    m = parent(&m);
                }
                m
            }
            // A child module of this one (`use wait::WaitEnd;`, `pub use load::...`).
            Some(first) if self.files.contains_key(&join(module, first)) => module.to_string(),
            _ => return None,
        };
        for s in segs {
            let next = join(&base, s);
            if !self.files.contains_key(&next) {
                break;
            }
            base = next;
        }
        Some(base)
    }

    /// Paths outside `use` items that start with a child module of `module`
    /// (`models::Models` in `state`), as `self::` paths.
    fn child_paths_at(&self, module: &str, code: &str) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for child in self
            .files
            .keys()
            .filter(|m| !m.is_empty() && parent(m) == module)
        {
            let name = child.rsplit("::").next().unwrap_or(child);
            let key = format!("{name}::");
            let mut from = 0;
            while let Some(at) = code[from..].find(&key) {
                let start = from + at;
                from = start + key.len();
                let before = code[..start].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                out.push((start, format!("self::{name}")));
            }
        }
        out
    }

    /// The import graph between modules (a module's edges to itself left out).
    fn edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, file) in &self.files {
            let code = &self.code[file];
            let mut paths: Vec<(usize, String)> = use_paths_at(code)
                .into_iter()
                .map(|(at, p, _)| (at, p))
                .collect();
            paths.extend(inline_paths_at(code));
            paths.extend(self.child_paths_at(module, code));
            let inline = inline_mods(code);
            let out = g.entry(module.clone()).or_default();
            for (at, p) in paths {
                // Inside `mod tests { ... }`, `super` is this file's module.
                let mut here = module.clone();
                for (name, open, close) in &inline {
                    if (*open..*close).contains(&at) {
                        here = join(&here, name);
                    }
                }
                let Some(mut to) = self.resolve(&here, &p) else {
                    continue;
                };
                while !self.files.contains_key(&to) {
                    to = parent(&to);
                }
                if to == *module {
                    continue;
                }
                out.insert(to);
            }
        }
        g
    }
}

fn rank(module: &str) -> Option<u8> {
    let top = module.split("::").next().unwrap_or("");
    LAYERS.iter().find(|(m, _)| *m == top).map(|(_, r)| *r)
}

#[test]
fn every_module_has_a_layer() {
    let t = tree();
    let missing: Vec<&String> = t.files.keys().filter(|m| rank(m).is_none()).collect();
    assert!(
        missing.is_empty(),
        "modules without a layer in LAYERS: {missing:?}"
    );
}

#[test]
fn no_import_reaches_up_a_layer() {
    let t = tree();
    let mut up = Vec::new();
    for (from, tos) in t.edges() {
        for to in tos {
            if let (Some(a), Some(b)) = (rank(&from), rank(&to))
                && b > a
            {
                up.push(format!(
                    "{} (layer {a}) imports {} (layer {b})",
                    t.files[&from], t.files[&to]
                ));
            }
        }
    }
    assert!(up.is_empty(), "imports reaching up a layer: {up:#?}");
}

/// `a` is `b` or one of its ancestors (the crate root is everyone's).
fn is_ancestor(a: &str, b: &str) -> bool {
    a.is_empty() || a == b || b.starts_with(&format!("{a}::"))
}

#[test]
fn no_import_cycle_between_files() {
    let t = tree();
    let all = t.edges();
    let without = |drop: fn(&str, &str) -> bool| {
        all.iter()
            .map(|(from, tos)| {
                let kept = tos.iter().filter(|to| !drop(from, to)).cloned().collect();
                (from.clone(), kept)
            })
            .collect::<BTreeMap<String, BTreeSet<String>>>()
    };
    let mut cycles = Vec::new();
    // Without parent-to-descendant edges, then without child-to-ancestor edges.
    for g in [
        without(is_ancestor),
        without(|from, to| is_ancestor(to, from)),
    ] {
        cycles.extend(cycles_in(&t, &g));
    }
    cycles.sort();
    cycles.dedup();
    assert!(
        cycles.is_empty(),
        "import cycles between files: {cycles:#?}"
    );
}

/// The strongly connected components of `g` with two or more files, as sorted file lists.
fn cycles_in(t: &Tree, g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's strongly connected components: any with two or more files is a cycle.
    struct S<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        sccs: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(s: &mut S<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.g.get(v).into_iter().flatten() {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let lw = s.low[w.as_str()];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on.contains(w.as_str()) {
                let iw = s.index[w.as_str()];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                scc.push(w);
                if w == v {
                    break;
                }
            }
            s.sccs.push(scc);
        }
    }
    let mut s = S {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        sccs: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.sccs
        .iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut files: Vec<String> = c.iter().map(|m| t.files[*m].clone()).collect();
            files.sort();
            files
        })
        .collect()
}

#[test]
fn no_glob_imports() {
    let t = tree();
    let mut globs = Vec::new();
    for (file, code) in &t.code {
        for (p, glob) in use_paths(code) {
            if glob {
                globs.push(format!("{file}: use {p}"));
            }
        }
    }
    assert!(globs.is_empty(), "glob imports: {globs:#?}");
}

/// No alias of the crate or a parent, no `#[path]`, no macro in the crate root: the ways a
/// path could escape the checks above.
#[test]
fn no_path_escapes_the_checks() {
    let t = tree();
    let mut found = Vec::new();
    for (file, code) in &t.code {
        found.extend(forbidden_constructs(file, code, file == "lib.rs"));
    }
    assert!(found.is_empty(), "{found:#?}");
    // The check itself sees each construct.
    for (code, root) in [
        ("use crate as root;", false),
        ("use super :: super as up;", false),
        ("#[path = \"x.rs\"] mod x;", false),
        ("macro_rules! m { () => {} }", true),
    ] {
        let code = code_only(code);
        assert_eq!(forbidden_constructs("x", &code, root).len(), 1, "{code}");
    }
}

/// No function over 100 lines unless the comment above it says why ("over 100 lines").
#[test]
fn no_function_over_100_lines_without_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&root, &mut paths);
    let mut found = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(&p).expect("read");
        let name = p
            .strip_prefix(&root)
            .expect("under src")
            .display()
            .to_string();
        let code = lines_only(&text);
        // The lexer keeps every line, so that a function's lines are counted right.
        assert_eq!(code.lines().count(), text.lines().count(), "{name}");
        found.extend(long_functions(&name, &text, &code, 100));
    }
    assert!(found.is_empty(), "{found:#?}");
    let long = format!("fn f() {{\n{}}}\n", "    x();\n".repeat(100));
    assert_eq!(long_functions("x", &long, &lines_only(&long), 100).len(), 1);
    let said = format!("// Over 100 lines: one arm per case.\n{long}");
    assert!(long_functions("x", &said, &lines_only(&said), 100).is_empty());
}

/// The checker sees what it must see: the parser finds the imports of a known file.
#[test]
fn the_parser_finds_known_imports() {
    assert_eq!(
        expand("crate::{a::{b, c}, d}"),
        ["crate::a::b", "crate::a::c", "crate::d"]
    );
    let code = code_only("use super::*; // crate::x\nlet s = \"crate::y\"; crate::z::f();");
    assert_eq!(use_paths(&code), [("super::*".to_string(), true)]);
    assert_eq!(inline_paths(&code), ["crate::z::f", "super"]);
    assert_eq!(
        use_paths(&code_only(
            "use std::fmt::Write as _;\nuse crate::{a as b, c};"
        )),
        [
            ("std::fmt::Write".to_string(), false),
            ("crate::a".to_string(), false),
            ("crate::c".to_string(), false)
        ]
    );
    let t = tree();
    assert!(t.edges()["exec"].contains("state"), "exec uses the state");
}
