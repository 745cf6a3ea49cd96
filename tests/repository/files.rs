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
