//! Tidy checks in the style of rust-analyzer's: the documentation that describes the
//! project as a whole must keep up with it. A new crate needs its heading in
//! docs/ARCHITECTURE.md's code map, whose named files must exist and whose paragraphs stay
//! short, a new flag of `sliced` or `slice` its mention in the README, and
//! the README's set-up commands must stay the ones that CI and the tests run.

use std::path::Path;
use std::process::Command;

const SLICED: &str = env!("CARGO_BIN_EXE_sliced");
const SLICE: &str = env!("CARGO_BIN_EXE_slice");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    let path = root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The section of a Markdown page under the heading `heading`, up to the next heading of
/// the same or a higher level.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let level = heading.bytes().take_while(|&b| b == b'#').count();
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no heading {heading:?}"))
        + heading.len()
        + 2;
    let rest = &text[start..];
    let end = rest
        .match_indices("\n#")
        .find(|(at, _)| {
            let hashes = rest[at + 1..].bytes().take_while(|&b| b == b'#').count();
            hashes <= level && rest[at + 1 + hashes..].starts_with(' ')
        })
        .map_or(rest.len(), |(at, _)| at);
    &rest[..end]
}

/// The lines of the first fenced block of `text`, without the fences.
fn first_fenced_block(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|line| !line.starts_with("```"))
        .skip(1)
        .take_while(|line| !line.starts_with("```"))
        .collect()
}

/// A shell line without its comment and surrounding blanks.
fn command_of(line: &str) -> &str {
    line.split_once(" #")
        .map_or(line, |(command, _)| command)
        .trim()
}

/// The lines of `text` outside fenced blocks.
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut in_fence = false;
    text.lines().filter(move |line| {
        if line.starts_with("```") {
            in_fence = !in_fence;
            return false;
        }
        !in_fence
    })
}

/// The text of the first code span of `line`, if it has one.
fn first_code_span(line: &str) -> Option<&str> {
    line.split('`').nth(1)
}

/// The headings of the architecture page's code map that name a path: `` ### `xtask` ``.
fn code_map_headings(architecture: &str) -> Vec<&str> {
    prose_lines(section(architecture, "## Code map"))
        .filter_map(|line| line.strip_prefix("### "))
        .filter_map(first_code_span)
        .collect()
}

#[test]
fn every_workspace_crate_has_its_heading_in_the_architecture_page() {
    let manifest: toml::Table = read("Cargo.toml").parse().expect("Cargo.toml is TOML");
    let members = manifest["workspace"]["members"]
        .as_array()
        .expect("workspace.members is a list");
    let architecture = read("docs/ARCHITECTURE.md");
    let headings = code_map_headings(&architecture);
    // The root package is described by its sources; the members by their directory.
    let mut wanted = vec!["src/".to_owned()];
    wanted.extend(
        members
            .iter()
            .map(|member| member.as_str().expect("a member is a path").to_owned()),
    );
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|path| {
            !headings
                .iter()
                .any(|heading| heading.trim_end_matches('/') == path.trim_end_matches('/'))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's \"Code map\" has no heading `### `PATH`` for {missing:?}"
    );
}

/// Whether a code span names a file or directory: path characters only, and a slash or a
/// file extension. A span that starts with `/` is a URL path, not a file.
fn names_a_file(span: &str) -> bool {
    let path_chars = span
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'));
    let extension = [".rs", ".md", ".toml", ".json", ".py"]
        .iter()
        .any(|ext| span.ends_with(ext));
    path_chars && !span.starts_with('/') && (span.contains('/') || extension)
}

/// Whether a code span names a module: `engine::link_guard`, `slice_core::wire`.
fn names_a_module(span: &str) -> bool {
    span.contains("::")
        && span.split("::").all(|part| {
            part.starts_with(|c: char| c.is_ascii_lowercase())
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}

/// Whether the module path `span` has a file, looked up from the crate of `base`, or from
/// the crate it starts with.
fn module_exists(span: &str, base: &Path) -> bool {
    let mut parts: Vec<&str> = span.split("::").collect();
    let first = parts[0];
    let crate_dir = root().join("crates").join(first.replace('_', "-"));
    let src = if crate_dir.is_dir() {
        parts.remove(0);
        crate_dir.join("src")
    } else {
        if first == "crate" {
            parts.remove(0);
        }
        base.join("src")
    };
    let Some((last, dirs)) = parts.split_last() else {
        return src.is_dir();
    };
    let dir = dirs.iter().fold(src, |dir, part| dir.join(part));
    dir.join(format!("{last}.rs")).is_file() || dir.join(last).join("mod.rs").is_file()
}

#[test]
fn every_path_the_architecture_page_names_exists() {
    let architecture = read("docs/ARCHITECTURE.md");
    let mut base = root().to_path_buf();
    let mut missing = Vec::new();
    for line in prose_lines(&architecture) {
        if line.starts_with('#') {
            // A file named under a crate's heading may be relative to the crate or to its
            // `src/`; anywhere else, to the repository.
            base = line
                .strip_prefix("### ")
                .and_then(first_code_span)
                .map(|heading| root().join(heading))
                .filter(|dir| dir.is_dir())
                .unwrap_or_else(|| root().to_path_buf());
        }
        for span in line.split('`').skip(1).step_by(2) {
            let found = if names_a_file(span) {
                [root().to_path_buf(), base.clone(), base.join("src")]
                    .iter()
                    .any(|dir| dir.join(span).exists())
            } else if names_a_module(span) {
                module_exists(span, &base)
            } else {
                continue;
            };
            if !found {
                missing.push(span.to_owned());
            }
        }
        // Links to the other pages, which sit beside this one.
        for rest in line.split("](").skip(1) {
            let target = rest.split(')').next().unwrap_or(rest);
            let file = target.split('#').next().unwrap_or(target);
            if !file.is_empty() && !file.contains("://") && !root().join("docs").join(file).exists()
            {
                missing.push(target.to_owned());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names files or modules that do not exist: {missing:?}"
    );
}

/// The paragraphs of a Markdown page outside fenced blocks, as the blank lines part them
/// (a list without blank lines counts as one).
fn paragraphs(text: &str) -> Vec<String> {
    let mut paragraphs = vec![String::new()];
    for line in prose_lines(text) {
        if line.trim().is_empty() {
            paragraphs.push(String::new());
        } else if let Some(last) = paragraphs.last_mut() {
            last.push_str(line);
            last.push('\n');
        }
    }
    paragraphs.retain(|paragraph| !paragraph.is_empty());
    paragraphs
}

/// A map is read, not studied: no paragraph of it runs past 200 words.
#[test]
fn no_paragraph_of_the_architecture_page_is_over_200_words() {
    const MAX_WORDS: usize = 200;
    let architecture = read("docs/ARCHITECTURE.md");
    let long: Vec<String> = paragraphs(&architecture)
        .iter()
        .filter(|paragraph| paragraph.split_whitespace().count() > MAX_WORDS)
        .map(|paragraph| paragraph.chars().take(60).collect())
        .collect();
    assert!(
        long.is_empty(),
        "paragraphs of docs/ARCHITECTURE.md over {MAX_WORDS} words (mechanism belongs in the \
         module docs): {long:?}"
    );
}

/// The long flags in the options list of a clap `-h` text (the examples are not read).
fn long_flags(help: &str) -> Vec<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|line| line.starts_with('-'))
        .flat_map(|line| {
            line.split_whitespace()
                .take_while(|word| word.starts_with('-') || word.starts_with('<'))
                .filter(|word| word.starts_with("--"))
                .map(|word| word.trim_end_matches(',').to_owned())
        })
        .filter(|flag| flag != "--help" && flag != "--version")
        .collect()
}

fn help_of(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .arg("-h")
        .output()
        .unwrap_or_else(|err| panic!("{program}: {err}"));
    assert!(output.status.success(), "{program} {args:?} -h failed");
    String::from_utf8(output.stdout).expect("help is UTF-8")
}

/// The subcommands listed in a clap help text.
fn subcommands(help: &str) -> Vec<&str> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect()
}

/// Whether `flag` occurs in `text` as a whole flag, not as the start of a longer one
/// (`--openflow` inside `--openflow-tls` does not count).
fn mentions(text: &str, flag: &str) -> bool {
    text.match_indices(flag).any(|(at, _)| {
        !text[at + flag.len()..]
            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

#[test]
fn every_flag_of_sliced_and_slice_is_in_the_readme() {
    let readme = read("README.md");
    let mut flags: Vec<(String, String)> = long_flags(&help_of(SLICED, &[]))
        .into_iter()
        .map(|flag| ("sliced".to_owned(), flag))
        .collect();
    let slice_help = help_of(SLICE, &[]);
    flags.extend(
        long_flags(&slice_help)
            .into_iter()
            .map(|flag| ("slice".to_owned(), flag)),
    );
    for command in subcommands(&slice_help) {
        flags.extend(
            long_flags(&help_of(SLICE, &[command]))
                .into_iter()
                .map(|flag| (format!("slice {command}"), flag)),
        );
    }
    assert!(flags.len() >= 30, "too few flags found: {flags:?}");
    let mut missing: Vec<String> = flags
        .into_iter()
        .filter(|(_, flag)| !mentions(&readme, flag))
        .map(|(program, flag)| format!("{program} {flag}"))
        .collect();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "flags the README never mentions: {missing:?}"
    );
}

#[test]
fn the_readme_set_up_commands_are_the_ones_ci_and_the_daemon_test_run() {
    let readme = read("README.md");
    let block = first_fenced_block(section(&readme, "## Quick start"));
    let commands: Vec<&str> = block
        .iter()
        .map(|line| command_of(line))
        .filter(|command| !command.is_empty())
        .collect();
    let [start_daemon, run_tests] = commands[..] else {
        panic!("the README's quick start should be two commands, not {commands:?}");
    };

    // CI runs the README's test command, and it is the last thing it does.
    let ci = read(".ci/run");
    let ci_commands: Vec<&str> = ci
        .lines()
        .map(command_of)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    assert_eq!(
        ci_commands.last().copied(),
        Some(run_tests),
        ".ci/run must end by running the README's test command"
    );

    // The daemon command starts the `sliced` binary with no arguments: what
    // tests/it/daemon.rs's bare-sliced test starts, on the defaults the README states.
    assert_eq!(
        start_daemon, "cargo run --release --bin sliced",
        "the README's daemon command must start a bare sliced, as tests/it/daemon.rs does"
    );
    let daemon_test = read("tests/it/daemon.rs");
    let bare = daemon_test
        .split_once("fn a_bare_sliced_serves_on_the_defaults()")
        .map(|(_, body)| body.split("\n}\n").next().unwrap_or(body))
        .expect("tests/it/daemon.rs has a_bare_sliced_serves_on_the_defaults");
    let spawn = bare
        .split_once("Command::new(SLICED)")
        .and_then(|(_, rest)| rest.split_once(".spawn()"))
        .map(|(builder, _)| builder)
        .expect("the bare-sliced test spawns SLICED");
    assert!(
        !spawn.contains(".arg(") && !spawn.contains(".args("),
        "the bare-sliced test must start sliced without arguments, as the README does"
    );
    let comment = block
        .iter()
        .find(|line| command_of(line) == start_daemon)
        .and_then(|line| line.split_once(" #"))
        .map(|(_, comment)| comment)
        .expect("the daemon command says where it serves");
    let help = help_of(SLICED, &[]);
    for address in comment
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|word| word.parse::<std::net::SocketAddr>().is_ok())
    {
        assert!(
            help.contains(&format!("[default: {address}")),
            "the README says a bare sliced serves on {address}, sliced --help does not"
        );
    }
    assert!(
        bare.contains("\"127.0.0.1:9292\""),
        "the bare-sliced test checks the README's REST address"
    );
}

/// The default of `flag` as `sliced -h` states it (`[default: 0.0.0.0:6653, ...]`).
fn sliced_default(flag: &str) -> std::net::SocketAddr {
    let help = help_of(SLICED, &[]);
    // clap puts a flag's help beside it, or on the lines below it once some flag's help
    // is too long for the column: the flag's entry runs to the next flag.
    let mut lines = help
        .lines()
        .skip_while(|line| !line.trim_start().starts_with(&format!("{flag} ")));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("sliced -h has no {flag}"));
    let entry: String = std::iter::once(first)
        .chain(lines.take_while(|line| !line.trim_start().starts_with('-')))
        .collect::<Vec<_>>()
        .join(" ");
    let (_, default) = entry
        .split_once("[default: ")
        .unwrap_or_else(|| panic!("{entry:?} states no default"));
    let address = default.split([',', ']']).next().unwrap_or(default);
    address
        .parse()
        .unwrap_or_else(|err| panic!("{flag}'s default {address:?}: {err}"))
}

#[test]
fn the_mininet_command_and_script_point_at_sliced_defaults() {
    let openflow_port = sliced_default("--openflow").port();
    let http = sliced_default("--http");

    let readme = read("README.md");
    let block = first_fenced_block(section(&readme, "## Try it with Mininet"));
    let mn = block
        .iter()
        .map(|line| command_of(line))
        .find(|command| command.starts_with("sudo mn "))
        .expect("the Mininet section starts with an mn command line");
    for option in [
        "--mac",
        "--switch ovs,datapath=user,protocols=OpenFlow13",
        &format!("--controller remote,ip=127.0.0.1,port={openflow_port}"),
    ] {
        assert!(mn.contains(option), "{mn:?} lacks {option:?}");
    }

    let script = read("contrib/mininet/sliced_mininet.py");
    for default in [
        format!("default='127.0.0.1:{openflow_port}'"),
        format!("default='http://{http}'"),
    ] {
        assert!(
            script.contains(&default),
            "contrib/mininet/sliced_mininet.py lacks {default}: sliced's defaults moved"
        );
    }
}
