//! sliced under a service manager: systemd's readiness protocol (sd_notify), spoken to a
//! real datagram socket as systemd would listen on it, and the settings file the Debian
//! package installs.

use std::net::TcpStream;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use slice_etcd::test_server::LocalEtcd;

use crate::common::{agent, free_port, signal, status_json, wait_with_timeout, Daemon, SLICED};

/// Only a bound on a daemon that never reports, not a measured time.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(30);

fn next_message(socket: &UnixDatagram) -> String {
    let mut buffer = [0u8; 4096];
    let len = socket
        .recv(&mut buffer)
        .expect("sliced sends a notification before the timeout");
    String::from_utf8_lossy(&buffer[..len]).into_owned()
}

/// The daemon under test, killed if the test fails before stopping it: an orphan would
/// keep the test runner's output open.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn ready_reaches_systemd_once_every_listener_is_bound_and_stopping_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let notify_path = dir.path().join("notify");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify.set_read_timeout(Some(NOTIFY_TIMEOUT)).unwrap();
    let data_dir = dir.path().join("db");
    let (http, openflow) = (free_port(), free_port());
    let mut child = KillOnDrop(
        Command::new(SLICED)
            .arg("--db")
            .arg(&data_dir)
            .args(["--http", &http.to_string()])
            .args(["--openflow", &openflow.to_string()])
            .env("NOTIFY_SOCKET", &notify_path)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .spawn()
            .expect("sliced starts"),
    );

    let ready = next_message(&notify);
    assert!(
        ready.lines().any(|line| line == "READY=1"),
        "the first notification is READY=1: {ready:?}"
    );
    // At this moment, not after a retry loop: systemd starts dependent units now.
    let response = agent()
        .get(&format!("http://{http}/slices"))
        .call()
        .expect("the REST API answers once READY=1 is sent");
    assert_eq!(response.status(), 200);
    UnixStream::connect(data_dir.join("sliced.sock")).expect("the local socket answers");
    TcpStream::connect(openflow).expect("the OpenFlow listener accepts");
    assert!(
        Path::new(&data_dir.join("store")).is_dir(),
        "the store is open"
    );

    signal(child.0.id(), "TERM");
    let stopping = next_message(&notify);
    assert!(
        stopping.lines().any(|line| line == "STOPPING=1"),
        "SIGTERM is announced with STOPPING=1: {stopping:?}"
    );
    let status = wait_with_timeout(&mut child.0, NOTIFY_TIMEOUT).expect("sliced stops");
    assert!(status.success(), "sliced stopped cleanly: {status}");
}

/// The watchdog's time the test gives the daemon: it feeds every half of it.
const WATCHDOG: Duration = Duration::from_millis(400);

/// The `WATCHDOG=1` messages that arrive within `window` (or until a quiet stretch of
/// `quiet`, when that comes first), and the first other message, if one came.
fn feeds_within(
    socket: &UnixDatagram,
    window: Duration,
    quiet: Duration,
) -> (usize, Option<String>) {
    socket.set_read_timeout(Some(quiet)).unwrap();
    let started = std::time::Instant::now();
    let mut feeds = 0;
    while started.elapsed() < window {
        let mut buffer = [0u8; 4096];
        let Ok(len) = socket.recv(&mut buffer) else {
            break;
        };
        let message = String::from_utf8_lossy(&buffer[..len]).into_owned();
        if message.lines().any(|line| line == "WATCHDOG=1") {
            feeds += 1;
        } else {
            return (feeds, Some(message));
        }
    }
    (feeds, None)
}

/// `sliced` with `args`, watched as systemd would watch it: `NOTIFY_SOCKET` at `notify`,
/// a watchdog of [`WATCHDOG`], and `WATCHDOG_PID` naming it (a shell that execs keeps its
/// pid, which systemd names).
fn watched_sliced(notify: &Path, args: &[&str]) -> KillOnDrop {
    KillOnDrop(
        Command::new("sh")
            .arg("-c")
            .arg("WATCHDOG_PID=$$ exec \"$0\" \"$@\"")
            .arg(SLICED)
            .args(args)
            .env("NOTIFY_SOCKET", notify)
            .env("WATCHDOG_USEC", WATCHDOG.as_micros().to_string())
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .spawn()
            .expect("sliced starts"),
    )
}

/// Waits (at most [`NOTIFY_TIMEOUT`]) for a stretch of `quiet` without a message; false
/// when none came, the feeds going on. A message other than a feed fails the test.
fn falls_quiet_for(socket: &UnixDatagram, quiet: Duration) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < NOTIFY_TIMEOUT {
        match feeds_within(socket, quiet, quiet) {
            (0, None) => return true,
            (_, None) => {}
            (_, Some(other)) => panic!("sliced said {other:?} while not ready"),
        }
    }
    false
}

#[test]
fn the_watchdog_starves_while_the_store_is_unreachable_and_is_fed_again_once_it_is_back() {
    let mut etcd = LocalEtcd::start();
    let member = etcd.endpoint();
    let dir = tempfile::tempdir().unwrap();
    let notify_path = dir.path().join("notify");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify.set_read_timeout(Some(NOTIFY_TIMEOUT)).unwrap();
    let data_dir = dir.path().join("data");
    let (http, openflow) = (free_port(), free_port());
    let (http_arg, openflow_arg) = (http.to_string(), openflow.to_string());
    let mut child = watched_sliced(
        &notify_path,
        &[
            "--db",
            data_dir.to_str().unwrap(),
            "--http",
            &http_arg,
            "--openflow",
            &openflow_arg,
            "--etcd",
            &member,
            "--etcd-allow-plaintext",
        ],
    );
    let ready = next_message(&notify);
    assert!(ready.lines().any(|line| line == "READY=1"), "{ready:?}");
    let (feeds, other) = feeds_within(&notify, WATCHDOG * 5, NOTIFY_TIMEOUT);
    assert!(
        feeds >= 3 && other.is_none(),
        "{feeds} feeds, then {other:?}"
    );

    // Not ready, and nothing fatal: the store cannot reach etcd, and the daemon keeps
    // running, so only the starved watchdog has systemd restart it.
    etcd.stop();
    let readyz = || status_json(agent().get(&format!("http://{http}/readyz")).call()).0;
    let started = std::time::Instant::now();
    while readyz() != 503 && started.elapsed() < NOTIFY_TIMEOUT {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(readyz(), 503, "the store probe fails with etcd down");
    // Ten halves of the watchdog's time without a feed: a daemon that fed it would
    // have sent ten.
    assert!(
        falls_quiet_for(&notify, WATCHDOG * 5),
        "the watchdog is still fed with etcd down"
    );
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the daemon stopped: a store out of reach is not fatal"
    );
    assert_eq!(readyz(), 503);

    etcd.restart();
    let (feeds, other) = feeds_within(&notify, NOTIFY_TIMEOUT, NOTIFY_TIMEOUT);
    assert!(
        feeds >= 1 && other.is_none(),
        "{feeds} feeds, then {other:?}"
    );
    signal(child.0.id(), "TERM");
    let status = wait_with_timeout(&mut child.0, NOTIFY_TIMEOUT).expect("sliced stops");
    assert!(status.success(), "{status}");
}

#[test]
fn the_watchdog_is_fed_while_the_daemon_is_ready_and_a_store_that_fails_stops_it_with_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let notify_path = dir.path().join("notify");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify.set_read_timeout(Some(NOTIFY_TIMEOUT)).unwrap();
    let data_dir = dir.path().join("db");
    let (http, openflow) = (free_port().to_string(), free_port().to_string());
    let mut child = watched_sliced(
        &notify_path,
        &[
            "--db",
            data_dir.to_str().unwrap(),
            "--http",
            &http,
            "--openflow",
            &openflow,
        ],
    );
    let ready = next_message(&notify);
    assert!(ready.lines().any(|line| line == "READY=1"), "{ready:?}");
    let (feeds, other) = feeds_within(&notify, WATCHDOG * 5, NOTIFY_TIMEOUT);
    assert!(
        feeds >= 3 && other.is_none(),
        "{feeds} feeds, then {other:?}"
    );

    // The store takes no more writes (its log is gone): fatal, so the daemon stops by
    // itself (fail-stop, issue 34 row 5) rather than wait for the watchdog: the feeds
    // end, systemd hears STOPPING=1, and the process exits with status 1.
    std::fs::remove_file(data_dir.join("store/db")).unwrap();
    let (_, other) = feeds_within(&notify, NOTIFY_TIMEOUT, NOTIFY_TIMEOUT);
    let stopping = other.expect("sliced says it stops");
    assert!(
        stopping.lines().any(|line| line == "STOPPING=1"),
        "{stopping:?}"
    );
    let status = wait_with_timeout(&mut child.0, NOTIFY_TIMEOUT).expect("sliced stops");
    assert_eq!(status.code(), Some(1));
}

#[test]
fn the_shipped_settings_file_is_accepted_by_sliced() {
    let dir = tempfile::tempdir().unwrap();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/sliced.toml");
    let config = config.display().to_string();
    // The file's data directory and listeners are the system's; the helper's flags win.
    let daemon = Daemon::start_with(dir.path(), &["--config", &config]);
    let login = agent()
        .post(&daemon.url("/auth/developer/callback"))
        .send_form(&[("name", "Ada"), ("email", "ada@example.com")]);
    assert_eq!(
        status_json(login),
        (404, json!({"error": "not found"})),
        "the package's file turns the developer login off"
    );
}

/// The long flags `program -h` lists.
fn long_flags(program: &str) -> Vec<String> {
    let help = Command::new(program).arg("-h").output().unwrap();
    String::from_utf8(help.stdout)
        .unwrap()
        .split_whitespace()
        // The descriptions cite flags too, inside punctuation: "(with --etcd)".
        .map(|word| word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-'))
        .filter(|word| word.starts_with("--") && *word != "--help" && *word != "--version")
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_rendered_man_pages_and_completions_name_every_flag() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(SLICED)
        .arg("--write-manuals")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    for (program, name) in [(SLICED, "sliced"), (crate::common::SLICE, "slice")] {
        let page = std::fs::read_to_string(dir.path().join(format!("man/{name}.1"))).unwrap();
        let bash =
            std::fs::read_to_string(dir.path().join(format!("completions/{name}.bash"))).unwrap();
        let flags = long_flags(program);
        assert!(!flags.is_empty(), "{name} -h lists flags");
        for flag in flags {
            // roff escapes each hyphen of an option.
            let in_roff = flag.replace('-', "\\-");
            assert!(page.contains(&in_roff), "{name}.1 lacks {flag}");
            // slice's script asks slice itself for every completion: it lists no flag.
            if name == "slice" {
                assert!(bash.contains("COMPLETE=\"bash\""), "{bash}");
            } else {
                assert!(bash.contains(&flag), "{name}.bash lacks {flag}");
            }
        }
    }
    for file in [
        "completions/_sliced",
        "completions/slice.fish",
        "man/slice-add_port.1",
    ] {
        assert!(dir.path().join(file).is_file(), "{file} was written");
    }
}
