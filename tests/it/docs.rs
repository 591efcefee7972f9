//! Keeps docs/security.md true: every `sliced` flag it names exists, and every test it
//! names as the proof of a defence exists where it says. Keeps docs/api.md, the
//! repository's reference of the API, in step with the product: it names every message
//! of the slice contract's errors and every slice path of the OpenAPI document, and the
//! tests it cites exist. Runs the README's REST examples as written.

use std::path::{Path, PathBuf};
use std::process::Command;

const SLICED: &str = env!("CARGO_BIN_EXE_sliced");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn security_md() -> String {
    read("docs/security.md")
}

fn api_md() -> String {
    read("docs/api.md")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|err| panic!("{path}: {err}"))
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
    let cited = check_cited_tests("docs/security.md", &security_md());
    assert!(cited >= 25, "too few tests cited: {cited}");
}

#[test]
fn every_test_the_api_reference_cites_exists() {
    let cited = check_cited_tests("docs/api.md", &api_md());
    assert!(cited >= 15, "too few tests cited: {cited}");
}

/// Checks that every test `doc` cites as `file::test` (or `file::area::test`) is defined
/// where that name says; returns how many it cites.
fn check_cited_tests(page: &str, doc: &str) -> usize {
    let cited: Vec<(&str, Option<&str>, &str)> = code_spans(doc)
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
            // package's tests are cited by their `tests/it/` module. Tests and their
            // files are snake case, so `Mount::mount` and `slice_core::SliceError`
            // name items of the code instead.
            let lower = |s: &str| s.starts_with(|c: char| c.is_ascii_lowercase());
            word(file)
                && area.map_or(true, word)
                && word(test)
                && *file != "sliced"
                && lower(file)
                && lower(test)
        })
        .collect();
    let count = cited.len();
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
        assert!(defined, "{name} is cited in {page} but not defined");
    }
    count
}

/// The message templates of `slice_core::SliceError`, as docs/api.md writes them: each
/// `#[error("...")]` of the enum, read from its source so that a variant added later is
/// caught too, with its `{0}` written as the placeholder of the variant's identifier.
/// Each template is also checked against the product: filled with a sample identifier,
/// it must be a message `SliceError` reads back and prints the same, so the parsing
/// here cannot drift from the code either.
fn slice_error_templates() -> Vec<String> {
    let source = read("crates/slice-core/src/error.rs");
    let (_, body) = source
        .split_once("pub enum SliceError {")
        .expect("error.rs defines SliceError");
    let (body, _) = body.split_once("\n}").expect("SliceError's closing brace");
    let mut templates = Vec::new();
    let mut pending: Option<&str> = None;
    for line in body.lines().map(str::trim) {
        if let Some(text) = line.strip_prefix("#[error(\"") {
            let text = text.strip_suffix("\")]").expect("a one-line #[error]");
            pending = Some(text);
        } else if let Some(text) = pending.filter(|_| !line.is_empty() && !line.starts_with("//")) {
            // The variant the attribute belongs to: `Name(Identifier),`.
            let identifier = line
                .split_once('(')
                .and_then(|(_, rest)| rest.split_once(')'))
                .map(|(identifier, _)| identifier)
                .unwrap_or_else(|| panic!("a variant with one field: {line}"));
            let (placeholder, sample) = match identifier {
                "SliceName" => ("<slice_name>", "blue"),
                "PortId" => ("<port_name>", "0xab:1"),
                "MacAddress" => ("<mac_address>", "00:00:00:00:00:01"),
                other => panic!("no placeholder for {other}: name one here and in docs/api.md"),
            };
            let message = text.replace("{0}", sample);
            let error = slice_core::SliceError::from_message(&message)
                .unwrap_or_else(|| panic!("{message:?} is not a message of SliceError"));
            assert_eq!(error.to_string(), message);
            templates.push(text.replace("{0}", placeholder));
            pending = None;
        }
    }
    templates
}

/// The slice paths of the OpenAPI document the daemon serves (`/slices`, `/slices:apply`,
/// `/slices/{slice}/ports`...), each with its twin under `/api/`.
fn slice_paths() -> Vec<String> {
    let document: serde_json::Value =
        serde_json::from_str(&read("crates/slice-http/openapi.json")).expect("JSON");
    let paths = document["paths"].as_object().expect("paths");
    let mut named = Vec::new();
    for (path, item) in paths.iter().filter(|(path, _)| path.starts_with("/slices")) {
        assert_eq!(
            item["x-api-mirror"],
            serde_json::json!(true),
            "{path} has no /api/ twin"
        );
        named.push(path.clone());
        named.push(format!("/api{path}"));
    }
    named
}

/// The words of the code spans of `doc`: `POST /slices/{slice}/ports` names the path.
fn span_words(doc: &str) -> Vec<&str> {
    code_spans(doc)
        .into_iter()
        .flat_map(str::split_whitespace)
        .collect()
}

#[test]
fn the_api_reference_names_every_contract_message_and_slice_path() {
    let doc = api_md();
    let spans = code_spans(&doc);
    let templates = slice_error_templates();
    assert!(templates.len() >= 6, "too few templates: {templates:?}");
    let missing: Vec<&String> = templates
        .iter()
        .filter(|template| !spans.contains(&template.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/api.md does not name these messages of SliceError: {missing:?}"
    );

    let words = span_words(&doc);
    let paths = slice_paths();
    assert!(paths.len() >= 12, "too few slice paths: {paths:?}");
    let missing: Vec<&String> = paths
        .iter()
        .filter(|path| !words.contains(&path.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/api.md does not name these paths of the OpenAPI document: {missing:?}"
    );
    // Nor may it name a slice path the document lacks (one renamed or gone).
    let unknown: Vec<&&str> = words
        .iter()
        .filter(|word| word.contains('{'))
        .filter(|word| word.starts_with("/slices") || word.starts_with("/api/slices"))
        .filter(|word| !paths.iter().any(|path| path == **word))
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/api.md names slice paths the OpenAPI document lacks: {unknown:?}"
    );
}

/// The `sh` blocks of the README's section `heading`, in order.
fn readme_blocks(heading: &str) -> Vec<String> {
    let readme = read("README.md");
    let section = readme
        .split_once(heading)
        .unwrap_or_else(|| panic!("README.md has no {heading:?}"))
        .1;
    let section = section.split("\n## ").next().unwrap_or_default();
    section
        .split("```sh\n")
        .skip(1)
        .map(|rest| rest.split_once("\n```").expect("a block ends").0.to_owned())
        .collect()
}

/// The README's REST examples, run as written (only the address changed to the test
/// daemon's) with curl against the real daemon: each request succeeds, and an answer the
/// README shows in a comment is the answer given.
#[test]
fn the_readme_rest_examples_run_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = crate::common::Daemon::start(dir.path());
    let address = daemon.url("");
    let address = address.trim_start_matches("http://").trim_end_matches('/');
    let lines: Vec<String> = readme_blocks("## Using the REST API")
        .iter()
        .flat_map(|block| block.lines().map(str::to_owned).collect::<Vec<_>>())
        .filter(|line| line.starts_with("curl "))
        .collect();
    assert!(lines.len() >= 7, "the README's REST examples: {lines:?}");
    for line in lines {
        let (command, shown) = match line.split_once("  #") {
            Some((command, shown)) => (command.trim().to_owned(), Some(shown.trim().to_owned())),
            None => (line.clone(), None),
        };
        let command = command.replacen("curl ", "curl -sS --fail-with-body ", 1);
        let command = command.replace("localhost:9292", address);
        let out = Command::new("sh")
            .arg("-c")
            .arg(&command)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let answer = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{line}: {answer} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some(shown) = shown.filter(|shown| shown.starts_with(['[', '{'])) {
            assert_eq!(answer.trim(), shown, "{line}");
        }
    }
}
