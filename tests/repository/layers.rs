//! The crate's layout claims (src/lib.rs, "Layers"), checked on the source text:
//! the layers are ordered `sys` < `result` < `typed` < `simulator` (`src/lib.rs` above them
//! all), and no file names a module of a higher layer (`use crate::..`, `crate::x::..`,
//! `super::..` paths, comments left out); only `src/lib.rs` and the simulator module name
//! `crate::simulator`; the files import each other without cycles, but for a module and
//! its own child; only `src/simulator/` knows the simulator's `aclsim*` symbols; nothing
//! is `#[doc(hidden)]`; the only public modules are the layers `sys`, `result` and
//! `simulator` (every typed item has one path: its re-export at the root). The module list
//! comes from the tree under `src/`.

use std::collections::{BTreeMap, BTreeSet};

use crate::lexer::{code_of, forbidden_constructs, long_functions};
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

/// The module path of a file under `src/` (`typed/event/mod.rs` is `typed::event`).
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The layer of a module: its rank (a file may name its own layer and those below).
fn layer(module: &[String]) -> (usize, &'static str) {
    match module.first().map(String::as_str) {
        Some("sys") => (0, "sys"),
        Some("result") => (1, "result"),
        Some("typed") => (2, "typed"),
        Some("simulator") => (3, "simulator"),
        None => (4, "lib.rs"),
        Some(other) => panic!("src/{other}: a file outside the layers"),
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths of `text` that start with `crate::`, `super::` or `self::`, as segments; a
/// group (`a::{b, c::d}`) gives one path per member.
fn paths_in(text: &str) -> Vec<Vec<String>> {
    fn read(text: &str, from: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut segments = prefix;
        let mut at = from;
        loop {
            let rest = &text[at..];
            let rest_trimmed = rest.trim_start();
            at += rest.len() - rest_trimmed.len();
            if rest_trimmed.starts_with('{') {
                // A group: each member, split at the top-level commas.
                let body_start = at + 1;
                let mut depth = 0;
                let mut member_start = body_start;
                for (i, c) in text[body_start..].char_indices() {
                    let i = body_start + i;
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            read(text, member_start, segments.clone(), out);
                            return;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            read(text, member_start, segments.clone(), out);
                            member_start = i + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            let name: String = rest_trimmed.chars().take_while(|&c| is_ident(c)).collect();
            if name.is_empty() {
                break;
            }
            at += name.len();
            segments.push(name);
            if text[at..].starts_with("::") {
                at += 2;
            } else {
                break;
            }
        }
        if !segments.is_empty() {
            out.push(segments);
        }
    }
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = text[from..].find(start) {
            let at = from + found;
            from = at + start.len();
            if text[..at]
                .chars()
                .next_back()
                .is_some_and(|c| is_ident(c) || c == ':')
            {
                continue;
            }
            read(text, at, Vec::new(), &mut out);
        }
    }
    out
}

/// The root's re-exports: item name -> the module path it comes from.
fn root_reexports(lib: &str) -> BTreeMap<String, Vec<String>> {
    let mut map = BTreeMap::new();
    for path in paths_in(&code_of(lib).replace("pub use ", "pub use crate::")) {
        if let Some((name, module)) = path[1..].split_last() {
            map.insert(name.clone(), module.to_vec());
        }
    }
    map
}

struct Tree {
    /// Module path -> file (relative to `src/`).
    files: BTreeMap<Vec<String>, PathBuf>,
    /// File -> the files it names.
    edges: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
}

fn tree() -> Tree {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let texts: Vec<(PathBuf, String)> = sources("src")
        .into_iter()
        .map(|(p, t)| (p.strip_prefix(&src).expect("under src").to_path_buf(), t))
        .collect();
    let files: BTreeMap<Vec<String>, PathBuf> = texts
        .iter()
        .map(|(p, _)| (module_of(p), p.clone()))
        .collect();
    let lib = &texts
        .iter()
        .find(|(p, _)| p == Path::new("lib.rs"))
        .expect("lib.rs")
        .1;
    let reexports = root_reexports(lib);
    let resolve = |segments: &[String]| -> Option<PathBuf> {
        let mut segments = segments.to_vec();
        if let Some(module) = segments.first().and_then(|s| reexports.get(s))
            && !files.contains_key(&segments[..1])
        {
            segments = module.iter().chain(&segments[1..]).cloned().collect();
        }
        (0..=segments.len())
            .rev()
            .find_map(|k| files.get(&segments[..k]))
            .cloned()
    };
    let mut edges = BTreeMap::new();
    for (path, text) in &texts {
        let module = module_of(path);
        let mut named = BTreeSet::new();
        for segments in paths_in(&code_of(text)) {
            let absolute: Vec<String> = match segments[0].as_str() {
                "crate" => segments[1..].to_vec(),
                "self" => module.iter().chain(&segments[1..]).cloned().collect(),
                _ => {
                    let ups = segments.iter().take_while(|s| *s == "super").count();
                    let base = &module[..module.len().saturating_sub(ups)];
                    base.iter().chain(&segments[ups..]).cloned().collect()
                }
            };
            if let Some(target) = resolve(&absolute)
                && &target != path
            {
                named.insert(target);
            }
        }
        edges.insert(path.clone(), named);
    }
    Tree { files, edges }
}

#[test]
fn the_module_list_comes_from_the_tree() {
    let tree = tree();
    for module in [
        &["sys", "loader"][..],
        &["result"],
        &["typed", "handle"],
        &["typed", "event"],
        &["simulator"],
    ] {
        let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
        assert!(tree.files.contains_key(&module), "{module:?} not found");
    }
    // The layers are the root's only modules besides `typed`'s children.
    let top: BTreeSet<&str> = tree
        .files
        .keys()
        .filter_map(|m| m.first().map(String::as_str))
        .collect();
    assert_eq!(top, BTreeSet::from(["result", "simulator", "sys", "typed"]));
    // The parser sees grouped imports, `super::` and root re-exports.
    let paths = paths_in("use crate::typed::{a::B, c::{d, e}};\nlet x = super::super::f::g();");
    assert_eq!(paths.len(), 4, "{paths:?}");
    assert_eq!(
        root_reexports("pub use typed::error::{Error, Result};")["Error"],
        ["typed", "error"]
    );
}

#[test]
fn no_file_reaches_up_a_layer() {
    let tree = tree();
    let module_of_file: BTreeMap<&PathBuf, &Vec<String>> =
        tree.files.iter().map(|(m, p)| (p, m)).collect();
    let mut found = Vec::new();
    for (file, named) in &tree.edges {
        let (rank, name) = layer(module_of_file[file]);
        for target in named {
            let target_module = module_of_file[target];
            let (target_rank, target_name) = layer(target_module);
            if target_rank > rank {
                found.push(format!(
                    "src/{} ({name}) names src/{} ({target_name})",
                    file.display(),
                    target.display()
                ));
            }
            if target_module.first().is_some_and(|m| m == "simulator")
                && !matches!(name, "simulator" | "lib.rs")
            {
                found.push(format!("src/{} names crate::simulator", file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "imports against the layers (sys < result < typed < simulator): {found:#?}"
    );
}

#[test]
fn files_import_each_other_without_cycles_but_parent_and_child() {
    let tree = tree();
    // Tarjan's strongly connected components over the files.
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, (usize, usize)>,
        stack: Vec<&'a PathBuf>,
        next: usize,
        components: Vec<Vec<&'a PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        s.index.insert(v, (s.next, s.next));
        s.next += 1;
        s.stack.push(v);
        for w in &s.edges[v] {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.index[w].1.min(s.index[v].1);
                s.index.get_mut(v).expect("visited").1 = low;
            } else if s.stack.contains(&w) {
                let low = s.index[w].0.min(s.index[v].1);
                s.index.get_mut(v).expect("visited").1 = low;
            }
        }
        if s.index[v].0 == s.index[v].1 {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.components.push(component);
        }
    }
    let mut state = State {
        edges: &tree.edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in tree.edges.keys() {
        if !state.index.contains_key(v) {
            visit(&mut state, v);
        }
    }
    let module_of_file: BTreeMap<&PathBuf, &Vec<String>> =
        tree.files.iter().map(|(m, p)| (p, m)).collect();
    let parent_and_child = |a: &PathBuf, b: &PathBuf| {
        let (a, b) = (module_of_file[a], module_of_file[b]);
        (a.len() + 1 == b.len() && b.starts_with(a)) || (b.len() + 1 == a.len() && a.starts_with(b))
    };
    let cycles: Vec<_> = state
        .components
        .iter()
        .filter(|c| c.len() > 1 && !(c.len() == 2 && parent_and_child(c[0], c[1])))
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles between files: {cycles:#?}"
    );
}

#[test]
fn sys_and_result_never_name_the_typed_api_or_the_simulator() {
    // Comments included: a lower layer's docs link to the root's items, never to a module.
    let mut found = Vec::new();
    for dir in ["src/sys", "src/result"] {
        for (path, text) in sources(dir) {
            for module in ["typed", "simulator"] {
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
            !path.components().any(|c| c.as_os_str() == "simulator")
                && (text.contains("aclsim") || text.contains("SimulatorTable"))
        })
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(
        found.is_empty(),
        "simulator-specific code outside src/simulator/: {found:?}"
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
    // And a typed module's item is reachable only through its root re-export: `typed` is
    // private, and so is every module it declares.
    assert!(
        lib.lines().any(|l| l.trim() == "mod typed;"),
        "`typed` is not a private module of src/lib.rs"
    );
    let typed =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/typed/mod.rs"))
            .expect("src/typed/mod.rs");
    let children: BTreeSet<Vec<String>> = tree()
        .files
        .into_keys()
        .filter(|m| m.len() == 2 && m[0] == "typed")
        .collect();
    assert!(children.len() >= 12, "the typed modules: {children:?}");
    for module in children {
        assert!(
            typed
                .lines()
                .any(|l| l.trim() == format!("pub(crate) mod {};", module[1])),
            "`{}` is not a crate-private module of src/typed/mod.rs",
            module[1]
        );
    }
}

/// No alias of the crate or a parent, no `#[path]`, no macro in the crate root: the ways a
/// path could escape the checks above.
#[test]
fn no_path_escapes_the_checks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (path, text) in sources("src") {
        let name = path
            .strip_prefix(&root)
            .expect("under src")
            .display()
            .to_string();
        found.extend(forbidden_constructs(
            &name,
            &code_of(&text),
            name == "lib.rs",
        ));
    }
    assert!(found.is_empty(), "{found:#?}");
    // What a reviewer slipped past the text search once, each now seen.
    for (code, root) in [
        ("use crate as root; fn f() { root::simulator::x(); }", false),
        ("#[path = \"../simulator/x.rs\"] mod x;", false),
        ("macro_rules! sneak { () => { crate::simulator::X } }", true),
    ] {
        assert_eq!(
            forbidden_constructs("x", &code_of(code), root).len(),
            1,
            "{code}"
        );
    }
    // A path split by spaces, or by two block comments, is still found.
    for code in [
        "m! { crate :: simulator :: X }",
        "/* a *//* b */ crate::simulator::X",
    ] {
        let paths = paths_in(&code_of(code));
        assert!(
            paths.iter().any(|p| p.first().is_some_and(|s| s == "crate")
                && p.get(1).is_some_and(|s| s == "simulator")),
            "{code}: {paths:?}"
        );
    }
}

/// No function over 100 lines unless the comment above it says why ("over 100 lines").
#[test]
fn no_function_over_100_lines_without_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (path, text) in sources("src") {
        let name = path
            .strip_prefix(&root)
            .expect("under src")
            .display()
            .to_string();
        let code = crate::lexer::code_only(&text);
        // The lexer keeps every line, so that a function's lines are counted right.
        assert_eq!(code.lines().count(), text.lines().count(), "{name}");
        found.extend(long_functions(&name, &text, &code, 100));
    }
    assert!(found.is_empty(), "{found:#?}");
}
