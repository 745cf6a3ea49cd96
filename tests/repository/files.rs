//! The repository (and the published package) stands alone: no file names a path of a
//! development machine, and none points outside the repository (`docs/protocol.md` is the
//! single source of the rules).

use std::path::{Path, PathBuf};

/// Every text file under `dir`, skipping build output and version control.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        // `.git` is a file in a git worktree (it names the main repository's directory).
        if name == "target" || name == ".git" {
            continue;
        }
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// What no file may contain. Built from pieces, so that this file does not match itself.
fn forbidden() -> Vec<(String, &'static str)> {
    let mut list = vec![
        (["/wo", "rk/"].concat(), "a path of the development machine"),
        (["/ro", "ot/"].concat(), "a path of the development machine"),
        (["/ho", "me/"].concat(), "a path of the development machine"),
        (
            [".cargo", "/registry"].concat(),
            "a path of the development machine",
        ),
        (["../sha", "red"].concat(), "a file outside the repository"),
        (
            ["shared/", "docs"].concat(),
            "a file outside the repository",
        ),
        (["../se", "eds"].concat(), "a file outside the repository"),
    ];
    // Where this checkout lives, whatever the machine.
    let here = env!("CARGO_MANIFEST_DIR");
    if here.len() > 1 {
        list.push((here.to_owned(), "the path of this checkout"));
    }
    list
}

#[test]
fn no_file_names_a_machine_path_or_a_file_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    files(root, &mut all);
    assert!(all.len() > 50, "the walk found the sources: {}", all.len());
    let patterns = forbidden();
    let mut found = Vec::new();
    for path in &all {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue; // not UTF-8 text
        };
        for (line_no, line) in text.lines().enumerate() {
            // A made-up home directory in the loader's tests is not a machine path.
            let line = line.replace("/home/user", "");
            for (pattern, what) in &patterns {
                if line.contains(pattern.as_str()) {
                    found.push(format!(
                        "{}:{}: {what}: {}",
                        path.strip_prefix(root).unwrap_or(path).display(),
                        line_no + 1,
                        line.trim()
                    ));
                    break;
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A repository path cited in backticks, as the docs and comments cite files: starts with a
/// top-level folder of the repository.
fn cited_paths(text: &str) -> Vec<String> {
    const ROOTS: [&str; 10] = [
        "src/",
        "tests/",
        "sim/",
        "docs/",
        "scripts/",
        "benches/",
        "examples/",
        "ui-tests/",
        "include/",
        ".ci/",
    ];
    let mut out = Vec::new();
    for (i, piece) in text.split('`').enumerate() {
        // Odd pieces are inside backticks.
        if i % 2 == 0 || piece.contains(char::is_whitespace) {
            continue;
        }
        if !ROOTS.iter().any(|r| piece.starts_with(r)) {
            continue;
        }
        // `path::test` (the coverage table), `path:line`: the file part.
        let file = piece.split("::").next().unwrap_or(piece);
        let file = file.split(':').next().unwrap_or(file);
        // Templates and placeholders, not paths.
        if file.contains(['{', '$', '<', '[']) || file.contains("...") || file.contains('X') {
            continue;
        }
        out.push(file.trim_end_matches([',', '.', ')', '\\']).to_owned());
    }
    out
}

/// Every file or folder a doc or comment cites in backticks exists (a glob `x*` needs one
/// match): a file moved or renamed leaves no stale pointer behind.
#[test]
fn every_cited_repository_path_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    files(root, &mut all);
    let mut stale = Vec::new();
    for path in &all {
        let cites = path
            .extension()
            .is_some_and(|e| e == "md" || e == "rs" || e == "sh" || e == "toml")
            || path.ends_with(".ci/run");
        // This folder's own tests cite made-up paths in their fixtures.
        if !cites || path.starts_with(root.join("tests/repository")) {
            continue;
        }
        // Paths in a package's files are relative to that package (`sim/`, `ui-tests/`...)
        // or to the repository.
        let package = path
            .ancestors()
            .skip(1)
            .find(|d| d.join("Cargo.toml").is_file())
            .unwrap_or(root);
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for cited in cited_paths(&text) {
            let exists = match cited.split_once('*') {
                Some((prefix, _)) => all.iter().any(|p| {
                    p.strip_prefix(root)
                        .is_ok_and(|r| r.to_string_lossy().starts_with(prefix))
                }),
                None => root.join(&cited).exists() || package.join(&cited).exists(),
            };
            // A path under a folder this repository does not have is a citation of another
            // repository (the CANN sources `docs/protocol.md` quotes), not a stale pointer.
            let ours = Path::new(&cited)
                .parent()
                .is_some_and(|d| root.join(d).is_dir() || package.join(d).is_dir());
            if !exists && ours {
                let rel = path.strip_prefix(root).unwrap_or(path);
                stale.push(format!("{}: `{cited}`", rel.display()));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "cited paths that do not exist: {stale:#?}"
    );
    assert_eq!(
        cited_paths("see `src/lib.rs`, `tests/x.rs::t`, `a b`, `$OUT_DIR/x`, `sim/a.rs:3`"),
        ["src/lib.rs", "tests/x.rs", "sim/a.rs"]
    );
}

/// Names and docs say what is checked, never when or by whom: no issue numbers, review
/// rounds or attack teams in the sources, tests, scripts and docs (the commit history keeps
/// those). Built from pieces, so that this file does not match itself.
#[test]
fn no_file_names_its_history() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    files(root, &mut all);
    let words = [
        ["red ", "team"].concat(),
        ["red-", "team"].concat(),
        ["red_", "team"].concat(),
        ["advers", "arial"].concat(),
        ["roun", "d2"].concat(),
        ["roun", "d3"].concat(),
    ];
    let mut found = Vec::new();
    for path in &all {
        let text_file = path
            .extension()
            .is_some_and(|e| matches!(e.to_str(), Some("rs" | "md" | "sh" | "toml" | "c")))
            || path.ends_with(".ci/run");
        if !text_file || path.starts_with(root.join("tests/downstream/target")) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let lower = text.to_lowercase();
        let rel = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        for word in &words {
            if lower.contains(word.as_str()) {
                found.push(format!("{rel}: {word}"));
            }
        }
        // "issue" followed by a number.
        let issue = ["iss", "ue "].concat();
        for (at, _) in lower.match_indices(issue.as_str()) {
            if lower[at + issue.len()..].starts_with(|c: char| c.is_ascii_digit()) {
                found.push(format!("{rel}: {}", &text[at..(at + 9).min(text.len())]));
            }
        }
    }
    assert!(found.is_empty(), "history in names or docs: {found:#?}");
}
