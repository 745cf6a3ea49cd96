//! The fidelity table (`docs/fidelity.md`) is kept honest against the header, the loader's
//! tables and the rules.
//!
//! Fails when:
//! * a function declared in `include/ascendcl.h` has no row, or two, or a row names a
//!   function the header does not declare;
//! * a row's "crate" cell does not start with what the loader does with the symbol:
//!   `required` (in `REQUIRED_SYMBOLS`), `optional` (in `OPTIONAL_SYMBOLS`, or a media
//!   function of `DVPP_SYMBOLS`, each optional), `model` (in
//!   `MODEL_SYMBOLS`, resolved on first use), or `simulator only` (an `aclsim*` extension);
//! * a rule ID cited in the simulator cell is not defined in `docs/protocol.md`;
//! * the versions cell is empty.
//!
//! The checks are pure functions over strings, tested below on small inputs.

use std::collections::{BTreeMap, BTreeSet};

use ascend_typestate::sys::dvpp::DVPP_SYMBOLS;
use ascend_typestate::sys::model::MODEL_SYMBOLS;
use ascend_typestate::sys::{OPTIONAL_SYMBOLS, REQUIRED_SYMBOLS};

/// The functions a C header declares: a line at column 0 (not a comment, `typedef` or
/// `#`) with `acl...(`, the name before the first `(`.
fn declared(header: &str) -> BTreeSet<String> {
    header
        .lines()
        .filter(|l| {
            !l.starts_with(' ')
                && !l.starts_with("typedef")
                && !l.starts_with('#')
                && !l.starts_with("/*")
                && !l.starts_with(" *")
        })
        .filter_map(|l| {
            let (before, _) = l.split_once('(')?;
            let name = before.rsplit([' ', '*']).next()?;
            name.starts_with("acl").then(|| name.to_owned())
        })
        .collect()
}

/// A table row: function, versions, crate, simulator (1-based line).
#[derive(Debug)]
struct Row {
    line: usize,
    function: String,
    versions: String,
    krate: String,
    simulator: String,
}

fn rows(table: &str) -> Vec<Row> {
    table
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let cells: Vec<&str> = l
                .trim()
                .strip_prefix('|')?
                .strip_suffix('|')?
                .split('|')
                .collect();
            let [function, versions, krate, simulator] = cells[..] else {
                return None;
            };
            let function = function.trim().strip_prefix('`')?.strip_suffix('`')?;
            Some(Row {
                line: i + 1,
                function: function.to_owned(),
                versions: versions.trim().to_owned(),
                krate: krate.trim().to_owned(),
                simulator: simulator.trim().to_owned(),
            })
        })
        .collect()
}

/// What the loader does with `symbol`.
fn loader_kind(symbol: &str) -> &'static str {
    if REQUIRED_SYMBOLS.contains(&symbol) {
        "required"
    } else if OPTIONAL_SYMBOLS.contains(&symbol) || DVPP_SYMBOLS.contains(&symbol) {
        "optional"
    } else if MODEL_SYMBOLS.contains(&symbol) {
        "model"
    } else if symbol.starts_with("aclsim") {
        "simulator only"
    } else {
        "not loaded"
    }
}

/// The rule IDs (`S8`, `C12`, `MD11`) a cell cites, outside `code spans` (a version such
/// as `8.3.RC1` is not a rule).
fn cited_rules(cell: &str) -> Vec<String> {
    let prose: String = cell.split('`').step_by(2).collect::<Vec<_>>().join(" ");
    prose
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            let digits = w.trim_start_matches(|c: char| c.is_ascii_uppercase());
            let family = w.len() - digits.len();
            (1..=2).contains(&family)
                && !digits.is_empty()
                && digits.chars().all(|c| c.is_ascii_digit())
        })
        .map(str::to_owned)
        .collect()
}

/// Every problem of the table, one line each.
fn problems(
    header: &str,
    table: &str,
    protocol: &str,
    kind: impl Fn(&str) -> &'static str,
) -> Vec<String> {
    let declared = declared(header);
    let rows = rows(table);
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for row in &rows {
        if let Some(first) = seen.insert(&row.function, row.line) {
            out.push(format!(
                "line {}: `{}` has a row at line {first} too",
                row.line, row.function
            ));
        }
        if !declared.contains(&row.function) {
            out.push(format!(
                "line {}: `{}` is not declared in include/ascendcl.h",
                row.line, row.function
            ));
        }
        let want = kind(&row.function);
        if !row.krate.starts_with(want) {
            out.push(format!(
                "line {}: `{}`: the crate cell must start with {want:?}, not {:?}",
                row.line, row.function, row.krate
            ));
        }
        if row.versions.is_empty() {
            out.push(format!(
                "line {}: `{}`: no versions",
                row.line, row.function
            ));
        }
        for rule in cited_rules(&row.simulator) {
            if !protocol.contains(&format!("**{rule}**")) {
                out.push(format!(
                    "line {}: `{}` cites {rule}, not a rule of docs/protocol.md",
                    row.line, row.function
                ));
            }
        }
    }
    for function in &declared {
        if !seen.contains_key(function.as_str()) {
            out.push(format!("`{function}` (include/ascendcl.h) has no row"));
        }
    }
    out
}

#[test]
fn the_fidelity_table_matches_the_header_the_loader_and_the_rules() {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |p: &str| std::fs::read_to_string(format!("{root}/{p}")).expect(p);
    let header = read("include/ascendcl.h");
    assert!(
        declared(&header).len() > 90,
        "the header parser finds too few functions"
    );
    let found = problems(
        &header,
        &read("docs/fidelity.md"),
        &read("docs/protocol.md"),
        loader_kind,
    );
    assert!(found.is_empty(), "docs/fidelity.md:\n{}", found.join("\n"));
}

#[test]
fn the_checks_find_what_they_should() {
    let header = "aclError aclA(int x);\nconst char *aclB(void);\ntypedef void (*aclC)(void *);\n/* aclD(x) */\n";
    assert_eq!(declared(header), ["aclA", "aclB"].map(String::from).into());
    let protocol = "- **S1** one\n";
    let kind = |s: &str| if s == "aclA" { "required" } else { "optional" };
    let good = "| `aclA` | all | required | S1 |\n| `aclB` | 8.5 | optional: probed | reports `8.3.RC1` |\n";
    assert_eq!(problems(header, good, protocol, kind), Vec::<String>::new());
    let bad = "| `aclA` | | optional | S9 |\n| `aclA` | all | required | |\n| `aclZ` | all | required | |\n";
    let found = problems(header, bad, protocol, kind).join("\n");
    for expected in [
        "no versions",
        "must start with \"required\"",
        "cites S9",
        "row at line 1",
        "aclZ` is not declared",
        "`aclB` (include/ascendcl.h) has no row",
    ] {
        assert!(found.contains(expected), "{expected:?} not in:\n{found}");
    }
}
