//! The coverage table (`docs/coverage.md`) is kept honest against the rules
//! (`docs/protocol.md`) and the test suite.
//!
//! Fails when:
//! * a rule of `docs/protocol.md` (a bullet `- **E4** ...`) has no row, or rows are out of
//!   the protocol's order, or a rule has two rows;
//! * a row names a rule that `docs/protocol.md` does not define;
//! * a row's enforcement cell is empty, or names something other than the five kinds of
//!   [`ENFORCEMENT`] (a note in parentheses after a kind is allowed);
//! * a test cited in the tests cell does not exist. Every `backticked` item of that cell is a
//!   citation: `path::name` needs the `.rs` file to exist and declare a test `name` (`fn name`,
//!   or `name` listed in a `cases!(...)` invocation, which is how `sim/tests/sim.rs` declares
//!   one test per C harness case); a bare path needs the file to exist, and a
//!   `ui-tests/fail/X.rs` also needs its legal twin `ui-tests/pass/X.rs`;
//! * the proof cell names something other than the five kinds of [`PROOF`], or disagrees
//!   with the tests: `compile-fail pair` exactly when the tests cell cites a
//!   `ui-tests/fail/` case, `run-time test` exactly when it cites a test (`path::name`),
//!   `fault sweep` exactly when it cites a test of a fault sweep (a file whose name says
//!   `fault`); `loom model` needs its loom tests cited in its parentheses
//!   (`src/typed/loom/X.rs::name`, existing), `fuzz target` its targets
//!   (`fuzz/fuzz_targets/X.rs`, existing).
//!
//! The checks are pure functions over strings and a file-lookup closure, so the unit tests
//! at the bottom exercise them on small inline inputs (and the real protocol must yield at
//! least 30 rules), which keeps the main test from passing vacuously.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The allowed values of the enforcement column.
const ENFORCEMENT: [&str; 5] = [
    "compile time",
    "typed runtime error",
    "simulator checker",
    "runtime error code",
    "documented only",
];

/// The allowed values of the proof column: how a rule is proven, or [`UNPROVEN`].
const PROOF: [&str; 6] = [
    "compile-fail pair",
    "run-time test",
    "fault sweep",
    "loom model",
    "fuzz target",
    UNPROVEN,
];

/// The proof cell of a rule nothing proves yet: alone, and only where the tests cell cites
/// nothing, so that a proof added later must replace it.
const UNPROVEN: &str = "not proven";

/// One row of the coverage table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    /// 1-based line number in `docs/coverage.md`.
    line: usize,
    rule: String,
    summary: String,
    enforcement: String,
    location: String,
    /// Every backticked item of the tests cell.
    citations: Vec<String>,
    /// The proof cell.
    proof: String,
}

/// Whether `s` looks like a rule ID: a family of uppercase letters then digits (`E4`, `C10`,
/// `MD11`).
fn is_rule_id(s: &str) -> bool {
    let digits = s.trim_start_matches(|c: char| c.is_ascii_uppercase());
    let family = s.len() - digits.len();
    (1..=3).contains(&family) && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// The rule IDs of a protocol document, in order: every bullet line that starts with
/// `- **ID**`.
fn parse_rules(protocol: &str) -> Vec<String> {
    protocol
        .lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("- **")?;
            let (id, _) = rest.split_once("**")?;
            is_rule_id(id).then(|| id.to_string())
        })
        .collect()
}

/// The backticked items of a cell.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The cells of a table line (`| a | b |` gives `["a", "b"]`); `None` if it is not a table
/// line. Cells may not contain `|`.
fn cells(line: &str) -> Option<Vec<String>> {
    let inner = line.trim().strip_prefix('|')?;
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    Some(inner.split('|').map(|c| c.trim().to_string()).collect())
}

/// The rows of the coverage table: every table line whose first cell is a rule ID (written
/// plain or in bold). Other table lines (the header, the `---` separator) are skipped; a
/// table line that looks like a row but has the wrong number of cells is an error.
fn parse_table(coverage: &str) -> Result<Vec<Row>, Vec<String>> {
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for (index, line) in coverage.lines().enumerate() {
        let Some(cells) = cells(line) else { continue };
        let first = cells[0].trim_matches('*').trim_matches('`');
        if !is_rule_id(first) {
            continue;
        }
        let line_no = index + 1;
        if cells.len() != 6 {
            errors.push(format!(
                "docs/coverage.md:{line_no}: the row for {first} has {} cells; write exactly 6: \
                 | rule | summary | enforcement | where | tests | proven by |",
                cells.len()
            ));
            continue;
        }
        rows.push(Row {
            line: line_no,
            rule: first.to_string(),
            summary: cells[1].clone(),
            enforcement: cells[2].clone(),
            location: cells[3].clone(),
            citations: backticked(&cells[4]),
            proof: cells[5].clone(),
        });
    }
    if errors.is_empty() {
        Ok(rows)
    } else {
        Err(errors)
    }
}

/// The enforcement kinds of a cell; notes in parentheses are dropped. `Err` names the
/// items that are not one of [`ENFORCEMENT`].
fn enforcement_kinds(cell: &str) -> Result<Vec<&'static str>, Vec<String>> {
    let mut plain = String::new();
    let mut depth = 0usize;
    for c in cell.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let mut kinds = Vec::new();
    let mut unknown = Vec::new();
    for item in plain.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match ENFORCEMENT.iter().find(|k| k.eq_ignore_ascii_case(item)) {
            Some(k) => kinds.push(*k),
            None => unknown.push(item.to_string()),
        }
    }
    if unknown.is_empty() {
        Ok(kinds)
    } else {
        Err(unknown)
    }
}

/// The test names a Rust test file declares: every `fn name`, and every name listed in a
/// `cases!(...)` invocation.
fn declared_tests(source: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (i, _) in source.match_indices("fn ") {
        let before_ok = source[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        let name = ident(source[i + 3..].trim_start());
        if before_ok && !name.is_empty() {
            names.insert(name);
        }
    }
    for (i, _) in source.match_indices("cases!(") {
        let body = &source[i + "cases!(".len()..];
        let body = &body[..body.find(')').unwrap_or(body.len())];
        names.extend(
            body.split(',')
                .map(|s| ident(s.trim()))
                .filter(|s| !s.is_empty()),
        );
    }
    names
}

/// Checks one citation; `read` returns a repository file's text (`None`: no such file).
fn check_citation(citation: &str, read: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    let (path, name) = match citation.split_once("::") {
        Some((path, name)) => (path, Some(name)),
        None => (citation, None),
    };
    let Some(source) = read(path) else {
        return Err(format!(
            "`{citation}`: the file `{path}` does not exist; fix the path (relative to the \
             crate root) or remove the citation"
        ));
    };
    if let Some(name) = name {
        if !path.ends_with(".rs") {
            return Err(format!(
                "`{citation}`: `path::name` citations need a `.rs` test file; cite `{path}` \
                 on its own instead"
            ));
        }
        if !declared_tests(&source).contains(name) {
            return Err(format!(
                "`{citation}`: `{path}` declares no test `{name}` (no `fn {name}`, not in a \
                 `cases!` list); fix the name or remove the citation"
            ));
        }
    } else if let Some(file) = path.strip_prefix("ui-tests/fail/") {
        let twin = format!("ui-tests/pass/{file}");
        if read(&twin).is_none() {
            return Err(format!(
                "`{citation}`: the compile-fail case has no legal twin; add `{twin}` (the same \
                 program in the legal order) or cite another case"
            ));
        }
    }
    Ok(())
}

/// The kinds of a proof cell, each with the backticked citations of its parentheses. `Err`
/// names the items that are not one of [`PROOF`].
fn proof_kinds(cell: &str) -> Result<Vec<(&'static str, Vec<String>)>, Vec<String>> {
    let mut items = vec![String::new()];
    let mut depth = 0usize;
    for c in cell.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(item) = items.last_mut() {
            item.push(c);
        }
    }
    let mut kinds = Vec::new();
    let mut unknown = Vec::new();
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        let name = item.split('(').next().unwrap_or(item).trim();
        let citations = item
            .find('(')
            .map(|open| backticked(&item[open..]))
            .unwrap_or_default();
        match PROOF.iter().find(|k| k.eq_ignore_ascii_case(name)) {
            Some(kind) => kinds.push((*kind, citations)),
            None => unknown.push(item.to_string()),
        }
    }
    if unknown.is_empty() {
        Ok(kinds)
    } else {
        Err(unknown)
    }
}

/// Whether a tests-cell citation is a test of a fault sweep: its file's name says `fault`.
fn is_fault_sweep(citation: &str) -> bool {
    let path = citation.split("::").next().unwrap_or(citation);
    path.rsplit('/').next().is_some_and(|f| f.contains("fault"))
}

/// The problems of a row's proof cell, against its tests cell and the files.
fn check_proof(row: &Row, read: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let kinds = match proof_kinds(&row.proof) {
        Ok(kinds) if kinds.is_empty() => {
            return vec![format!(
                "empty proof cell; write one or more of: {}",
                PROOF.join(", ")
            )];
        }
        Ok(kinds) => kinds,
        Err(unknown) => {
            return vec![format!(
                "unknown proof {unknown:?}; use only: {} (citations in parentheses)",
                PROOF.join(", ")
            )];
        }
    };
    let mut problems = Vec::new();
    let listed = |kind: &str| kinds.iter().any(|(k, _)| *k == kind);
    if listed(UNPROVEN) && (kinds.len() > 1 || !row.citations.is_empty()) {
        problems.push(format!(
            "`{UNPROVEN}` stands alone, for a rule whose tests cell cites nothing"
        ));
    }
    let derived = [
        (
            "compile-fail pair",
            row.citations
                .iter()
                .any(|c| c.starts_with("ui-tests/fail/")),
            "a `ui-tests/fail/` case",
        ),
        (
            "run-time test",
            row.citations.iter().any(|c| c.contains("::")),
            "a test (`path::name`)",
        ),
        (
            "fault sweep",
            row.citations
                .iter()
                .any(|c| c.contains("::") && is_fault_sweep(c)),
            "a test of a fault sweep (a file whose name says `fault`)",
        ),
    ];
    for (kind, cited, what) in derived {
        if listed(kind) && !cited {
            problems.push(format!(
                "`{kind}` is listed but the tests cell cites no {what}; cite one or remove it"
            ));
        } else if cited && !listed(kind) {
            problems.push(format!(
                "the tests cell cites {what}: list `{kind}` in the proof cell"
            ));
        }
    }
    for (kind, citations) in &kinds {
        let under = match *kind {
            UNPROVEN => continue,
            "loom model" => "src/typed/loom/",
            "fuzz target" => "fuzz/fuzz_targets/",
            _ => {
                if !citations.is_empty() {
                    problems.push(format!(
                        "`{kind}` takes no citation here (its tests are in the tests cell)"
                    ));
                }
                continue;
            }
        };
        if citations.is_empty() {
            problems.push(format!(
                "`{kind}` cites nothing; name it in parentheses (`{under}...`)"
            ));
        }
        for citation in citations {
            if !citation.starts_with(under) {
                problems.push(format!("`{kind}` cites `{citation}`, not under `{under}`"));
            } else if *kind == "loom model" && !citation.contains("::") {
                problems.push(format!(
                    "`{citation}`: cite the loom test itself (`{under}file.rs::name`)"
                ));
            } else if let Err(e) = check_citation(citation, read) {
                problems.push(e);
            }
        }
    }
    problems
}

/// Every problem of a coverage table against the protocol's rules, as messages saying what
/// to fix. Empty when the table is complete and every citation resolves.
fn check(protocol: &str, coverage: &str, read: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let rules = parse_rules(protocol);
    let mut problems = Vec::new();
    if rules.is_empty() {
        problems.push(
            "docs/protocol.md: no rule found (expected bullets like `- **E4** ...`)".to_string(),
        );
    }
    let rows = match parse_table(coverage) {
        Ok(rows) => rows,
        Err(errors) => return errors,
    };
    let known: BTreeSet<&str> = rules.iter().map(String::as_str).collect();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for row in &rows {
        let at = format!("docs/coverage.md:{} ({})", row.line, row.rule);
        if !known.contains(row.rule.as_str()) {
            problems.push(format!(
                "{at}: rule {} is not defined in docs/protocol.md; remove the row or fix the ID",
                row.rule
            ));
        }
        if let Some(first) = seen.insert(&row.rule, row.line) {
            problems.push(format!(
                "{at}: second row for {} (first at line {first}); merge them into one row",
                row.rule
            ));
        }
        if row.summary.is_empty() {
            problems.push(format!(
                "{at}: empty summary; write a one-line summary of the rule"
            ));
        }
        match enforcement_kinds(&row.enforcement) {
            Ok(kinds) if kinds.is_empty() => problems.push(format!(
                "{at}: empty enforcement cell; write one or more of: {}",
                ENFORCEMENT.join(", ")
            )),
            Ok(_) => {}
            Err(unknown) => problems.push(format!(
                "{at}: unknown enforcement {unknown:?}; use only: {} (notes go in parentheses)",
                ENFORCEMENT.join(", ")
            )),
        }
        if row.location.is_empty() {
            problems.push(format!(
                "{at}: empty `where` cell; name the Rust item (or `-` with a reason)"
            ));
        }
        for citation in &row.citations {
            if let Err(e) = check_citation(citation, read) {
                problems.push(format!("{at}: {e}"));
            }
        }
        for problem in check_proof(row, read) {
            problems.push(format!("{at}: {problem}"));
        }
    }
    for rule in &rules {
        if !seen.contains_key(rule.as_str()) {
            problems.push(format!(
                "docs/coverage.md: rule {rule} of docs/protocol.md has no row; add \
                 `| {rule} | summary | enforcement | where | tests |`"
            ));
        }
    }
    let order: Vec<&str> = rows
        .iter()
        .map(|r| r.rule.as_str())
        .filter(|r| known.contains(r))
        .collect();
    let expected: Vec<&str> = rules
        .iter()
        .map(String::as_str)
        .filter(|r| seen.contains_key(r))
        .collect();
    if problems.is_empty() && order != expected {
        problems.push(format!(
            "docs/coverage.md: rows are not in the order of docs/protocol.md; expected \
             {expected:?}, found {order:?}"
        ));
    }
    problems
}

fn read_repo_file(path: &str) -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(path)).ok()
}

#[test]
fn coverage_table_is_complete_and_cites_existing_tests() {
    let protocol = read_repo_file("docs/protocol.md").expect("docs/protocol.md");
    let coverage = read_repo_file("docs/coverage.md").expect("docs/coverage.md");
    let rules = parse_rules(&protocol);
    assert!(
        rules.len() >= 30,
        "docs/protocol.md: only {} rules parsed ({rules:?}); the `- **ID**` bullet format \
         changed, update `parse_rules`",
        rules.len()
    );
    let rows = parse_table(&coverage).unwrap_or_default();
    assert!(
        rows.iter().map(|r| r.citations.len()).sum::<usize>() >= rules.len(),
        "docs/coverage.md cites fewer tests than there are rules: the tests column is not \
         being parsed (citations must be backticked)"
    );
    let problems = check(&protocol, &coverage, &read_repo_file);
    assert!(
        problems.is_empty(),
        "docs/coverage.md is out of date ({} problems):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

#[test]
fn parser_finds_rule_bullets_only() {
    let doc = "## Rules\n\
               - `aclError` = `int`; not a rule\n\
               - **P1** first rule, `code`.\n\
               \x20 continued line with **X9** inside\n\
               - **Note** not an ID\n\
               - **E10** two digits\n\
               - **MD11** a family of two letters\n\
               * **D1** other bullet style is not a rule bullet\n";
    assert_eq!(parse_rules(doc), ["P1", "E10", "MD11"]);
    let real = read_repo_file("docs/protocol.md").expect("docs/protocol.md");
    let rules = parse_rules(&real);
    assert!(rules.len() >= 30, "{rules:?}");
    assert_eq!(rules.first().map(String::as_str), Some("P1"));
    assert!(rules.iter().any(|r| r == "E4") && rules.iter().any(|r| r == "M2"));
    assert!(
        rules.iter().any(|r| r == "MD12"),
        "the model family is parsed: {rules:?}"
    );
}

#[test]
fn parser_reads_rows_cells_and_citations() {
    let table = "| Rule | Summary | Enforcement | Where | Tests |\n\
                 | --- | --- | --- | --- | --- |\n\
                 | **E4** | reset after wait | compile time, simulator checker (E4 finding) | `Event::wait` | `a.rs::x`, `ui-tests/fail/y.rs`; prose | compile-fail pair, run-time test |\n\
                 | P1 | init first |  | - | none | |\n";
    let rows = parse_table(table).expect("well-formed");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].rule, "E4");
    assert_eq!(rows[0].line, 3);
    assert_eq!(rows[0].citations, ["a.rs::x", "ui-tests/fail/y.rs"]);
    assert_eq!(
        enforcement_kinds(&rows[0].enforcement),
        Ok(vec!["compile time", "simulator checker"])
    );
    assert_eq!(enforcement_kinds(&rows[1].enforcement), Ok(vec![]));
    assert!(rows[1].citations.is_empty());
    assert!(enforcement_kinds("compile time, by magic").is_err());
    assert!(parse_table("| E1 | too | few |\n").is_err());
    assert!(
        parse_table("| E1 | five | cells | only | `a.rs::x` |\n").is_err(),
        "the proof cell is required"
    );
    assert_eq!(rows[0].proof, "compile-fail pair, run-time test");
    assert_eq!(
        proof_kinds(
            "run-time test, loom model (`src/typed/loom/a.rs::x`, `src/typed/loom/b.rs::y`)"
        ),
        Ok(vec![
            ("run-time test", vec![]),
            (
                "loom model",
                vec![
                    "src/typed/loom/a.rs::x".to_string(),
                    "src/typed/loom/b.rs::y".to_string()
                ]
            ),
        ])
    );
    assert!(proof_kinds("run-time test, by inspection").is_err());
}

#[test]
fn check_reports_every_kind_of_problem() {
    let protocol = "- **P1** a\n- **P2** b\n- **E4** c\n";
    let files: BTreeMap<&str, &str> = [
        (
            "tests/t.rs",
            "#[test]\nfn real_test() {}\nfn real_test_longer() {}\n",
        ),
        ("sim/tests/sim.rs", "cases!(\n    alpha,\n    beta,\n);\n"),
        ("ui-tests/fail/ok.rs", ""),
        ("ui-tests/pass/ok.rs", ""),
        ("ui-tests/fail/lonely.rs", ""),
        ("tests/t_faults.rs", "fn swept() {}\n"),
        ("src/typed/loom/m.rs", "fn raced() {}\n"),
        ("fuzz/fuzz_targets/f.rs", ""),
    ]
    .into_iter()
    .collect();
    let read = |p: &str| files.get(p).map(|s| s.to_string());
    let good = "| P1 | a | compile time | `Acl` | `tests/t.rs::real_test`, `ui-tests/fail/ok.rs` | compile-fail pair, run-time test |\n\
                | P2 | b | simulator checker | `Acl` | `sim/tests/sim.rs::beta` | run-time test, loom model (`src/typed/loom/m.rs::raced`) |\n\
                | E4 | c | documented only | - | `tests/t_faults.rs::swept` | run-time test, fault sweep, fuzz target (`fuzz/fuzz_targets/f.rs`) |\n";
    assert_eq!(check(protocol, good, &read), Vec::<String>::new());

    let bad = "| P1 | a |  | `Acl` | `tests/t.rs::real` | run-time test |\n\
               | Z9 | z | compile time | `X` | `ui-tests/fail/lonely.rs`, `tests/none.rs::f` | compile-fail pair, run-time test |\n\
               | E4 | c | compile time | `W` | `sim/tests/sim.rs::gamma` | run-time test |\n";
    let problems = check(protocol, bad, &read).join("\n");
    for expected in [
        "(P1): empty enforcement cell",
        "declares no test `real`",
        "rule Z9 is not defined",
        "add `ui-tests/pass/lonely.rs`",
        "the file `tests/none.rs` does not exist",
        "declares no test `gamma`",
        "rule P2 of docs/protocol.md has no row",
    ] {
        assert!(
            problems.contains(expected),
            "missing {expected:?} in:\n{problems}"
        );
    }

    let swapped = "| P2 | b | compile time | `A` | `tests/t.rs::real_test` | run-time test |\n\
                   | P1 | a | compile time | `A` | `tests/t.rs::real_test` | run-time test |\n\
                   | E4 | c | compile time | `A` | `tests/t.rs::real_test` | run-time test |\n";
    assert!(check(protocol, swapped, &read)[0].contains("not in the order"));
}

#[test]
fn check_reports_every_kind_of_proof_problem() {
    let protocol = "- **P1** a\n";
    let files: BTreeMap<&str, &str> = [
        ("tests/t.rs", "fn real_test() {}\n"),
        ("tests/t_faults.rs", "fn swept() {}\n"),
        ("ui-tests/fail/ok.rs", ""),
        ("ui-tests/pass/ok.rs", ""),
        ("src/typed/loom/m.rs", "fn raced() {}\n"),
        ("fuzz/fuzz_targets/f.rs", ""),
    ]
    .into_iter()
    .collect();
    let read = |p: &str| files.get(p).map(|s| s.to_string());
    let row =
        |tests: &str, proof: &str| format!("| P1 | a | compile time | `A` | {tests} | {proof} |\n");
    let problems = |tests: &str, proof: &str| check(protocol, &row(tests, proof), &read).join("\n");
    for (tests, proof, expected) in [
        ("`tests/t.rs::real_test`", "", "empty proof cell"),
        (
            "`tests/t.rs::real_test`",
            "run-time test, by review",
            "unknown proof",
        ),
        (
            "`tests/t.rs::real_test`",
            "run-time test, compile-fail pair",
            "`compile-fail pair` is listed but the tests cell cites no",
        ),
        (
            "`tests/t.rs::real_test`, `ui-tests/fail/ok.rs`",
            "run-time test",
            "list `compile-fail pair`",
        ),
        (
            "`ui-tests/fail/ok.rs`",
            "compile-fail pair, run-time test",
            "`run-time test` is listed",
        ),
        (
            "`tests/t_faults.rs::swept`",
            "run-time test",
            "list `fault sweep`",
        ),
        (
            "`tests/t.rs::real_test`",
            "run-time test, fault sweep",
            "`fault sweep` is listed",
        ),
        (
            "`tests/t.rs::real_test`",
            "run-time test, loom model",
            "`loom model` cites nothing",
        ),
        (
            "`tests/t.rs::real_test`",
            "run-time test, loom model (`src/typed/loom/m.rs::gone`)",
            "declares no test `gone`",
        ),
        (
            "`tests/t.rs::real_test`",
            "run-time test, loom model (`src/typed/loom/m.rs`)",
            "cite the loom test itself",
        ),
        (
            "`tests/t.rs::real_test`",
            "run-time test, loom model (`tests/t.rs::real_test`)",
            "not under `src/typed/loom/`",
        ),
        (
            "`tests/t.rs::real_test`",
            "run-time test, fuzz target (`fuzz/fuzz_targets/none.rs`)",
            "does not exist",
        ),
        (
            "`tests/t.rs::real_test`",
            "run-time test (`tests/t.rs::real_test`)",
            "takes no citation here",
        ),
        (
            "`tests/t.rs::real_test`",
            "not proven",
            "stands alone, for a rule whose tests cell cites nothing",
        ),
        (
            "to come",
            "not proven, fuzz target (`fuzz/fuzz_targets/f.rs`)",
            "stands alone",
        ),
    ] {
        let found = problems(tests, proof);
        assert!(
            found.contains(expected),
            "{tests} | {proof}: missing {expected:?} in:\n{found}"
        );
    }
    assert_eq!(
        problems(
            "`tests/t.rs::real_test`, `tests/t_faults.rs::swept`, `ui-tests/fail/ok.rs`",
            "compile-fail pair, run-time test, fault sweep, loom model (`src/typed/loom/m.rs::raced`), \
             fuzz target (`fuzz/fuzz_targets/f.rs`)"
        ),
        ""
    );
    assert_eq!(problems("to come", "not proven (to come)"), "");
}
