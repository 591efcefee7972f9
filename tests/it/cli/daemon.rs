//! The tool beside a running daemon, whose writes and errors are the same as its own, and
//! beside a stand-in daemon whose answers test how the tool reads them.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{
    check_contract_errors, check_invalid_values, check_usage_errors, fails, list, list_json,
    make_example, ok, private_tempdir, run, EXAMPLE_LIST, MAC1, MAC2,
};
use crate::common::{agent, status_json, Daemon};

fn get(daemon: &Daemon, path: &str) -> (u16, Value) {
    status_json(agent().get(&daemon.url(path)).call())
}

fn post(daemon: &Daemon, path: &str, body: Value) -> (u16, Value) {
    status_json(agent().post(&daemon.url(path)).send_json(body))
}

#[test]
fn tool_writes_are_visible_through_the_rest_api_at_once() {
    let dir = private_tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let d = dir.path();
    make_example(d);
    ok(
        d,
        &[
            "add_host",
            "-m",
            "AA:00:00:00:00:02",
            "-p",
            "0xAB:9",
            "-s",
            "red",
        ],
    );
    assert_eq!(
        get(&daemon, "/slices"),
        (200, json!([{"name": "blue"}, {"name": "red"}]))
    );
    assert_eq!(
        get(&daemon, "/slices/blue/ports"),
        (
            200,
            json!([
                {"name": "0x1:1", "dpid": 1, "port_no": 1},
                {"name": "0x2:3", "dpid": 2, "port_no": 3},
            ])
        )
    );
    assert_eq!(
        get(&daemon, "/slices/blue/ports/0x1:1/mac_addresses"),
        (200, json!([{"name": MAC1}]))
    );
    assert_eq!(
        get(&daemon, "/slices/blue/ports/0x2:3/mac_addresses"),
        (200, json!([]))
    );
    assert_eq!(
        get(&daemon, "/slices/red/ports/0xab:9/mac_addresses"),
        (200, json!([{"name": "aa:00:00:00:00:02"}]))
    );
    ok(d, &["delete_port", "-p", "0x1:1", "-s", "blue"]);
    ok(d, &["delete", "red"]);
    assert_eq!(get(&daemon, "/slices"), (200, json!([{"name": "blue"}])));
    assert_eq!(
        get(&daemon, "/slices/blue/ports"),
        (200, json!([{"name": "0x2:3", "dpid": 2, "port_no": 3}]))
    );
}

#[test]
fn rest_writes_appear_in_slice_list() {
    let dir = private_tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    assert_eq!(ok(dir.path(), &["list"]), "");
    assert_eq!(post(&daemon, "/slices", json!({"name": "blue"})).0, 201);
    assert_eq!(
        post(
            &daemon,
            "/slices/blue/ports",
            json!({"dpid": 1, "port_no": 1})
        )
        .0,
        201
    );
    assert_eq!(
        post(
            &daemon,
            "/slices/blue/ports/0x1:1/mac_addresses",
            json!({"name": MAC1})
        )
        .0,
        201
    );
    // Endpoint 9 creates the port.
    assert_eq!(
        post(
            &daemon,
            "/slices/blue/ports/0x2:3/mac_addresses",
            json!({"name": MAC2})
        )
        .0,
        201
    );
    assert_eq!(post(&daemon, "/slices", json!({"name": "red"})).0, 201);
    assert_eq!(
        list(dir.path()),
        "blue\n  0x1:1\n    00:00:00:00:00:01\n  0x2:3\n    00:00:00:00:00:02\nred\n"
    );
}

#[test]
fn errors_through_the_daemon_are_the_same() {
    let dir = private_tempdir().unwrap();
    let _daemon = Daemon::start(dir.path());
    make_example(dir.path());
    check_contract_errors(dir.path());
    check_invalid_values(dir.path());
    check_usage_errors(dir.path());
}

/// Slice names made of the grammar's punctuation, or of the templates' own words, come
/// back from the daemon as the same contract errors the tool reports on its own.
#[test]
fn contract_errors_on_awkward_names_are_the_same_in_both_modes() {
    let dir = private_tempdir().unwrap();
    let longest = "x".repeat(64);
    let names = ["...", "-", "Slice", "found", &longest];
    let errors = |dir: &Path| -> Vec<String> {
        let mut seen = Vec::new();
        for name in names {
            seen.push(fails(dir, &["delete", name]));
            seen.push(fails(
                dir,
                &[
                    "add_port",
                    "-p",
                    "0xffffffffffffffff:4294967040",
                    "-s",
                    name,
                ],
            ));
            // A port no switch has: refused before either mode is asked.
            seen.push(fails(
                dir,
                &[
                    "add_port",
                    "-p",
                    "0xffffffffffffffff:4294967295",
                    "-s",
                    name,
                ],
            ));
            ok(dir, &["add", name]);
            seen.push(fails(dir, &["add", name]));
            seen.push(fails(dir, &["delete_port", "-p", "0x0:0", "-s", name]));
            ok(dir, &["delete", name]);
        }
        seen
    };
    // Removals need a database to remove from.
    ok(dir.path(), &["add", "other"]);
    let direct = errors(dir.path());
    assert_eq!(direct[0], "slice: Slice ... not found\n");
    assert_eq!(direct[1], "slice: Slice ... not found\n");
    assert!(
        direct[2]
            .starts_with("slice: port 0xffffffffffffffff:4294967295 cannot be bound to a slice: "),
        "{}",
        direct[2]
    );
    assert_eq!(direct[3], "slice: Slice ... already exists\n");
    assert_eq!(direct[4], "slice: Port 0x0:0 not found\n");
    let daemon = Daemon::start(dir.path());
    assert_eq!(errors(dir.path()), direct);
    assert!(daemon.terminate().success());
}

#[test]
fn both_modes_list_the_same_tree() {
    let dir = private_tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    make_example(dir.path());
    let (text, json) = (list(dir.path()), list_json(dir.path()));
    assert_eq!(text, EXAMPLE_LIST);
    assert!(daemon.terminate().success());
    assert_eq!(list(dir.path()), text);
    assert_eq!(list_json(dir.path()), json);
}

#[test]
fn after_the_daemon_stops_the_tool_works_directly_on_the_same_data() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let daemon = Daemon::start(d);
    ok(d, &["add", "blue"]);
    assert!(daemon.terminate().success());
    assert!(!d.join("sliced.sock").exists());

    ok(d, &["add_host", "-m", MAC1, "-p", "0x1:1", "-s", "blue"]);
    assert_eq!(list(d), "blue\n  0x1:1\n    00:00:00:00:00:01\n");

    // And what the tool wrote alone, a new daemon serves.
    let daemon = Daemon::start(d);
    assert_eq!(
        get(&daemon, "/slices/blue/ports/0x1:1/mac_addresses"),
        (200, json!([{"name": MAC1}]))
    );
    ok(d, &["add", "red"]);
    assert_eq!(
        get(&daemon, "/slices"),
        (200, json!([{"name": "blue"}, {"name": "red"}]))
    );
}

#[test]
fn after_a_daemon_is_killed_its_socket_file_is_passed_over() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let daemon = Daemon::start(d);
    ok(d, &["add", "blue"]);
    daemon.kill9();
    assert!(
        d.join("sliced.sock").exists(),
        "kill -9 leaves the socket file"
    );
    ok(d, &["add", "red"]);
    assert_eq!(list(d), "blue\nred\n");
}

#[test]
fn dot_and_dot_dot_are_not_slice_names() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let _daemon = Daemon::start(d);
    // A URL path resolves these segments away, so no client could address such a slice.
    for name in [".", ".."] {
        let stderr = fails(d, &["add", name]);
        assert!(
            stderr.contains(&format!(
                "invalid slice name \"{name}\": must not be '.' or '..'"
            )),
            "{stderr}"
        );
    }
    ok(d, &["add", "..."]);
    ok(d, &["add_host", "-m", MAC1, "-p", "0x1:1", "-s", "..."]);
    assert_eq!(list(d), "...\n  0x1:1\n    00:00:00:00:00:01\n");
}

#[test]
fn a_daemon_without_its_socket_is_reported_with_both_paths() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let _daemon = Daemon::start(d);
    ok(d, &["add", "blue"]);
    // The daemon holds the database but nobody can reach it any more.
    std::fs::remove_file(d.join("sliced.sock")).unwrap();
    let started = Instant::now();
    let run = run(d, &["add", "red"]);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "gave up at once"
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "");
    let socket = d.join("sliced.sock");
    let store = d.join("store");
    assert!(
        run.stderr.starts_with("slice: ")
            && run.stderr.contains(socket.to_str().unwrap())
            && run.stderr.contains(store.to_str().unwrap()),
        "{}",
        run.stderr
    );
}

// ---- a stand-in daemon that answers with chosen bytes ------------------------------------------

/// Listens on the data directory's daemon socket and answers each request with what
/// `reply` gives for its request line, then closes the connection: the tool takes it for a
/// running sliced.
pub(super) fn scripted_daemon(dir: &Path, reply: fn(&str) -> &'static str) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::os::unix::net::UnixListener::bind(dir.join("sliced.sock")).unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let mut conn = BufReader::new(conn.unwrap());
            // The tool's requests have no body here: the head ends at the blank line.
            let mut request_line = String::new();
            conn.read_line(&mut request_line).unwrap();
            let mut line = String::new();
            while conn.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
                line.clear();
            }
            // Small writes, so that the tool reassembles the answer from many reads.
            for piece in reply(&request_line).as_bytes().chunks(5) {
                if conn.get_mut().write_all(piece).is_err() {
                    break;
                }
            }
        }
    });
}

#[test]
fn the_tool_reads_interim_answers_and_chunked_bodies_with_trailers() {
    let dir = private_tempdir().unwrap();
    scripted_daemon(dir.path(), |request_line| {
        if request_line.starts_with("GET /slices HTTP/1.1") {
            "HTTP/1.1 100 Continue\r\n\r\n\
             HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
             6;note=x\r\n[{\"nam\r\n\
             b\r\ne\":\"blue\"}]\r\n\
             0\r\nX-Checksum: 1\r\n\r\n"
        } else {
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n"
        }
    });
    assert_eq!(list(dir.path()), "blue\n");
}

#[test]
fn a_malformed_answer_is_reported_as_such() {
    for reply in [
        |_: &str| "SSH-2.0-OpenSSH_9.6\r\n",
        |_: &str| "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n[]",
        |_: &str| "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        |_: &str| "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n[]",
    ] {
        let dir = private_tempdir().unwrap();
        scripted_daemon(dir.path(), reply);
        let run = run(dir.path(), &["list"]);
        let sent = reply("");
        assert_eq!(run.code, Some(1), "{sent:?}: {run:?}");
        assert!(
            run.stderr.contains("malformed response: "),
            "{sent:?}: {}",
            run.stderr
        );
        assert_eq!(run.stdout, "", "{sent:?}");
    }
}

/// In a data directory others may write, anyone could listen on `sliced.sock` in the
/// daemon's place and be sent the command; a socket of another user than the
/// directory's owner may be such a stand-in too. The tool refuses both before it sends
/// anything: the listener reads no byte.
#[test]
fn a_socket_another_user_could_have_put_there_is_sent_nothing() {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let dir = private_tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    let socket = data.join("sliced.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let received = |listener: &std::os::unix::net::UnixListener| {
        let mut bytes = Vec::new();
        while let Ok((mut stream, _)) = listener.accept() {
            stream.set_nonblocking(false).unwrap();
            stream.read_to_end(&mut bytes).unwrap();
        }
        bytes
    };
    let refused = run(&data, &["add", "blue"]);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    let expected = format!(
        "slice: the data directory {} may be written by other users (mode 0777)",
        data.display()
    );
    assert!(refused.stderr.starts_with(&expected), "{}", refused.stderr);
    assert!(received(&listener).is_empty(), "the tool sent a request");

    if !crate::common::running_as_root("the foreign socket test") {
        return;
    }
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let other = crate::common::ANOTHER_UID;
    std::os::unix::fs::lchown(&socket, Some(other), Some(other)).unwrap();
    let refused = run(&data, &["list"]);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    let expected = format!(
        "slice: the socket {} belongs to uid {other}, but its data directory to uid 0",
        socket.display()
    );
    assert!(refused.stderr.starts_with(&expected), "{}", refused.stderr);
    assert!(received(&listener).is_empty(), "the tool sent a request");
}
