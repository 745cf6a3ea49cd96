//! Build script.
//!
//! By default it does nothing but watch the feature: the checked-in `src/sys/bindings.rs`
//! and `src/sys/functions.rs` are used, so a build on an Atlas board needs neither libclang
//! nor a CANN toolkit. With the `bindgen` feature it regenerates the bindings into `$OUT_DIR`:
//! from the real CANN headers when `ASCEND_TOOLKIT_HOME` or `ASCEND_HOME_PATH` points at an
//! install, else from the crate's own `include/ascendcl.h`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-check-cfg=cfg(ascend_bindings_from_toolkit)");
    #[cfg(feature = "bindgen")]
    generate::run();
}

#[cfg(feature = "bindgen")]
mod generate {
    use std::env;
    use std::path::{Path, PathBuf};

    /// The toolkit's header that declares the runtime API, if an install is pointed at.
    fn toolkit_header() -> Option<(PathBuf, PathBuf)> {
        for var in ["ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"] {
            println!("cargo:rerun-if-env-changed={var}");
            let Some(root) = env::var_os(var) else {
                continue;
            };
            let include = Path::new(&root).join("include");
            let header = include.join("acl").join("acl.h");
            if header.is_file() {
                return Some((header, include));
            }
        }
        None
    }

    pub fn run() {
        let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
        let crate_header = manifest.join("include").join("ascendcl.h");
        println!("cargo:rerun-if-changed={}", crate_header.display());

        let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());
        let toolkit = toolkit_header();
        if toolkit.is_some() {
            println!("cargo:rustc-cfg=ascend_bindings_from_toolkit");
        }
        for (builder, file) in [
            (
                crate::bindings_builder as fn() -> bindgen::Builder,
                "bindings.rs",
            ),
            (crate::functions_builder, "functions.rs"),
        ] {
            let from_crate = generate(builder().header(crate_header.to_string_lossy()));
            let text = match &toolkit {
                Some((header, include)) => {
                    let from_toolkit = generate(
                        builder()
                            .header(header.to_string_lossy())
                            .clang_arg(format!("-I{}", include.display())),
                    );
                    // What the toolkit's headers lack (functions newer than it, optional at
                    // run time, and their types) comes from the crate's header: optional
                    // functions must not be required at compile time.
                    let (merged, added) = crate::merge::with_fallback(&from_toolkit, &from_crate);
                    if !added.is_empty() {
                        println!(
                            "cargo:warning={file}: {} item(s) not in the toolkit's headers, declared from include/ascendcl.h: {}",
                            added.len(),
                            added.join(", ")
                        );
                    }
                    merged
                }
                None => from_crate,
            };
            let path = out.join(file);
            if let Err(e) = std::fs::write(&path, text) {
                println!("cargo:warning=cannot write {}: {e}", path.display());
                std::process::exit(1);
            }
        }
    }

    fn generate(builder: bindgen::Builder) -> String {
        match builder.generate() {
            Ok(bindings) => bindings.to_string(),
            Err(e) => {
                println!("cargo:warning=bindgen failed (is libclang installed?): {e}");
                std::process::exit(1);
            }
        }
    }
}

/// Completing generated bindings from another generation: bindgen writes top-level items
/// at column 0 (attributes first, then one item, each function in its own `extern` block),
/// so items are split by brace depth and named by their first declaration.
#[cfg(feature = "bindgen")]
mod merge {
    /// The top-level items of bindgen's output, with the lines before the first (the
    /// file's header comment and `use` lines) as an item of their own.
    fn items(text: &str) -> Vec<String> {
        let mut items = Vec::new();
        let mut current = String::new();
        let mut depth: i64 = 0;
        for line in text.lines() {
            current.push_str(line);
            current.push('\n');
            depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            let ends = depth == 0
                && !line.starts_with("#[")
                && !line.starts_with("//")
                && (line.ends_with(';') || line.ends_with('}'));
            if ends {
                items.push(std::mem::take(&mut current));
            }
        }
        if !current.trim().is_empty() {
            items.push(current);
        }
        items
    }

    /// The name an item declares (`fn`, `type`, `const`, `struct`, ...), or its first line
    /// for an `impl` or anything else.
    fn key(item: &str) -> String {
        for word in [
            "fn ", "type ", "const ", "static ", "struct ", "union ", "enum ",
        ] {
            for line in item.lines() {
                let line = line.trim_start();
                let Some(rest) = line.strip_prefix("pub ").and_then(|l| l.strip_prefix(word))
                else {
                    continue;
                };
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                return format!("{word}{name}");
            }
        }
        item.lines()
            .find(|l| !l.starts_with("#[") && !l.trim().is_empty())
            .unwrap_or_default()
            .to_owned()
    }

    /// `primary` with every item of `fallback` it does not declare appended; and those
    /// items' names.
    pub fn with_fallback(primary: &str, fallback: &str) -> (String, Vec<String>) {
        let have: std::collections::HashSet<String> =
            items(primary).iter().map(|i| key(i)).collect();
        let mut merged = primary.to_owned();
        let mut added = Vec::new();
        for item in items(fallback).into_iter().skip(1) {
            let key = key(&item);
            if !have.contains(&key) && !key.starts_with("use ") {
                merged.push_str(&item);
                added.push(key);
            }
        }
        (merged, added)
    }
}

/// The bindgen configuration of the public declarations, `src/sys/bindings.rs`: the types
/// and constants of the header, no function (nothing is linked: every function is resolved
/// from the loaded library, so a declaration one could call would be a link error). Used
/// here and (through the same options) to produce the checked-in file, so that the drift
/// test compares like with like.
#[cfg(feature = "bindgen")]
fn bindings_builder() -> bindgen::Builder {
    bindgen::Builder::default()
        // A struct with a flexible array member gets unsafe accessors; edition 2024 wants
        // their unsafe operations in `unsafe` blocks (real CANN headers have such structs).
        .wrap_unsafe_ops(true)
        .allowlist_type("acl.*")
        .allowlist_var("ACL_.*")
        .ignore_functions()
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(false)
        .layout_tests(false)
        .generate_comments(false)
        .raw_line("// Generated by bindgen from include/ascendcl.h: do not edit.")
        .raw_line("// Regenerate: cargo build --features bindgen, then copy")
        .raw_line("// $OUT_DIR/bindings.rs here (tests/bindings_drift.rs fails when they differ).")
}

/// The bindgen configuration of the function prototypes, `src/sys/functions.rs`: private to
/// the raw layer, which checks each function table entry against them at compile time.
#[cfg(feature = "bindgen")]
fn functions_builder() -> bindgen::Builder {
    bindgen::Builder::default()
        .wrap_unsafe_ops(true)
        .allowlist_function("acl.*")
        .allowlist_recursively(false)
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(false)
        .layout_tests(false)
        .generate_comments(false)
        .raw_line("// Generated by bindgen from include/ascendcl.h: do not edit.")
        .raw_line("// Regenerate: cargo build --features bindgen, then copy")
        .raw_line("// $OUT_DIR/functions.rs here (tests/bindings_drift.rs fails when they differ).")
        .raw_line("// The prototypes only: never linked, used by compile-time checks of the")
        .raw_line("// function tables.")
        .raw_line("")
        .raw_line("use super::bindings::*;")
}
