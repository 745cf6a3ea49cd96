//! The table of the raw layer's safe functions (C8): `docs/protocol.md`,
//! "C8 and the raw layer", lists every safe function of `src/result` and every safe method of
//! `sys::loader::Api` (what `Acl::api()` returns), with its kind and source. Here the table is
//! parsed (for `raw_queries` too) and checked against the source: a safe `pub fn` added to
//! `src/result/*.rs` or to `impl Api` in `src/sys/loader.rs` without a row fails, as does a
//! row whose function is gone or `unsafe`, and each query's C function must be a query for
//! the simulator's checker (`Call::Query`), each refusing one an action (`Call::Action`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------
// The table of docs/protocol.md and the source.
// ---------------------------------------------------------------------------------------

pub(crate) fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One row of the table: `Api::get_device`, `aclrtGetDevice`, `query`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) function: String,
    /// The C function, or `None` ("none" in the table).
    pub(crate) c_function: Option<String>,
    pub(crate) kind: String,
}

pub(crate) const HEADING: &str = "#### C8 and the raw layer";

pub(crate) const KINDS: [&str; 3] = ["query", "refuses", "no runtime call"];

/// The rows of the table that follows [`HEADING`] in `protocol`.
pub(crate) fn parse_table(protocol: &str) -> Vec<Row> {
    let mut lines = protocol.lines().skip_while(|l| !l.starts_with(HEADING));
    assert!(
        lines.next().is_some(),
        "docs/protocol.md has no `{HEADING}`"
    );
    let table = lines
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2); // the header and its rule
    table
        .map(|line| {
            let cells: Vec<&str> = line
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            assert_eq!(cells.len(), 4, "a row of four cells: {line}");
            let unquote = |cell: &str| cell.trim_matches('`').to_owned();
            Row {
                function: unquote(cells[0]),
                c_function: (cells[1] != "none").then(|| unquote(cells[1])),
                kind: cells[2].to_owned(),
            }
        })
        .collect()
}

pub(crate) fn table() -> Vec<Row> {
    let rows = parse_table(&read("docs/protocol.md"));
    assert!(rows.len() >= 20, "the table was found: {rows:?}");
    rows
}

/// `(owner::name, is_unsafe)` of every `pub fn` of `text` inside an `impl` block (an
/// unindented `impl ... {` line; the owner is the type after `for`, or after `impl`), or
/// of an `impl` of `only` when given. Free functions and `pub(crate)` ones are not listed.
pub(crate) fn pub_fns(text: &str, only: Option<&str>) -> Vec<(String, bool)> {
    let mut owner: Option<String> = None;
    let mut found = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("impl") {
            let head = rest.trim_end_matches('{').trim();
            let ty = head.rsplit(" for ").next().unwrap_or(head).trim();
            // `impl<'a> Foo<'a>`: without the impl's generics.
            let ty = if ty.starts_with('<') {
                ty.split_once("> ").map_or(ty, |(_, t)| t)
            } else {
                ty
            };
            let name: String = ty
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            owner = Some(name);
            continue;
        }
        if line.starts_with('}') {
            owner = None;
            continue;
        }
        let Some(owner) = &owner else { continue };
        if only.is_some_and(|o| o != owner) {
            continue;
        }
        let Some(rest) = line.trim_start().strip_prefix("pub ") else {
            continue;
        };
        let Some((qualifiers, after)) = rest.split_once("fn ") else {
            continue;
        };
        // `pub const fn`, `pub unsafe fn`, `pub const unsafe extern "C" fn`: only words
        // before `fn`.
        if !qualifiers
            .split_whitespace()
            .all(|w| ["const", "unsafe", "extern", "\"C\"", "async"].contains(&w))
        {
            continue;
        }
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        found.push((
            format!("{owner}::{name}"),
            qualifiers.split_whitespace().any(|w| w == "unsafe"),
        ));
    }
    found
}

/// The safe `pub fn`s users reach: every one of `src/result/*.rs`, and those of `impl Api`
/// in `src/sys/loader.rs`.
pub(crate) fn safe_functions_in_the_source() -> BTreeSet<String> {
    let mut all = Vec::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/result");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("src/result")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "the result layer's files: {files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        all.extend(pub_fns(&text, None));
    }
    all.extend(pub_fns(&read("src/sys/loader.rs"), Some("Api")));
    all.into_iter()
        .filter(|(_, is_unsafe)| !is_unsafe)
        .map(|(name, _)| name)
        .collect()
}

#[test]
fn the_table_lists_exactly_the_safe_raw_functions() {
    let rows = table();
    let listed: BTreeSet<String> = rows.iter().map(|r| r.function.clone()).collect();
    assert_eq!(
        listed.len(),
        rows.len(),
        "a function listed twice: {rows:#?}"
    );
    let in_source = safe_functions_in_the_source();
    assert!(
        in_source.contains("Api::model_query_size") && in_source.contains("Api::get_device"),
        "the parser found the result layer: {in_source:?}"
    );
    let unlisted: Vec<_> = in_source.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&in_source).collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "docs/protocol.md (\"C8 and the raw layer\") and the source disagree.\n\
         Safe and unlisted: {unlisted:?}. A safe raw function must be a query the runtime \
         allows in a callback (add a row with its source, and call it in \
         tests/callbacks/raw_queries.rs), else `unsafe` with a `# Safety` section, or refusing inside \
         callbacks.\nListed but not a safe function: {stale:?}"
    );
    for row in &rows {
        assert!(KINDS.contains(&row.kind.as_str()), "unknown kind: {row:?}");
        assert_eq!(
            row.kind == "no runtime call",
            row.c_function.is_none(),
            "a C function exactly for the rows that call one: {row:?}"
        );
    }
}

/// The files under `dir`, subdirectories included (`sim/src/api/model/` is one).
pub(crate) fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The body of the simulator's entry point `name` (`pub extern "C" fn name(`).
pub(crate) fn simulator_entry_point(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/src/api");
    let start = format!("pub extern \"C\" fn {name}(");
    let mut files = Vec::new();
    files_under(&dir, &mut files);
    for path in files {
        let text = std::fs::read_to_string(path).expect("read");
        if let Some(at) = text.find(&start) {
            let body = &text[at..];
            let end = body.find("\n}\n").unwrap_or(body.len());
            return body[..end].to_owned();
        }
    }
    panic!("the simulator has no entry point {name}");
}

#[test]
fn the_simulator_agrees_with_the_table() {
    for row in table() {
        let Some(c) = &row.c_function else { continue };
        let body = simulator_entry_point(c);
        match row.kind.as_str() {
            // A query must never be a C8 finding: the checker classifies it as a query, or
            // it does not enter the checker at all (its own name passed to no helper).
            "query" => assert!(
                !body.contains("Call::Action")
                    && (body.contains("Call::Query")
                        || (!body.contains("enter(") && !body.contains(&format!("(\"{c}\"")))),
                "{} is safe as a query, but the simulator's checker may flag {c} (C8):\n{body}",
                row.function
            ),
            "refuses" => assert!(
                body.contains("Call::Action"),
                "{}: the table says the simulator flags {c} (C8); it does not:\n{body}",
                row.function
            ),
            other => panic!("{other}"),
        }
    }
}

#[test]
fn the_table_parser_and_the_source_parser_work_on_small_inputs() {
    let doc = "x\n#### C8 and the raw layer: t\ntext\n\n| A | B | C | D |\n| --- | --- | --- | --- |\n\
               | `Api::f` | `aclF` | query | why |\n| `E::g` | none | no runtime call | why |\n\nafter\n| `Z::z` | none | query | x |\n";
    assert_eq!(
        parse_table(doc),
        [
            Row {
                function: "Api::f".into(),
                c_function: Some("aclF".into()),
                kind: "query".into()
            },
            Row {
                function: "E::g".into(),
                c_function: None,
                kind: "no runtime call".into()
            },
        ]
    );
    let source = "impl Api {\n    pub fn a(&self) {}\n    pub unsafe fn b(&self) {}\n    pub(crate) fn c() {}\n    /// pub fn d\n    fn e() {}\n    pub const fn f() {}\n}\n\
                  pub fn free() {}\nimpl std::fmt::Debug for Api {\n    fn fmt() {}\n}\nimpl<'a> Other<'a> {\n    pub fn g(&self) {}\n}\n";
    assert_eq!(
        pub_fns(source, None),
        [
            ("Api::a".to_owned(), false),
            ("Api::b".to_owned(), true),
            ("Api::f".to_owned(), false),
            ("Other::g".to_owned(), false),
        ]
    );
    assert_eq!(pub_fns(source, Some("Api")).len(), 3);
}
