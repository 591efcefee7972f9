//! `GET /openapi.json` on the real daemon, and Schemathesis (PyPI `schemathesis`) run
//! against it with that document: examples, coverage, fuzzing and stateful (link-based)
//! sequences, every check. The document's agreement with the registered routes is tested
//! in slice-http (`openapi::tests`); here, what the daemon serves beyond the application.

use std::process::Command;

use crate::common::{agent, Daemon};

/// The Schemathesis release `.ci/run` installs; the flags below are its.
const SCHEMATHESIS_VERSION: &str = "4.32.5";

/// Test cases per operation and phase: enough for every operation's answers and the
/// stateful sequences, few enough for a debug build on two shared cores.
const EXAMPLES_PER_OPERATION: &str = "30";

/// A fixed seed, so that a failure in CI is the one a developer reproduces; to explore
/// further, run with SLICED_SCHEMATHESIS_SEED set to another number.
const DEFAULT_SEED: &str = "1";

/// Paths that the daemon may serve outside the slice-http application (in the binary),
/// each of which must be in the document once the daemon answers it.
const KNOWN_PATHS: &[&str] = &["/metrics"];

#[test]
fn the_daemon_serves_its_document_and_nothing_undocumented() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let document = daemon.get_json("/openapi.json");
    assert_eq!(document["openapi"], "3.1.0");
    let paths = document["paths"].as_object().expect("paths");
    for (path, item) in paths {
        if item.get("get").is_none() || path.contains('{') {
            continue;
        }
        // The status only: /events answers a stream that does not end.
        let status = status_of(agent().get(&daemon.url(path)).call());
        assert_ne!(status, 404, "GET {path} is documented but not found");
        assert_ne!(status, 405, "GET {path} is documented but not allowed");
    }
    for path in KNOWN_PATHS {
        let status = status_of(agent().get(&daemon.url(path)).call());
        if status != 404 {
            assert!(
                paths.contains_key(*path),
                "GET {path} answers {status} but the document does not describe it"
            );
        }
    }
}

fn status_of(result: Result<ureq::Response, ureq::Error>) -> u16 {
    match result {
        Ok(response) => response.status(),
        Err(ureq::Error::Status(status, _)) => status,
        Err(other) => panic!("request failed: {other}"),
    }
}

/// The whole API with Schemathesis: 0 failures. Each operation's answers must be the
/// documented statuses, bodies and headers; schema-valid requests accepted and invalid
/// ones refused; a created resource found through the document's links, and a deleted
/// one gone. The configuration (tests/it/schemathesis.toml) logs in for the /api/ twins.
#[test]
fn schemathesis_finds_nothing_wrong_with_the_live_daemon() {
    run_schemathesis(&[], EXAMPLES_PER_OPERATION);
}

/// With `--require-auth` the document puts the unprefixed endpoints behind the session
/// guard too; fewer cases, since the operations are the same.
#[test]
fn schemathesis_finds_nothing_wrong_with_a_daemon_that_requires_a_session() {
    run_schemathesis(&["--require-auth"], "10");
}

fn run_schemathesis(daemon_args: &[&str], examples: &str) {
    let Some(schemathesis) = schemathesis() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(&dir.path().join("db"), daemon_args);
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/schemathesis.toml");
    let seed = std::env::var("SLICED_SCHEMATHESIS_SEED").unwrap_or_else(|_| DEFAULT_SEED.into());
    let output = Command::new(schemathesis)
        .arg("--config-file")
        .arg(config)
        .arg("--no-color")
        .arg("run")
        .arg(daemon.url("/openapi.json"))
        .arg("--phases=examples,coverage,fuzzing,stateful")
        // Every check runs by default; naming them with --checks would also override the
        // configuration's exemption of one check on the DELETEs (see the file).
        .args(["--max-examples", examples])
        .args(["--seed", &seed])
        // One worker: the daemon is not what is being load-tested here, and Hypothesis's
        // threads have tripped over each other on this release.
        .args(["--workers", "1"])
        // Hypothesis keeps its example database in the working directory.
        .current_dir(dir.path())
        .output()
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "schemathesis (sliced {daemon_args:?}, seed {seed}) failed: {}\n{stdout}\n{stderr}",
        output.status
    );
    // The stateful phase must have run sequences, not been skipped for want of links.
    assert!(stdout.contains("✅ Stateful"), "{stdout}");
}

/// The `schemathesis` command of the pinned release, or None outside CI when it is not
/// installed (in CI a missing tool fails the test).
fn schemathesis() -> Option<&'static str> {
    let version = Command::new("schemathesis").arg("--version").output();
    let found = match &version {
        Ok(output) if output.status.success() => String::from_utf8_lossy(&output.stdout)
            .trim()
            .ends_with(SCHEMATHESIS_VERSION),
        _ => false,
    };
    if found {
        return Some("schemathesis");
    }
    let message = format!(
        "schemathesis {SCHEMATHESIS_VERSION} is not installed (PyPI package schemathesis: \
         python3 -m pip install schemathesis=={SCHEMATHESIS_VERSION}; .ci/run installs it)"
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
    eprintln!("SCHEMATHESIS TEST NOT RUN: {message}");
    None
}
