//! Black-box tests of how an operator runs `sliced`: in the background with a pid file,
//! stopped by signals, configured by a file, on its defaults, and never twice on one
//! database.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{agent, free_port, signal, status_json, wait_with_timeout, Daemon, SLICED};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

fn process_is_alive(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn wait_for(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn slice_names(http: SocketAddr) -> serde_json::Value {
    let (status, body) = status_json(agent().get(&format!("http://{http}/slices")).call());
    assert_eq!(status, 200);
    body
}

fn create_slice(http: SocketAddr, name: &str) {
    let (status, body) = status_json(
        agent()
            .post(&format!("http://{http}/slices"))
            .send_json(json!({ "name": name })),
    );
    assert_eq!(status, 201, "{body}");
}

fn sliced(args: &[&str]) -> Command {
    let mut command = Command::new(SLICED);
    command
        .args(args)
        .env_remove("SLICED_DB")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null());
    command
}

/// `sliced` on data directory `db` and HTTP address `http`, OpenFlow on a free port,
/// then `extra`.
fn sliced_on(db: &Path, http: SocketAddr, extra: &[&str]) -> Command {
    let mut command = sliced(&[
        "--db",
        path_str(db),
        "--http",
        &http.to_string(),
        "--openflow",
        &free_port().to_string(),
    ]);
    command.args(extra);
    command
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

#[test]
fn background_mode_returns_once_serving_and_sigterm_stops_it_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let pid_file = dir.path().join("sliced.pid");
    let http = free_port();
    let output = sliced_on(&data, http, &["-d", "--pid-file", path_str(&pid_file)])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");

    // It printed the pid it wrote, and serves at once: no polling needed.
    let printed: u32 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap();
    let written: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(printed, written);
    assert!(process_is_alive(written));
    create_slice(http, "blue");
    assert!(data.join("sliced.sock").exists());

    signal(written, "TERM");
    assert!(
        wait_for(|| !process_is_alive(written)),
        "the daemon exits on SIGTERM"
    );
    assert!(!pid_file.exists(), "the pid file is removed on exit");
    assert!(!data.join("sliced.sock").exists(), "so is the socket");
    assert_eq!(
        mode_of(&data.join("sliced.log")),
        0o600,
        "the log went to the data directory, owner-only"
    );

    let daemon = Daemon::start(&data);
    assert_eq!(slice_names(daemon.http), json!([{"name": "blue"}]));
}

/// Issue 35, item 1: a second background start while one runs is refused before it
/// starts anything, and the running daemon's pid file stays; a stale one is no obstacle.
#[test]
fn a_second_background_start_is_refused_and_leaves_the_running_daemons_pid_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let pid_file = dir.path().join("sliced.pid");
    let http = free_port();
    let first = sliced_on(&data, http, &["-d", "--pid-file", path_str(&pid_file)])
        .output()
        .unwrap();
    assert!(first.status.success(), "{first:?}");
    let written = std::fs::read_to_string(&pid_file).unwrap();
    let pid: u32 = written.trim().parse().unwrap();

    let second = sliced_on(
        &data,
        free_port(),
        &["-d", "--pid-file", path_str(&pid_file)],
    )
    .output()
    .unwrap();
    assert_eq!(second.status.code(), Some(1), "{second:?}");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(&format!("sliced is already running (pid {pid}")),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&pid_file).unwrap(), written);
    assert!(process_is_alive(pid));
    create_slice(http, "still-served");

    signal(pid, "TERM");
    assert!(wait_for(|| !process_is_alive(pid)));
    // A pid file a crash left behind, naming no sliced, does not stop a start.
    std::fs::write(&pid_file, format!("{}\n", std::process::id())).unwrap();
    let again = sliced_on(
        &data,
        free_port(),
        &["-d", "--pid-file", path_str(&pid_file)],
    )
    .output()
    .unwrap();
    assert!(again.status.success(), "{again:?}");
    let restarted: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    signal(restarted, "TERM");
    assert!(wait_for(|| !process_is_alive(restarted)));
}

/// A failed background start shows the daemon's reason where it was run; a log file that
/// was there before keeps it too (one this start made goes: start_up::).
#[test]
fn background_mode_reports_why_a_start_failed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sliced.log");
    std::fs::write(&log, "earlier\n").unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let output = sliced_on(dir.path(), taken.local_addr().unwrap(), &["-d"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot listen for HTTP"), "{stderr}");
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.starts_with("earlier\n"), "{log}");
    assert!(log.contains("cannot listen for HTTP"), "{log}");
}

#[test]
fn sigint_stops_the_foreground_daemon_cleanly_and_keeps_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    create_slice(daemon.http, "red");
    let mut child = daemon.into_child();
    signal(child.id(), "INT");
    let status = wait_with_timeout(&mut child, WAIT).expect("sliced stops on SIGINT");
    assert!(status.success(), "{status}");
    assert!(!dir.path().join("sliced.sock").exists());

    let daemon = Daemon::start(dir.path());
    assert_eq!(slice_names(daemon.http), json!([{"name": "red"}]));
}

#[test]
fn a_config_file_sets_the_database_and_addresses_and_flags_win_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("from-file");
    let (file_http, flag_http) = (free_port(), free_port());
    let config = dir.path().join("sliced.toml");
    std::fs::write(
        &config,
        format!(
            "db = {:?}\nhttp = \"{file_http}\"\nopenflow = \"{}\"\n\n[controller]\nidle_timeout = 30\nlldp_interval_ms = 250\n",
            path_str(&data),
            free_port()
        ),
    )
    .unwrap();

    let mut child = sliced(&["--config", path_str(&config)]).spawn().unwrap();
    assert!(wait_for(|| TcpStream::connect(file_http).is_ok()));
    create_slice(file_http, "from-file");
    signal(child.id(), "TERM");
    assert!(wait_with_timeout(&mut child, WAIT).unwrap().success());
    assert!(
        data.join("store").is_dir(),
        "the database is where the file says"
    );

    let mut child = sliced(&[
        "--config",
        path_str(&config),
        "--http",
        &flag_http.to_string(),
    ])
    .spawn()
    .unwrap();
    assert!(wait_for(|| TcpStream::connect(flag_http).is_ok()));
    assert_eq!(slice_names(flag_http), json!([{"name": "from-file"}]));
    assert!(
        TcpStream::connect(file_http).is_err(),
        "the flag replaced the file's address"
    );
    signal(child.id(), "TERM");
    assert!(wait_with_timeout(&mut child, WAIT).unwrap().success());
}

#[test]
fn a_bad_config_file_is_refused_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sliced.toml");
    std::fs::write(&config, "htp = \"127.0.0.1:1\"\n").unwrap();
    let output = sliced(&["--config", path_str(&config)]).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("sliced.toml"), "names the file: {stderr}");
    assert!(stderr.contains("htp"), "names the key: {stderr}");

    let missing = dir.path().join("nowhere.toml");
    let output = sliced(&["--config", path_str(&missing)]).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("nowhere.toml"));
}

#[test]
fn a_second_daemon_on_one_database_is_refused_and_the_first_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let first = Daemon::start(dir.path());
    create_slice(first.http, "kept");
    let output = sliced_on(dir.path(), free_port(), &[]).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "another sliced already runs on {}",
            dir.path().display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("(pid {}, sliced)", first.pid())),
        "{stderr}"
    );
    assert!(
        dir.path().join("sliced.sock").exists(),
        "the first one's socket stays"
    );
    assert_eq!(slice_names(first.http), json!([{"name": "kept"}]));
}

/// The README's first set-up command: a bare `sliced` serves on its documented defaults,
/// with its data in the per-user data directory.
#[test]
fn a_bare_sliced_serves_on_the_defaults() {
    let home = tempfile::tempdir().unwrap();
    let default_http: SocketAddr = "127.0.0.1:9292".parse().unwrap();
    assert!(
        TcpStream::connect(default_http).is_err(),
        "something already listens on {default_http}; stop it to run this test"
    );
    let mut child = Command::new(SLICED)
        .env_remove("SLICED_DB")
        .env("XDG_DATA_HOME", home.path().join("xdg"))
        .env("HOME", home.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let up = wait_for(|| TcpStream::connect(default_http).is_ok());
    let listing = up.then(|| slice_names(default_http));
    signal(child.id(), "TERM");
    let status = wait_with_timeout(&mut child, WAIT);
    assert!(up, "sliced serves on {default_http}");
    assert_eq!(listing, Some(json!([])));
    assert!(status.is_some_and(|s| s.success()));
    assert!(home.path().join("xdg/sliced/store").is_dir());
}

/// A `slice` command holds the database for a moment; a sliced starting then waits it
/// out rather than take it for another daemon. The holder here is this test process,
/// which has the database open before sliced starts and lets go after a fixed 300 ms.
#[test]
fn a_database_held_for_a_moment_is_waited_for_at_start() {
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let holder = slice_store::Store::open(&dir.path().join("store")).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(holder);
        });
        let daemon = Daemon::start(dir.path());
        create_slice(daemon.http, "after-the-wait");
        release.join().unwrap();
    }
}

/// Past the wait, a database held by something that is not a daemon is reported as
/// such, with the holder's pid, and never as "another sliced".
#[test]
fn a_database_held_by_a_process_that_is_no_daemon_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let _holder = slice_store::Store::open(&dir.path().join("store")).unwrap();
    let output = sliced_on(dir.path(), free_port(), &[]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("another sliced"), "{stderr}");
    let store = dir.path().join("store");
    assert!(
        stderr.contains(&format!(
            "the database {} is held by another process (pid {}",
            store.display(),
            std::process::id()
        )),
        "{stderr}"
    );
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A data directory and database that others can read, as an earlier release left them,
/// are owner-only once sliced has started on them.
#[test]
fn sliced_makes_an_existing_data_dir_and_database_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = data.join("store");
    drop(slice_store::Store::open(&store).unwrap());
    let chmod = |path: &Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    chmod(&data, 0o755);
    chmod(&store, 0o755);
    chmod(&store.join("db"), 0o644);
    chmod(&store.join("conf"), 0o644);
    let daemon = Daemon::start(&data);
    assert_eq!(mode_of(&data), 0o700);
    assert_eq!(mode_of(&store), 0o700);
    assert_eq!(mode_of(&store.join("db")), 0o600);
    assert_eq!(mode_of(&store.join("conf")), 0o600);
    // An answer first: the server installs its signal handlers once it runs, a moment
    // after its sockets accept connections.
    assert_eq!(slice_names(daemon.http), json!([]));
    let status = daemon.terminate();
    assert!(status.success(), "{status}");
}

/// sliced refuses a database whose start was overwritten, naming it, rather than serve
/// it as empty, and leaves every byte as it found it.
#[test]
fn sliced_refuses_a_damaged_database_and_leaves_it_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let status = crate::common::slice(dir.path(), &["add", "blue"]).status;
    assert!(status.success());
    let damaged = crate::common::damage_start_of_log(dir.path());
    let mut child = sliced_on(dir.path(), free_port(), &[])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_with_timeout(&mut child, WAIT);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("sliced serves a damaged database");
    }
    assert_eq!(status.and_then(|s| s.code()), Some(1));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let expected = format!(
        "sliced: the database {} is corrupt: ",
        dir.path().join("store").display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(
        crate::common::files_with_bytes(dir.path()) == damaged,
        "the damaged database was rewritten"
    );
}

/// A small tmpfs of our own, unmounted on drop: a disk that really fills up.
struct SmallDisk {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl SmallDisk {
    /// Mounts a tmpfs of `size` (mount(8)'s syntax), or None when this process may not
    /// mount: only root can. In CI (`CI=true`, as root) that is a failure, as it is for
    /// the end-to-end lab; elsewhere the test says loudly that it did not run.
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("disk");
        std::fs::create_dir(&path).unwrap();
        let mounted = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(&path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !mounted {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "cannot mount a tmpfs: CI must run this test as root"
            );
            eprintln!("FULL-DISK TEST NOT RUN: mounting a tmpfs needs root");
            return None;
        }
        Some(Self { path, _dir: dir })
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

/// The access log (target `sliced::http`), chosen when the servers are built, writes a
/// line per request, refusals by the front door included, when its target is on, and
/// nothing when it is off, as it is by default.
#[test]
fn the_access_log_writes_a_line_per_request_only_when_its_target_is_on() {
    for (filter, on) in [
        ("info,sliced::http=warn", false),
        ("warn,sliced::http=info", true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sliced.log");
        let daemon = Daemon::start_filtered(&dir.path().join("db"), filter, &log);
        let agent = agent();
        assert_eq!(
            status_json(agent.get(&daemon.url("/slices?x=1")).call()).0,
            200
        );
        assert_eq!(
            status_json(agent.get(&daemon.url("/nothing")).call()).0,
            404
        );
        let foreign = agent
            .get(&daemon.url("/slices"))
            .set("Host", "evil.example");
        assert_eq!(status_json(foreign.call()).0, 403);
        // A long target costs the log a capped line, whoever sends it.
        let long = format!("/nothing?{}", "a".repeat(60_000));
        assert_eq!(status_json(agent.get(&daemon.url(&long)).call()).0, 404);
        // The Logger writes a line once the answer's body is gone, which on a keep-alive
        // connection is before the next request is read: one more answer makes sure.
        assert_eq!(status_json(agent.get(&daemon.url("/slices")).call()).0, 200);
        let written = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = written
            .lines()
            .filter(|line| line.contains("sliced::http"))
            .collect();
        if !on {
            assert!(lines.is_empty(), "{filter}: {written}");
            continue;
        }
        assert!(lines.len() >= 3, "{filter}: {written}");
        let expected = [
            r#"] 127.0.0.1 "GET /slices?x=1 HTTP/1.1" 200 2 "#,
            r#"] 127.0.0.1 "GET /nothing HTTP/1.1" 404 "#,
            r#"] 127.0.0.1 "GET /slices HTTP/1.1" 403 "#,
        ];
        for (line, expected) in lines.iter().zip(expected) {
            assert!(line.contains(expected), "{line:?} has no {expected:?}");
            assert!(line.ends_with("ms"), "{line:?} gives no time");
        }
        let capped = lines
            .iter()
            .find(|line| line.contains("GET /nothing?aaa"))
            .expect("the long request's line");
        assert!(
            capped.len() < 400 && capped.contains("... HTTP/1.1\" 404 "),
            "{capped:?}"
        );
    }
}

/// A disk that fills up makes a flush fail: the write that needed it is not acknowledged,
/// the daemon stops with a clear line and status 1 instead of serving what is not on
/// disk, and every write it acknowledged before is there when the disk has room again.
#[test]
fn a_full_disk_stops_the_daemon_and_keeps_every_acknowledged_write() {
    let Some(disk) = SmallDisk::mount("512k") else {
        return;
    };
    let db = disk.path.join("db");
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("sliced.log");
    let mut daemon = Daemon::start_logged(&db, &[], true, &log);

    let mut acknowledged = Vec::new();
    let refused = loop {
        let name = format!("slice-{:05}-{}", acknowledged.len(), "x".repeat(40));
        let (status, body) = status_json(
            agent()
                .post(&daemon.url("/slices"))
                .send_json(json!({ "name": name })),
        );
        if status != 201 {
            assert_eq!(status, 503, "{body}");
            break body;
        }
        acknowledged.push(name);
        assert!(
            acknowledged.len() < 100_000,
            "a 512 KiB disk never filled up"
        );
    };
    assert!(
        !acknowledged.is_empty(),
        "the first write failed: {refused}"
    );

    let status = daemon.exit_within(WAIT).expect("sliced stops by itself");
    assert_eq!(status.code(), Some(1));
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("the database could not be flushed")
            && log.contains("stopping to avoid serving state that is not on disk"),
        "{log}"
    );

    disk.resize("64m");
    let listed = crate::common::slice(&db, &["list"]);
    assert!(listed.status.success(), "{listed:?}");
    let listed = String::from_utf8(listed.stdout).unwrap();
    let listed: Vec<&str> = listed.lines().collect();
    // The refused write may or may not have reached the disk; every acknowledged one did.
    assert!(
        listed.len() >= acknowledged.len() && listed[..acknowledged.len()] == acknowledged[..],
        "{} acknowledged, {} listed",
        acknowledged.len(),
        listed.len()
    );
}

/// sled's log file removed, or moved away, under a running daemon: an fsync of a file no
/// longer linked still succeeds, so writes were acknowledged (201, `slice add` exit 0)
/// that no restart found, while `/readyz` already said the store took no more changes.
/// Now each commit checks that the file it synced is the one at its path: the write is a
/// 503, the store takes no more (fail-stop), the daemon stops with status 1, and the tool
/// fails too. Moved back, the log holds every acknowledged write and not the refused one;
/// removed, the database is reported as corrupt rather than opened empty.
#[test]
fn a_write_after_the_log_file_was_removed_is_refused_and_the_daemon_stops() {
    for moved in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let log = dir.path().join("sliced.log");
        let mut daemon = Daemon::start_logged(&db, &[], true, &log);
        create_slice(daemon.http, "kept");
        let store_log = db.join("store").join("db");
        let away = dir.path().join("db.away");
        if moved {
            std::fs::rename(&store_log, &away).unwrap();
        } else {
            std::fs::remove_file(&store_log).unwrap();
        }
        let (status, body) = status_json(
            agent()
                .post(&daemon.url("/slices"))
                .send_json(json!({ "name": "lost" })),
        );
        assert_eq!(status, 503, "moved {moved}: {body}");
        let tool = crate::common::slice(&db, &["add", "other"]);
        assert_eq!(tool.status.code(), Some(1), "moved {moved}: {tool:?}");
        let status = daemon.exit_within(WAIT).expect("sliced stops by itself");
        assert_eq!(status.code(), Some(1), "moved {moved}");
        let written = std::fs::read_to_string(&log).unwrap();
        assert!(
            written.contains("sled's log file")
                && written.contains("stopping to avoid serving state that is not on disk"),
            "moved {moved}: {written}"
        );
        if moved {
            std::fs::rename(&away, &store_log).unwrap();
            let listed = crate::common::slice(&db, &["list"]);
            assert!(listed.status.success(), "{listed:?}");
            // The refused write may or may not be in it (sled wrote to the moved file);
            // the acknowledged one is.
            let listed = String::from_utf8(listed.stdout).unwrap();
            assert!(listed == "kept\n" || listed == "kept\nlost\n", "{listed}");
        } else {
            let refused = crate::common::refused_start(&db, &[]);
            let expected = format!("the database {} is corrupt", db.join("store").display());
            assert!(refused.contains(&expected), "{refused}");
        }
    }
}

/// Names and modes of what is in `dir`, to show that nothing was made or changed there.
fn listing(dir: &Path) -> Vec<(String, u32)> {
    use std::os::unix::fs::MetadataExt;
    let mut names: Vec<(String, u32)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let mode = entry.metadata().unwrap().mode() & 0o7777;
            (entry.file_name().to_string_lossy().into_owned(), mode)
        })
        .collect();
    names.sort();
    names
}

/// A data directory others could write (0777 before the first start) and a session key
/// another user planted in it (0600, theirs): sliced "tightened" the directory and used
/// the key, so a cookie that user sealed was an operator's session. Now the directory is
/// refused as it is found, and once its owner made it 0700, the planted key is: exit 1
/// with a line that names the path and what to check, and nothing made or changed there.
#[test]
fn a_data_directory_others_may_write_or_a_session_key_another_user_planted_stops_sliced() {
    use std::os::unix::fs::PermissionsExt;
    if !crate::common::running_as_root("the planted session key test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    let key = data.join("session.key");
    crate::common::plant(&key, &[7u8; 64], 0o600);
    let before = listing(&data);

    let refused = crate::common::refused_start(&data, &[]);
    let expected = format!(
        "sliced: the data directory {} may be written by other users (mode 0777)",
        data.display()
    );
    assert!(refused.contains(&expected), "{refused}");
    assert!(
        refused.contains(&format!("chmod 700 {}", data.display())),
        "{refused}"
    );
    assert_eq!(listing(&data), before);
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o777, "the directory was tightened");

    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let before = listing(&data);
    let refused = crate::common::refused_start(&data, &[]);
    let expected = format!(
        "sliced: the session key {} belongs to uid {}",
        key.display(),
        crate::common::ANOTHER_UID
    );
    assert!(refused.contains(&expected), "{refused}");
    assert_eq!(listing(&data), before, "something was made beside the key");
}

/// Every secret file the settings name is checked before the store is opened: an LLDP
/// secret another user owns (an owner-only file of theirs) is refused, and so is one of
/// this user's that others may read; nothing is made in the data directory.
#[test]
fn a_secret_file_another_user_owns_or_others_may_read_stops_sliced() {
    use std::os::unix::fs::PermissionsExt;
    if !crate::common::running_as_root("the planted secret file test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let secret = dir.path().join("lldp.secret");
    crate::common::plant(&secret, b"a secret of thirty-two bytes or more\n", 0o600);
    let flag = secret.display().to_string();
    let refused = crate::common::refused_start(&data, &["--lldp-secret-file", &flag]);
    let expected = format!(
        "sliced: the LLDP secret file {flag} belongs to uid {}",
        crate::common::ANOTHER_UID
    );
    assert!(refused.contains(&expected), "{refused}");
    // The refused start takes away the directory it made (start_up::).
    assert!(!data.exists(), "{:?}", listing(&data));

    std::os::unix::fs::chown(&secret, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = crate::common::refused_start(&data, &["--lldp-secret-file", &flag]);
    assert!(
        refused.contains("is open to other users (mode 644)"),
        "{refused}"
    );
    assert!(!data.exists(), "{:?}", listing(&data));
}
