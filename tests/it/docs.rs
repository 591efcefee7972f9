//! Keeps docs/security.md true: every `sliced` flag it names exists, and every test it
//! names as the proof of a defence exists where it says.

use std::path::{Path, PathBuf};
use std::process::Command;

const SLICED: &str = env!("CARGO_BIN_EXE_sliced");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn security_md() -> String {
    std::fs::read_to_string(root().join("docs/security.md")).expect("docs/security.md")
}

/// Code spans: the text between pairs of backticks, outside fenced blocks.
fn code_spans(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        spans.extend(line.split('`').skip(1).step_by(2));
    }
    spans
}

/// The lines of the fenced blocks whose first word is `sliced`, with their continuations.
fn sliced_command_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut in_fence = false;
    let mut in_command = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
            in_command = false;
            continue;
        }
        if in_fence {
            in_command = line.starts_with("sliced ") || (in_command && line.starts_with(' '));
            if in_command {
                lines.push(line);
            }
        }
    }
    lines
}

fn flags_in(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '=')
        .filter(|word| word.starts_with("--") && word.len() > 2)
}

#[test]
fn every_flag_in_the_security_page_is_a_flag_of_sliced() {
    let doc = security_md();
    let help = Command::new(SLICED)
        .arg("--help")
        .output()
        .expect("sliced --help");
    let help = String::from_utf8_lossy(&help.stdout);
    let mut named: Vec<&str> = code_spans(&doc)
        .into_iter()
        .filter(|span| span.starts_with("--"))
        .flat_map(flags_in)
        .chain(sliced_command_lines(&doc).into_iter().flat_map(flags_in))
        .collect();
    named.sort_unstable();
    named.dedup();
    assert!(named.len() >= 20, "too few flags found: {named:?}");
    let unknown: Vec<&&str> = named
        .iter()
        .filter(|flag| {
            !help
                .split_whitespace()
                .any(|word| word.trim_end_matches(',') == **flag)
        })
        .collect();
    assert!(unknown.is_empty(), "not flags of sliced: {unknown:?}");
}

/// Where a test named `file::test` may live: a module of the root package's black-box
/// test binary (`tests/it/`), a crate's integration tests, or a unit-test module
/// `file::tests::test` of a crate's `src/` (in `file.rs`, `file/tests.rs` or, split by
/// area, `file/tests/*.rs`). A test file split by area (`tests/it/cli/`, a crate's
/// `tests/golden/`) is cited with its area, `file::area::test`, and only that area's
/// file, `file/area.rs`, may hold it.
fn test_files(file: &str, area: Option<&str>) -> Vec<PathBuf> {
    let crates: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    let mut candidates = Vec::new();
    if let Some(area) = area {
        let split = format!("{file}/{area}.rs");
        candidates.push(root().join("tests/it").join(&split));
        candidates.extend(crates.iter().map(|krate| krate.join("tests").join(&split)));
    } else {
        candidates.push(root().join("tests/it").join(format!("{file}.rs")));
        for krate in &crates {
            candidates.push(krate.join("tests").join(format!("{file}.rs")));
            candidates.push(krate.join("src").join(format!("{file}.rs")));
            candidates.push(krate.join("src").join(file).join("tests.rs"));
            if let Ok(areas) = std::fs::read_dir(krate.join("src").join(file).join("tests")) {
                candidates.extend(areas.flatten().map(|area| area.path()));
            }
        }
    }
    candidates
        .into_iter()
        .filter(|path| path.is_file())
        .collect()
}

#[test]
fn every_test_the_security_page_cites_exists() {
    let doc = security_md();
    let cited: Vec<(&str, Option<&str>, &str)> = code_spans(&doc)
        .into_iter()
        .filter_map(|span| {
            let (file, test) = span.split_once("::")?;
            // A unit test cited as `module::tests::name`.
            let test = test.strip_prefix("tests::").unwrap_or(test);
            Some(match test.split_once("::") {
                Some((area, test)) => (file, Some(area), test),
                None => (file, None, test),
            })
        })
        .filter(|(file, area, test)| {
            let word = |s: &str| {
                !s.is_empty() && s.bytes().all(|b| b == b'_' || b.is_ascii_alphanumeric())
            };
            // `sliced::audit` is a log target of the daemon, not a test: the root
            // package's tests are cited by their `tests/it/` module.
            word(file) && area.map_or(true, word) && word(test) && *file != "sliced"
        })
        .collect();
    assert!(cited.len() >= 25, "too few tests cited: {}", cited.len());
    for (file, area, test) in cited {
        let files = test_files(file, area);
        let module = area.map_or(file.to_owned(), |area| format!("{file}/{area}"));
        let name = module.replace('/', "::") + "::" + test;
        assert!(!files.is_empty(), "no test file {module}.rs for {name}");
        let defined = files.iter().any(|path| {
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .contains(&format!("fn {test}("))
        });
        assert!(
            defined,
            "{name} is cited in docs/security.md but not defined"
        );
    }
}
