//! The one-way rule of `docs/architecture.md`, checked: which of the server crate's modules
//! may import which. The crates below the server (`trellis-store`, `trellis-git`,
//! `trellis-outbound`, `trellis-plugin-host`) cannot import it at all, since cargo keeps them
//! apart; inside the server crate only this test does. It reads the sources, so it needs no
//! build of its own: `cargo test -p trellis --test layers`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// A module (a `crate::` path prefix) and the top-level modules allowed to import it.
struct Rule {
    imported: &'static str,
    importers: &'static [&'static str],
    why: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        imported: "api",
        importers: &["http", "web"],
        why: "the REST handlers are reached through the router only (the web pages share a few of their parsers)",
    },
    Rule {
        imported: "web",
        importers: &["http"],
        why: "the web pages are reached through the router only",
    },
    Rule {
        imported: "http::request",
        importers: &["api", "web", "http", "auth"],
        why: "the `Api` extractor is the REST handlers' (the OAuth endpoints read their tenant and parameters there too); transports and the domain take a `Scope`",
    },
    Rule {
        imported: "http",
        importers: &[
            "api",
            "web",
            "auth",
            "git_http",
            "ratelimit",
            "cli",
            "context",
        ],
        why: "only what serves an HTTP request reads HTTP's parameters, errors and resolved tenant",
    },
    Rule {
        imported: "views",
        importers: &["api", "web", "http", "webhooks"],
        why: "rendering is the handlers' (and the webhook payloads', which are views of events); the domain never renders",
    },
    Rule {
        imported: "ssh",
        importers: &["cli"],
        why: "the SSH transport is started by `serve` and imported by nothing else",
    },
    Rule {
        imported: "git_http",
        importers: &["http"],
        why: "git over HTTP is reached through the router's fallback only",
    },
];

/// The modules a source file's code (comments and its `mod tests` aside) names with
/// `crate::`: `crate::a::b` and each name of `crate::{a::b, c}`, as full paths.
fn imported_paths(source: &str) -> BTreeSet<String> {
    let code: String = source
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or("")
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut paths = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `trellis_crate::` and the like
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for name in group[..end].split(',') {
                paths.insert(path_prefix(name.trim()));
            }
        } else {
            paths.insert(path_prefix(rest));
        }
    }
    paths.retain(|p| !p.is_empty());
    paths
}

/// The leading `a::b::c` of `text`.
fn path_prefix(text: &str) -> String {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    text[..end].trim_end_matches(':').to_string()
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read the source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn modules_import_only_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 100, "found only {} source files", files.len());
    let mut broken = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let importer = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a file name")
            .trim_end_matches(".rs");
        if importer == "lib" {
            continue; // the crate root declares every module and the `testing` facade
        }
        let source = fs::read_to_string(file).expect("read a source file");
        for path in imported_paths(&source) {
            for rule in RULES {
                let names_it =
                    path == rule.imported || path.starts_with(&format!("{}::", rule.imported));
                if names_it
                    && importer != rule.imported.split("::").next().unwrap_or("")
                    && !rule.importers.contains(&importer)
                {
                    broken.push(format!(
                        "{} imports crate::{path}: {}",
                        relative.display(),
                        rule.why
                    ));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "imports against the layering:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_reader_finds_grouped_and_plain_paths() {
    let source = "use crate::a::b;\nuse crate::{c::d, e};\n// crate::f::g\nfn x() { crate::h::i(); trellis_crate::j(); }\n#[cfg(test)]\nmod tests { use crate::k; }";
    let found: Vec<String> = imported_paths(source).into_iter().collect();
    assert_eq!(found, ["a::b", "c::d", "e", "h::i"]);
}
