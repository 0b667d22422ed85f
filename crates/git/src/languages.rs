//! A repository's languages by bytes, the way GitLab's Gitaly uses linguist: files are
//! classified by extension (or well-known file name), only programming and markup languages
//! count, and vendored and documentation files are left out. Percentages have two decimals
//! and sum to exactly 100.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// Language name → share in percent, largest first when shown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Languages(pub Vec<(String, f64)>);

/// Extensions (lower case) and the language they mean. Programming and markup languages only:
/// data and prose (JSON, YAML, Markdown, text) never count, as in linguist's statistics.
const EXTENSIONS: &[(&str, &str)] = &[
    ("rs", "Rust"),
    ("rb", "Ruby"),
    ("rake", "Ruby"),
    ("py", "Python"),
    ("js", "JavaScript"),
    ("mjs", "JavaScript"),
    ("cjs", "JavaScript"),
    ("jsx", "JavaScript"),
    ("ts", "TypeScript"),
    ("tsx", "TSX"),
    ("go", "Go"),
    ("java", "Java"),
    ("kt", "Kotlin"),
    ("kts", "Kotlin"),
    ("scala", "Scala"),
    ("c", "C"),
    ("h", "C"),
    ("cc", "C++"),
    ("cpp", "C++"),
    ("cxx", "C++"),
    ("hpp", "C++"),
    ("hh", "C++"),
    ("cs", "C#"),
    ("swift", "Swift"),
    ("m", "Objective-C"),
    ("php", "PHP"),
    ("pl", "Perl"),
    ("pm", "Perl"),
    ("sh", "Shell"),
    ("bash", "Shell"),
    ("zsh", "Shell"),
    ("ps1", "PowerShell"),
    ("lua", "Lua"),
    ("r", "R"),
    ("dart", "Dart"),
    ("ex", "Elixir"),
    ("exs", "Elixir"),
    ("erl", "Erlang"),
    ("hs", "Haskell"),
    ("clj", "Clojure"),
    ("ml", "OCaml"),
    ("fs", "F#"),
    ("vue", "Vue"),
    ("svelte", "Svelte"),
    ("sql", "PLpgSQL"),
    ("html", "HTML"),
    ("htm", "HTML"),
    ("css", "CSS"),
    ("scss", "SCSS"),
    ("sass", "Sass"),
    ("less", "Less"),
    ("haml", "Haml"),
    ("erb", "HTML+ERB"),
    ("tex", "TeX"),
    ("groovy", "Groovy"),
    ("zig", "Zig"),
    ("nim", "Nim"),
    ("jl", "Julia"),
    ("tf", "HCL"),
    ("hcl", "HCL"),
    ("vim", "Vim Script"),
    ("el", "Emacs Lisp"),
    ("asm", "Assembly"),
    ("s", "Assembly"),
    ("f90", "Fortran"),
    ("pas", "Pascal"),
    ("coffee", "CoffeeScript"),
];

/// File names that name their language without an extension.
const FILE_NAMES: &[(&str, &str)] = &[
    ("makefile", "Makefile"),
    ("gnumakefile", "Makefile"),
    ("dockerfile", "Dockerfile"),
    ("rakefile", "Ruby"),
    ("gemfile", "Ruby"),
    ("cmakelists.txt", "CMake"),
];

/// Path prefixes linguist treats as vendored or documentation.
const EXCLUDED_DIRS: &[&str] = &[
    "vendor/",
    "node_modules/",
    "third_party/",
    "bower_components/",
    "docs/",
    "doc/",
    "documentation/",
];

/// The language a path counts for, if any.
pub fn language_of(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    if EXCLUDED_DIRS
        .iter()
        .any(|dir| lower.starts_with(dir) || lower.contains(&format!("/{dir}")))
    {
        return None;
    }
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    if let Some((_, language)) = FILE_NAMES.iter().find(|(n, _)| *n == name) {
        return Some(language);
    }
    let (_, ext) = name.rsplit_once('.')?;
    EXTENSIONS
        .iter()
        .find(|(e, _)| *e == ext)
        .map(|(_, language)| *language)
}

impl Languages {
    /// Shares by bytes of the given files.
    pub fn of_files(files: &[(String, u64)]) -> Languages {
        let mut bytes: BTreeMap<&str, u64> = BTreeMap::new();
        for (path, size) in files {
            if let Some(language) = language_of(path) {
                *bytes.entry(language).or_default() += size;
            }
        }
        let total: u64 = bytes.values().sum();
        if total == 0 {
            return Languages::default();
        }
        // Hundredths of a percent, by largest remainder, so the shares sum to exactly 100.
        let mut shares: Vec<(&str, u64, u64)> = bytes
            .iter()
            .map(|(language, size)| {
                let scaled = u128::from(*size) * 10_000;
                let whole = (scaled / u128::from(total)) as u64;
                let remainder = (scaled % u128::from(total)) as u64;
                (*language, whole, remainder)
            })
            .collect();
        let missing = 10_000 - shares.iter().map(|(_, w, _)| w).sum::<u64>();
        shares.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
        for share in shares.iter_mut().take(missing as usize) {
            share.1 += 1;
        }
        shares.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        Languages(
            shares
                .into_iter()
                .filter(|(_, hundredths, _)| *hundredths > 0)
                .map(|(language, hundredths, _)| (language.to_string(), hundredths as f64 / 100.0))
                .collect(),
        )
    }

    pub fn to_json(&self) -> Value {
        let map: Map<String, Value> = self
            .0
            .iter()
            .map(|(language, share)| (language.clone(), json!(share)))
            .collect();
        Value::Object(map)
    }

    /// Reads what [`Languages::to_json`] stored (order by share, largest first).
    pub fn from_json(text: &str) -> Languages {
        let map: Map<String, Value> = serde_json::from_str(text).unwrap_or_default();
        let mut shares: Vec<(String, f64)> = map
            .into_iter()
            .filter_map(|(k, v)| v.as_f64().map(|share| (k, share)))
            .collect();
        shares.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Languages(shares)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, u64)]) -> Vec<(String, u64)> {
        list.iter().map(|(p, s)| (p.to_string(), *s)).collect()
    }

    #[test]
    fn shares_by_bytes_sum_to_one_hundred() {
        let langs = Languages::of_files(&files(&[
            ("src/main.rs", 100),
            ("lib/a.rb", 100),
            ("web/app.js", 100),
            ("README.md", 5000),
            ("vendor/x.rs", 9000),
            ("Makefile", 0),
        ]));
        let total: f64 = langs.0.iter().map(|(_, s)| s).sum();
        assert!((total - 100.0).abs() < 1e-9, "{langs:?}");
        assert_eq!(langs.0.len(), 3);
        assert_eq!(langs.0[0], ("JavaScript".to_string(), 33.34));
        assert_eq!(Languages::from_json(&langs.to_json().to_string()), langs);
    }

    #[test]
    fn prose_only_has_no_languages() {
        assert_eq!(
            Languages::of_files(&files(&[("README.md", 10)])),
            Languages::default()
        );
        assert_eq!(language_of("docs/x.py"), None);
        assert_eq!(language_of("Dockerfile"), Some("Dockerfile"));
    }
}
