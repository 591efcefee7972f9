//! The audit trail on the real daemon: an apply's entry is followed by entries naming every
//! step it carried out and who carried it out, none of them long and none on the event
//! stream; over the local socket the requester is the peer's Unix user, whatever its
//! headers say.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::switch::eventually;
use crate::common::{agent, local_request, slice, status_json, Daemon};

/// Long enough for thousands of audit lines to reach the log on a loaded machine.
const WRITTEN: Duration = Duration::from_secs(30);

/// The longest line the trail may write: a detail entry lists 100 steps.
const LONGEST_LINE: usize = 20_000;

/// The name of the Unix user these tests run as, as the daemon's local socket names its
/// peer (the daemon runs as the same user).
pub(crate) fn unix_user() -> String {
    let output = std::process::Command::new("id")
        .arg("-un")
        .output()
        .expect("id runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .expect("a user name is text")
        .trim()
        .to_owned()
}

/// The audit trail's lines in the daemon's log: each as written, and as JSON.
fn audit_lines(log: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains("sliced::audit"))
        .filter_map(|line| {
            let entry = serde_json::from_str(&line[line.find('{')?..]).ok()?;
            Some((line.to_owned(), entry))
        })
        .collect()
}

/// The detail entries of the apply `id`, in the order the log has them.
fn details_of(lines: &[(String, Value)], id: &Value) -> Vec<Value> {
    lines
        .iter()
        .map(|(_, entry)| entry)
        .filter(|entry| entry["operation"] == "apply_steps" && &entry["target"]["apply"] == id)
        .cloned()
        .collect()
}

/// The slices the steps `op` of `details` name.
fn slices_by(details: &[Value], op: &str) -> BTreeSet<String> {
    details
        .iter()
        .flat_map(|entry| {
            entry["target"]["steps"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|step| step["op"] == op)
        .filter_map(|step| step["slice"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn an_apply_that_removes_ten_thousand_slices_names_each_and_who_removed_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("sliced.log");
    let daemon = Daemon::start_filtered(&data, "warn,sliced::audit=info", &log);
    let names: BTreeSet<String> = (0..10_000).map(|n| format!("s{n:05}")).collect();
    let declared: String = names
        .iter()
        .map(|name| format!("[[slice]]\nname = \"{name}\"\n"))
        .collect();
    let file = dir.path().join("state.toml");
    std::fs::write(&file, declared).unwrap();
    // Added by the tool, over the local socket.
    let made = slice(&data, &["apply", "-f", file.to_str().unwrap()]);
    assert!(made.status.success(), "{made:?}");
    // Removed, every one, by a logged-in user through the API.
    let ada = agent();
    let login = ada
        .post(&daemon.url("/auth/developer/callback"))
        .set("Origin", &daemon.url(""))
        .send_json(json!({"name": "Ada", "email": "ada@example.com"}));
    assert_eq!(status_json(login).0, 200);
    let (status, answer) = status_json(
        ada.post(&daemon.url("/api/slices:apply"))
            .send_json(json!({"slices": []})),
    );
    assert_eq!(status, 200);
    assert_eq!(answer["plan"].as_array().map(Vec::len), Some(10_000));

    let mut lines = Vec::new();
    let complete = eventually(WRITTEN, || {
        lines = audit_lines(&log);
        lines
            .iter()
            .filter(|(_, entry)| entry["operation"] == "apply_steps")
            .count()
            == 200
    });
    assert!(complete, "{} audit lines", lines.len());
    for (line, _) in &lines {
        assert!(line.len() < LONGEST_LINE, "a line of {} bytes", line.len());
    }
    let applies: Vec<&Value> = lines
        .iter()
        .map(|(_, entry)| entry)
        .filter(|entry| entry["operation"] == "apply")
        .collect();
    assert_eq!(applies.len(), 2, "{applies:#?}");
    let me = unix_user();
    for (apply, user, via, op) in [
        (applies[0], me.as_str(), "local_socket", "create_slice"),
        (applies[1], "Ada", "session", "delete_slice"),
    ] {
        assert_eq!((&apply["user"], &apply["via"]), (&json!(user), &json!(via)));
        let id = &apply["outcome"]["apply"];
        assert!(id.as_str().is_some_and(|id| id.len() == 16), "{apply}");
        assert_eq!(apply["outcome"]["steps"], 10_000);
        assert_eq!(apply["outcome"]["parts"], 100);
        let details = details_of(&lines, id);
        assert_eq!(details.len(), 100);
        for (part, entry) in details.iter().enumerate() {
            assert_eq!(entry["user"], user, "{entry}");
            assert_eq!(entry["via"], via, "{entry}");
            assert_eq!(entry["source"], apply["source"], "{entry}");
            assert_eq!(entry["target"]["part"], part + 1, "{entry}");
            assert_eq!(entry["target"]["parts"], 100, "{entry}");
        }
        // Who added and who removed each slice, from the trail alone.
        assert_eq!(slices_by(&details, op), names, "{op}");
    }
}

#[test]
fn the_event_stream_gets_one_entry_per_apply_and_no_details() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let declared: Vec<Value> = (0..250).map(|n| json!({"name": format!("e{n}")})).collect();
    let stream = agent()
        .get(&daemon.url("/events"))
        .set("Accept", "text/event-stream")
        .call()
        .expect("the stream opens");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stream.into_reader()));
    let (status, _) = status_json(
        agent()
            .post(&daemon.url("/slices:apply"))
            .send_json(json!({"slices": declared})),
    );
    assert_eq!(status, 200);
    // A write after the apply: its entry closes what the apply told.
    let (status, _) = status_json(
        agent()
            .post(&daemon.url("/slices"))
            .send_json(json!({"name": "marker"})),
    );
    assert_eq!(status, 201);
    let mut audits = Vec::new();
    while let Some(Ok(line)) = lines.next() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let data: Value = serde_json::from_str(data).expect("data is JSON");
        if data.get("operation").is_some() {
            let done = data["operation"] == "create_slice";
            audits.push(data);
            if done {
                break;
            }
        }
    }
    let operations: Vec<&Value> = audits.iter().map(|entry| &entry["operation"]).collect();
    assert_eq!(operations, [&json!("apply"), &json!("create_slice")]);
    assert_eq!(audits[0]["outcome"]["steps"], 250);
    assert_eq!(audits[0]["outcome"]["parts"], 3);
}

/// A configuration with a trusted proxy (on an address nobody here connects from) and
/// every endpoint behind the guard.
fn proxy_config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("sliced.toml");
    let mut file = std::fs::File::create(&path).unwrap();
    writeln!(
        file,
        r#"[auth]
require_for_slices = true

[auth.roles]
operator = ["net-admins"]

[auth.proxy]
user_header = "X-Forwarded-User"
role_header = "X-Forwarded-Groups"
trusted = ["127.0.0.2"]
"#
    )
    .unwrap();
    path
}

#[test]
fn the_local_socket_is_its_peers_unix_user_whatever_its_headers_say() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("sliced.log");
    let config = proxy_config(dir.path());
    let _daemon = Daemon::start_filtered_with(
        &data,
        &["--config", config.to_str().unwrap()],
        "warn,sliced::audit=info",
        &log,
    );
    let me = unix_user();
    let forged = [
        "X-Forwarded-User: mallory",
        "X-Forwarded-Groups: net-admins",
    ];
    assert_eq!(
        local_request(&data, "GET", "/api/session", &forged, None),
        (200, json!({"name": me, "email": "", "role": "operator"}))
    );
    let (status, _) = local_request(
        &data,
        "POST",
        "/slices",
        &forged,
        Some(&json!({"name": "blue"})),
    );
    assert_eq!(status, 201);
    let made = slice(&data, &["add", "red"]);
    assert!(made.status.success(), "{made:?}");
    let mut lines = Vec::new();
    assert!(eventually(WRITTEN, || {
        lines = audit_lines(&log);
        lines.len() >= 2
    }));
    let told: Vec<(Value, Value, Value, Value)> = lines
        .iter()
        .map(|(_, entry)| {
            let field = |key: &str| entry[key].clone();
            (
                field("user"),
                field("via"),
                field("source"),
                field("target"),
            )
        })
        .collect();
    let by_me = |slice: &str| {
        (
            json!(me),
            json!("local_socket"),
            json!("local"),
            json!({"slice": slice}),
        )
    };
    assert_eq!(told, [by_me("blue"), by_me("red")]);
    assert!(!lines.iter().any(|(line, _)| line.contains("mallory")));
}

#[test]
fn a_fabric_declaration_names_the_entries_it_added_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("sliced.log");
    let daemon = Daemon::start_filtered(&data, "warn,sliced::audit=info", &log);
    let declare = |entries: &[String]| {
        let (status, body) = status_json(
            agent()
                .put(&daemon.url("/topology/fabric"))
                .send_json(json!({ "declared": entries })),
        );
        assert_eq!(status, 200, "{body}");
    };
    let port = |n: u32| format!("0x1:{n}");
    // 250 fabric ports, then 0x1:1..150 kept, 0x1:151..250 removed, 0x1:251..300 added.
    declare(&(1..=250).map(port).collect::<Vec<_>>());
    declare(
        &(1..=300)
            .filter(|n| !(151..=250).contains(n))
            .map(port)
            .collect::<Vec<_>>(),
    );
    declare(
        &(1..=300)
            .filter(|n| !(151..=250).contains(n))
            .map(port)
            .collect::<Vec<_>>(),
    );

    let mut lines = Vec::new();
    let complete = eventually(WRITTEN, || {
        lines = audit_lines(&log);
        lines
            .iter()
            .filter(|(_, entry)| entry["operation"] == "declare_fabric")
            .count()
            == 3
    });
    assert!(complete, "{lines:?}");
    let declarations: Vec<&Value> = lines
        .iter()
        .map(|(_, entry)| entry)
        .filter(|entry| entry["operation"] == "declare_fabric")
        .collect();
    let counts: Vec<(Value, Value, Value)> = declarations
        .iter()
        .map(|entry| {
            let outcome = &entry["outcome"];
            (
                entry["target"]["entries"].clone(),
                outcome["added"].clone(),
                outcome["removed"].clone(),
            )
        })
        .collect();
    assert_eq!(
        counts,
        [
            (json!(250), json!(250), json!(0)),
            (json!(200), json!(50), json!(100)),
            (json!(200), json!(0), json!(0)),
        ]
    );
    // Each change is named in detail entries of at most 100 entries, log only.
    let named = |index: usize, kind: &str| -> BTreeSet<String> {
        let id = &declarations[index]["outcome"]["declaration"];
        let details: Vec<&Value> = lines
            .iter()
            .map(|(_, entry)| entry)
            .filter(|entry| {
                entry["operation"] == "fabric_changes" && &entry["target"]["declaration"] == id
            })
            .collect();
        assert!(details
            .iter()
            .all(|entry| { entry["target"]["changes"].as_array().unwrap().len() <= 100 }));
        details
            .iter()
            .flat_map(|entry| entry["target"]["changes"].as_array().unwrap().clone())
            .filter_map(|change| change[kind].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(named(0, "added"), (1..=250).map(port).collect());
    assert_eq!(named(1, "added"), (251..=300).map(port).collect());
    assert_eq!(named(1, "removed"), (151..=250).map(port).collect());
    assert!(declarations[2]["outcome"].get("declaration").is_none());
}
