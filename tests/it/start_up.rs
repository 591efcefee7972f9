//! Black-box tests of how `sliced` starts, or refuses to, as an operator meets it in the
//! first hour: what a start makes on disk, what a failed start leaves (nothing of its
//! own), and what its messages say.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::{free_port, wait_with_timeout, SLICED};

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

/// `sliced` with `args`, run to its end (a start that fails, or `-d` that returns); one
/// that serves instead is killed and fails the test.
fn run(args: &[&str]) -> Output {
    run_logging(args, None)
}

/// [`run`] with `RUST_LOG` set to `rust_log`, or unset.
fn run_logging(args: &[&str], rust_log: Option<&str>) -> Output {
    let mut command = Command::new(SLICED);
    match rust_log {
        Some(filter) => command.env("RUST_LOG", filter),
        None => command.env_remove("RUST_LOG"),
    };
    let mut child = command
        .args(args)
        .env_remove("SLICED_DB")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sliced runs");
    if wait_with_timeout(&mut child, Duration::from_secs(60)).is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("sliced {args:?} did not return");
    }
    // Read after the exit: what a start writes is far below a pipe's buffer.
    child.wait_with_output().expect("sliced's output")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A start on `db` whose HTTP port is taken, so that it fails once it made its files.
fn start_on_a_taken_port(db: &Path, extra: &[&str]) -> Output {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let http = taken.local_addr().unwrap().to_string();
    let openflow = free_port().to_string();
    let mut args = vec![
        "--db",
        path_str(db),
        "--http",
        &http,
        "--openflow",
        &openflow,
    ];
    args.extend_from_slice(extra);
    let output = run(&args);
    assert!(!output.status.success(), "{output:?}");
    assert!(
        stderr(&output).contains("cannot listen for HTTP"),
        "{}",
        stderr(&output)
    );
    output
}

/// Issue 35, item 8: `--db` is made as mkdir makes a directory, one level; a missing
/// parent is refused, in the foreground and with `-d`, and nothing is made.
#[test]
fn a_data_directory_whose_parent_is_missing_is_refused_and_nothing_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("no/such/db");
    for extra in [&[][..], &["-d"][..]] {
        let http = free_port().to_string();
        let mut args = vec!["--db", path_str(&deep), "--http", &http];
        args.extend_from_slice(extra);
        let output = run(&args);
        assert!(!output.status.success(), "{extra:?}: {output:?}");
        let message = stderr(&output);
        let parent = deep.parent().unwrap().display().to_string();
        assert!(
            message.contains(&format!("its parent {parent} does not exist")),
            "{message}"
        );
        assert!(message.contains(&format!("mkdir -p {parent}")), "{message}");
        assert!(names_in(dir.path()).is_empty(), "{extra:?} made nothing");
    }
}

/// Issue 35, item 8: a start that fails takes away the data directory, session key,
/// database and log it made, in the foreground and in the background; `-d` shows why
/// the daemon failed where it was run, since the log it made is gone.
#[test]
fn a_failed_start_takes_away_the_data_directory_it_made() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    start_on_a_taken_port(&db, &[]);
    assert!(!db.exists(), "left {:?}", names_in(&db));
    start_on_a_taken_port(&db, &["-d"]);
    assert!(!db.exists(), "-d left {:?}", names_in(&db));
    assert!(names_in(dir.path()).is_empty());
}

/// Issue 35, item 8: the per-user default is made with its parents, and a failed start
/// takes those away too.
#[test]
fn a_failed_start_on_the_default_directory_takes_away_its_parents() {
    let home = tempfile::tempdir().unwrap();
    let xdg = home.path().join("xdg/share");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let http = taken.local_addr().unwrap().to_string();
    let openflow = free_port().to_string();
    let mut child = Command::new(SLICED)
        .args(["--http", &http, "--openflow", &openflow])
        .env_remove("SLICED_DB")
        .env("XDG_DATA_HOME", &xdg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_with_timeout(&mut child, Duration::from_secs(60));
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    assert!(status.is_some_and(|status| !status.success()), "{output:?}");
    assert!(
        stderr(&output).contains("cannot listen for HTTP"),
        "{output:?}"
    );
    assert!(
        names_in(home.path()).is_empty(),
        "{:?}",
        names_in(home.path())
    );
}

/// Issue 35, item 8: in a data directory that existed, a failed start removes the
/// session key and database it made, and keeps every file that was there before it.
#[test]
fn a_failed_start_in_an_existing_directory_keeps_what_was_there() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    std::fs::create_dir(&db).unwrap();
    std::fs::write(db.join("notes.txt"), "mine").unwrap();
    start_on_a_taken_port(&db, &[]);
    assert_eq!(names_in(&db), ["notes.txt"]);
    start_on_a_taken_port(&db, &["-d"]);
    assert_eq!(names_in(&db), ["notes.txt"], "-d took its log away too");

    // A data directory a daemon has served keeps its key and database byte for byte.
    let served = crate::common::Daemon::start(&db);
    assert!(served.terminate().success());
    let key = std::fs::read(db.join("session.key")).unwrap();
    let before = names_in(&db);
    start_on_a_taken_port(&db, &[]);
    start_on_a_taken_port(&db, &["-d"]);
    assert_eq!(names_in(&db), before);
    assert_eq!(std::fs::read(db.join("session.key")).unwrap(), key);
}

/// `sliced --check-config` with `args`.
fn check_config(args: &[&str]) -> Output {
    let mut all = vec!["--check-config"];
    all.extend_from_slice(args);
    run(&all)
}

/// Issue 35, item 13: valid settings print one line and exit 0, without making the data
/// directory, opening the database or binding a port: the check passes beside a daemon
/// that holds the database and the very ports named.
#[test]
fn check_config_passes_valid_settings_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let http = taken.local_addr().unwrap().to_string();
    let output = check_config(&["--db", path_str(&fresh), "--http", &http]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains("are valid"), "{stdout}");
    assert!(stderr(&output).is_empty(), "{}", stderr(&output));
    assert!(!fresh.exists(), "the check made the data directory");

    let served = dir.path().join("served");
    let daemon = crate::common::Daemon::start(&served);
    let config = dir.path().join("sliced.toml");
    std::fs::write(
        &config,
        format!(
            "db = \"{}\"\nhttp = \"{}\"\nopenflow = \"{}\"\n",
            served.display(),
            daemon.http,
            daemon.openflow
        ),
    )
    .unwrap();
    let before = names_in(&served);
    let output = check_config(&["--config", path_str(&config)]);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("sliced.toml are valid"));
    assert_eq!(names_in(&served), before);
    let (status, _) =
        crate::common::status_json(crate::common::agent().get(&daemon.url("/slices")).call());
    assert_eq!(status, 200, "the daemon serves on");
}

/// Issue 35, item 13: every problem of the settings' files is listed, not only the
/// first: a missing parent of the data directory, a missing certificate and LLDP secret.
#[test]
fn check_config_lists_every_problem_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let missing = |name: &str| path_str(&dir.path().join(name)).to_owned();
    let (deep, cert, key, ca, lldp) = (
        missing("no/db"),
        missing("cert.pem"),
        missing("key.pem"),
        missing("ca.pem"),
        missing("lldp.key"),
    );
    let output = check_config(&[
        "--db",
        &deep,
        "--openflow-tls",
        "127.0.0.1:6653",
        "--openflow-cert",
        &cert,
        "--openflow-key",
        &key,
        "--openflow-ca",
        &ca,
        "--lldp-secret-file",
        &lldp,
    ]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(output.stdout.is_empty());
    let message = stderr(&output);
    assert!(message.contains("3 problems"), "{message}");
    for named in ["no/db", "cert.pem", "lldp.key"] {
        assert!(message.contains(named), "{named}: {message}");
    }
    assert!(names_in(dir.path()).is_empty());
}

/// The stderr of a start on a taken HTTP port, with `RUST_LOG` as given.
fn failed_start_log(rust_log: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let http = taken.local_addr().unwrap().to_string();
    let openflow = free_port().to_string();
    let db = dir.path().join("db");
    let mut args = vec![
        "--db",
        path_str(&db),
        "--http",
        &http,
        "--openflow",
        &openflow,
    ];
    args.extend_from_slice(extra);
    let output = run_logging(&args, Some(rust_log));
    assert!(!output.status.success());
    stderr(&output)
}

/// Issue 35, item 13: `--log-level` sets the level and wins over RUST_LOG, saying so;
/// without it RUST_LOG still rules.
#[test]
fn log_level_sets_the_level_and_wins_over_rust_log() {
    let quiet = failed_start_log("debug", &["--log-level", "warn"]);
    assert!(!quiet.contains(" INFO "), "{quiet}");
    assert!(quiet.contains("RUST_LOG is ignored"), "{quiet}");
    assert!(quiet.contains("cannot listen for HTTP"), "{quiet}");
    let loud = failed_start_log("error", &["--log-level", "debug"]);
    assert!(loud.contains(" INFO "), "{loud}");
    let by_env = failed_start_log("error", &[]);
    assert!(
        !by_env.contains(" INFO ") && !by_env.contains(" WARN "),
        "{by_env}"
    );
}

/// Issue 35, item 14: a bare port is answered with the HOST:PORT it probably meant, for
/// the API and for OpenFlow, each naming its flag.
#[test]
fn a_bare_port_is_answered_with_host_port() {
    for (flag, setting) in [("--http", "(--http,"), ("--openflow", "(--openflow,")] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let output = run(&["--db", path_str(&db), flag, "9299"]);
        assert!(!output.status.success());
        let message = stderr(&output);
        assert!(message.contains("is not HOST:PORT"), "{message}");
        assert!(message.contains("127.0.0.1:9299"), "{message}");
        assert!(message.contains(setting), "{message}");
        assert!(!db.exists());
    }
}

/// Issue 35, item 14: an address in use names the flag (and the settings key) that
/// moves the listener, for each of the three TCP listeners.
#[test]
fn an_address_in_use_names_the_setting_to_change() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (flag, listener) in [
        ("--http", "HTTP"),
        ("--openflow", "OpenFlow"),
        ("--metrics", "metrics"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let (http, openflow) = (free_port().to_string(), free_port().to_string());
        let mut args = vec!["--db", path_str(&db)];
        for (other, free) in [("--http", &http), ("--openflow", &openflow)] {
            if other != flag {
                args.extend([other, free.as_str()]);
            }
        }
        args.extend([flag, taken.as_str()]);
        let output = run(&args);
        assert!(!output.status.success());
        let message = stderr(&output);
        assert!(
            message.contains(&format!("cannot listen for {listener} on {taken}")),
            "{message}"
        );
        assert!(
            message.contains(&format!("choose another address with {flag}, or ")),
            "{message}"
        );
        assert!(!db.exists(), "{flag}");
    }
}

/// Issue 35, item 14: a key in the wrong table of the settings file is sent to its own
/// table, and a missing key names the table that needs it.
#[test]
fn a_misplaced_or_missing_key_names_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sliced.toml");
    let db = dir.path().join("db");
    for (text, hint) in [
        (
            "max_ports_per_switch = 8\n",
            "max_ports_per_switch is not a key of the top level (before any [table]): it \
             belongs in [controller]",
        ),
        (
            "[controller]\nhttp = \"127.0.0.1:9292\"\n",
            "http is not a key of [controller]: it belongs in the top level",
        ),
        (
            "[auth.proxy]\nuser_header = \"X-User\"\n",
            "[auth.proxy] needs the key trusted",
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        for check in [&["--check-config"][..], &[][..]] {
            let mut args = vec!["--config", path_str(&config), "--db", path_str(&db)];
            args.extend_from_slice(check);
            let output = run(&args);
            assert!(!output.status.success());
            let message = stderr(&output);
            assert!(message.contains(hint), "{text}: {message}");
        }
    }
}

/// The verification report's list limit is bounded alike from the flag and the file:
/// 0 and more than 100,000 are refused with the key's name.
#[test]
fn a_verification_list_limit_out_of_range_is_refused_from_the_flag_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    for value in ["0", "100001"] {
        let output = check_config(&["--verification-list-limit", value]);
        assert!(!output.status.success(), "{output:?}");
        assert!(
            stderr(&output).contains("--verification-list-limit"),
            "{}",
            stderr(&output)
        );
        let config = dir.path().join("sliced.toml");
        let text = format!("[controller]\nverification_list_limit = {value}\n");
        std::fs::write(&config, text).unwrap();
        let output = check_config(&["--config", path_str(&config)]);
        assert!(!output.status.success(), "{output:?}");
        assert!(
            stderr(&output)
                .contains("controller.verification_list_limit must be between 1 and 100000"),
            "{}",
            stderr(&output)
        );
    }
    let output = check_config(&["--verification-list-limit", "100000"]);
    assert!(output.status.success(), "{output:?}");
}
