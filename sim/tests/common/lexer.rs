//! A small lexer for the layer checks of both crates (`sim/tests/layers.rs`,
//! `tests/repository/layers.rs`): the source without comments, string and char literals,
//! with the whitespace around `::` removed, so that a path is found however it is spelled.

/// The source without comments, string and char literals (a doc link or a message that
/// names a module is not an import).
pub fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            // Replaced by a space (`a/* */b` is two tokens), its newlines kept (line numbers).
            out.push(' ');
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if b[i] == b'r' && (b[i..].starts_with(b"r\"") || b[i..].starts_with(b"r#")) {
            // Raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while j < b.len() && b[j] == b'#' {
                hashes += 1;
                j += 1;
            }
            if j < b.len() && b[j] == b'"' {
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                j += 1;
                while j < b.len() && !b[j..].starts_with(&close) {
                    if b[j] == b'\n' {
                        out.push('\n');
                    }
                    j += 1;
                }
                i = j + close.len();
                out.push_str("\"\"");
            } else {
                out.push(b[i] as char);
                i += 1;
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                // A newline in the string, or escaped (a continued line), kept: line numbers.
                if b[i] == b'\n' || (b[i] == b'\\' && b.get(i + 1) == Some(&b'\n')) {
                    out.push('\n');
                }
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\''), or a lifetime ('a): skip only the former.
            let lit = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|p| i + 3 + p)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 3)
            } else {
                None
            };
            match lit {
                Some(end) => {
                    out.push_str("' '");
                    i = end;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = text[i..].chars().next().expect("char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `code_only`, then every `a :: b` written `a::b` (a path split by spaces or newlines, as
/// inside a macro call rustfmt leaves alone, is still the same path).
pub fn code_of(text: &str) -> String {
    let code = code_only(text);
    let mut out = String::with_capacity(code.len());
    let mut rest = code.as_str();
    while let Some(at) = rest.find("::") {
        out.push_str(rest[..at].trim_end());
        out.push_str("::");
        rest = rest[at + 2..].trim_start();
    }
    out.push_str(rest);
    out
}

/// What the layer checks forbid outright, in the code of `file` (`root`: the crate root):
/// an alias of the crate or of a parent module (`use crate as x`, `super as`, `use self
/// as`), through which a path would escape the search for `crate::`; a `#[path]` attribute,
/// which would give a file the layer of another folder; a `macro_rules!` in the crate root,
/// which every later module sees and may use to name what its own layer may not.
pub fn forbidden_constructs(file: &str, code: &str, root: bool) -> Vec<String> {
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '#' || c == '!'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut found = Vec::new();
    for pair in words.windows(3) {
        match pair {
            [_, "crate" | "super", "as"] | ["use", "self", "as"] => {
                found.push(format!("{file}: `{} {} {}`", pair[0], pair[1], pair[2]))
            }
            _ => {}
        }
    }
    if code.contains("#[path") || code.contains("# [path") {
        found.push(format!("{file}: a #[path] attribute"));
    }
    if root && code.contains("macro_rules!") {
        found.push(format!("{file}: macro_rules! in the crate root"));
    }
    found
}

/// Functions of more than `limit` lines (from `fn` to its closing brace) whose comment
/// block above does not say why (the words "over 100 lines"): `file:line name (n lines)`.
/// `text` is the file, `code` its [`code_only`] (same lines).
pub fn long_functions(file: &str, text: &str, code: &str, limit: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let code_lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (n, line) in code_lines.iter().enumerate() {
        let Some(at) = line.find("fn ") else { continue };
        if at > 0
            && line[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let name: String = line[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body: from the first `{` before any `;`, to its matching `}`.
        let mut depth = 0usize;
        let mut end = None;
        'scan: for (m, l) in code_lines.iter().enumerate().skip(n) {
            let from = if m == n { at } else { 0 };
            for c in l[from..].chars() {
                match c {
                    ';' if depth == 0 => break 'scan,
                    '{' => depth += 1,
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = Some(m);
                            break 'scan;
                        }
                    }
                    _ => {}
                }
            }
        }
        let Some(end) = end else { continue };
        let len = end - n + 1;
        if len <= limit {
            continue;
        }
        let reason = lines[..n]
            .iter()
            .rev()
            .take_while(|l| {
                let t = l.trim_start();
                t.starts_with("//") || t.starts_with("#[")
            })
            .any(|l| l.to_lowercase().contains("over 100 lines"));
        if !reason {
            found.push(format!("{file}:{} {name} ({len} lines)", n + 1));
        }
    }
    found
}
