//! Live data-plane verification (issue 37) on the real daemon: emulated 1.3 switches that
//! keep a flow table, read back by sliced after each write and every interval; what the
//! verifier proves from them on `GET /verification`, `slice verify`, the metrics and
//! `/events`; tampered tables reported with the entry and repaired.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::Duration;

use openflow::{Action, FlowMod, Match, Version};
use serde_json::{json, Value};
use slice_controller::cookie::FlowKind;

use crate::common::switch::{eventually, host, Network};
use crate::common::{agent, metric, slice, status_json, Daemon};

/// Generous: a debug build on two shared cores, with other tests running.
const WAIT: Duration = Duration::from_secs(60);

/// A cookie no sliced entry carries: what someone with switch access writes.
const FOREIGN_COOKIE: u64 = 0xbad;
const FOREIGN_PRIORITY: u16 = 65000;

/// Switches 1 and 2 cabled at their ports 3, each with a red host at port 1 and a blue
/// one at port 2 (h1, h3 on switch 1; h2, h4 on switch 2); both keep their tables.
fn two_slices(daemon: &Daemon) -> Network {
    daemon.add_host("red", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("red", "0x2:1", "00:00:00:00:00:02");
    daemon.add_host("blue", "0x1:2", "00:00:00:00:00:03");
    daemon.add_host("blue", "0x2:2", "00:00:00:00:00:04");
    let mut network = Network::new();
    network.keeping_tables();
    network.cable((1, 3), (2, 3));
    for dpid in 1..=2 {
        network.connect(daemon.openflow, dpid, Version::Of13, 3);
    }
    network
}

fn verification(daemon: &Daemon) -> Value {
    daemon.get_json("/verification")
}

/// Waits until the latest verification satisfies `check`; panics with the answer if it
/// never does.
fn until_verified(daemon: &Daemon, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    let found = eventually(WAIT, || {
        last = verification(daemon);
        check(&last)
    });
    assert!(found, "{what}: {last:#}");
    last
}

fn proven(answer: &Value) -> bool {
    answer["state"] == "verified" && answer["latest"]["proven"] == true
}

/// Every entry a violation lists.
fn entries_of(violations: &Value) -> Vec<Value> {
    violations
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|violation| violation["entries"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn foreign_leak(in_port: u32, out_port: u32) -> FlowMod {
    FlowMod {
        r#match: Match {
            in_port: Some(in_port),
            ..Match::default()
        },
        cookie: FOREIGN_COOKIE,
        priority: FOREIGN_PRIORITY,
        actions: vec![Action::Output {
            port: out_port,
            max_len: 0,
        }],
        ..FlowMod::default()
    }
}

/// The `verification` events of the daemon's stream, as they come.
fn verification_events(daemon: &Daemon) -> mpsc::Receiver<Value> {
    let response = agent()
        .get(&daemon.url("/events"))
        .set("Accept", "text/event-stream")
        .call()
        .expect("the stream opens");
    let (sender, events) = mpsc::channel();
    std::thread::spawn(move || {
        let mut verification = false;
        for line in BufReader::new(response.into_reader()).lines() {
            let Ok(line) = line else { return };
            if let Some(kind) = line.strip_prefix("event: ") {
                verification = kind == "verification";
            } else if let Some(data) = line.strip_prefix("data: ").filter(|_| verification) {
                let data = serde_json::from_str(data).expect("data is JSON");
                if sender.send(data).is_err() {
                    return;
                }
            }
        }
    });
    events
}

#[test]
fn a_clean_network_is_proven_and_tampered_tables_are_reported_and_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(
        dir.path(),
        &["--lldp-interval-ms", "100", "--verification-interval", "1"],
    );
    let network = two_slices(&daemon);
    let (switch1, switch2) = (network.switch(1), network.switch(2));

    // Clean: every ordered pair of the four hosts judged, nothing found.
    let clean = until_verified(&daemon, "a clean network is proven", |answer| {
        proven(answer) && answer["latest"]["report"]["pairs_checked"] == 12
    });
    let report = &clean["latest"]["report"];
    assert_eq!(
        (report["hosts"].clone(), report["switches"].clone()),
        (json!(4), json!(2))
    );
    assert_eq!(clean["switches_read"], 2);
    assert_eq!(clean["foreign"], json!([]));
    let out = slice(dir.path(), &["verify"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.starts_with("isolation proven: 12 pairs checked (4 hosts, 2 switches, "),
        "{stdout}"
    );
    let out = slice(dir.path(), &["verify", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let printed: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    assert_eq!(printed["state"], "verified");
    assert_eq!(
        metric(&daemon, "sliced_verification_violations{kind=\"leak\"}"),
        Some(0.0)
    );
    let events = verification_events(&daemon);

    // A foreign entry that sends red h1's frames to blue h3: reported as foreign, with
    // the leak it makes, and removed.
    switch1.tamper_add(foreign_leak(1, 2), false);
    // The foreign entry is recorded as the read-back is judged, the leak once the
    // verifier's thread has run on it: both are waited for.
    let names_the_foreign_entry = |entry: &Value| {
        entry["dpid"] == 1
            && entry["cookie"] == FOREIGN_COOKIE
            && entry["priority"] == FOREIGN_PRIORITY
    };
    until_verified(
        &daemon,
        "the foreign entry and its leak are reported",
        |answer| {
            let foreign = answer["foreign"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|entry| {
                    names_the_foreign_entry(entry)
                        && entry["match"] == "in_port=1"
                        && entry["actions"] == "output:2"
                });
            let leak = entries_of(&answer["last_violation"]["report"]["leaks"])
                .iter()
                .any(names_the_foreign_entry);
            foreign && leak
        },
    );
    assert!(
        eventually(WAIT, || !switch1
            .table()
            .iter()
            .any(|flow| flow.cookie == FOREIGN_COOKIE)),
        "the foreign entry is removed: {:#?}",
        switch1.table()
    );
    let leak_told = events
        .recv_timeout(WAIT)
        .expect("the leak is told on /events");
    assert_eq!(leak_told["proven"], false, "{leak_told}");
    assert!(leak_told["leaks"].as_u64() >= Some(1), "{leak_told}");
    let repaired = until_verified(&daemon, "proven again once repaired", proven);
    let repairs_before = repaired["repairs"].as_u64().unwrap();
    assert!(repairs_before >= 1, "{repaired:#}");

    // sliced's own entry that delivers to red h2, deleted: a black hole until it is
    // written again.
    let h2 = host(2);
    let delivers_to_h2 = |flow: &FlowMod| {
        FlowKind::of_cookie(flow.cookie) == Some(FlowKind::Pipeline)
            && flow.r#match.eth_dst == Some(h2)
            && flow
                .actions
                .iter()
                .any(|action| matches!(action, Action::Output { port: 1, .. }))
    };
    let removed = switch2
        .tamper_remove(delivers_to_h2)
        .unwrap_or_else(|| panic!("switch 2 delivers to h2: {:#?}", switch2.table()));
    let holed_at = repaired["latest"]["computed_at_unix_ms"].as_u64().unwrap();
    let holed = until_verified(&daemon, "the black hole is reported", |answer| {
        answer["last_violation"]["computed_at_unix_ms"].as_u64() > Some(holed_at)
            && !answer["last_violation"]["report"]["black_holes"]
                .as_array()
                .map_or(true, Vec::is_empty)
    });
    let black_holes = &holed["last_violation"]["report"]["black_holes"];
    assert!(
        black_holes.as_array().unwrap().iter().any(|hole| {
            hole["dst"]["mac"] == "00:00:00:00:00:02" && hole["src"]["mac"] == "00:00:00:00:00:01"
        }),
        "h1 cannot reach h2: {holed:#}"
    );
    assert!(
        eventually(WAIT, || switch2.table().contains(&removed)),
        "the entry is written again: {:#?}",
        switch2.table()
    );
    let repaired = until_verified(&daemon, "proven again once rewritten", |answer| {
        proven(answer) && answer["repairs"].as_u64() > Some(repairs_before)
    });
    assert!(repaired["repairs"].as_u64() > Some(repairs_before));

    // A leak the switch keeps whatever sliced deletes: `slice verify` fails, naming it.
    switch2.tamper_add(foreign_leak(2, 1), true);
    until_verified(&daemon, "the kept leak is reported", |answer| {
        !answer["latest"]["report"]["leaks"]
            .as_array()
            .map_or(true, Vec::is_empty)
    });
    assert!(
        eventually(WAIT, || metric(
            &daemon,
            "sliced_verification_violations{kind=\"leak\"}"
        ) >= Some(1.0)),
        "the leak gauge"
    );
    assert!(
        eventually(WAIT, || metric(
            &daemon,
            "sliced_verification_violations{kind=\"foreign\"}"
        ) >= Some(1.0)),
        "the foreign gauge"
    );
    assert!(metric(&daemon, "sliced_verification_repairs_total") > Some(0.0));
    let out = slice(dir.path(), &["verify"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("leak: 00:00:00:00:00:04 at 0x2:2 -> 00:00:00:00:00:02 at 0x2:1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("switch 0x2 table 0 priority 65000 cookie 0xbad match in_port=2"),
        "{stdout}"
    );
    assert!(stderr.contains("slice: isolation not proven: "), "{stderr}");
    let out = slice(dir.path(), &["verify", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let printed: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    assert_eq!(printed["latest"]["proven"], false);
}

#[test]
fn the_answer_before_any_verification_when_off_and_who_may_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--require-auth"]);
    // The same guard as the other views: a login, of any role, reads it.
    for path in ["/verification", "/api/verification"] {
        let (status, body) = status_json(agent().get(&daemon.url(path)).call());
        assert_eq!(
            (status, body),
            (403, json!({"status": "forbidden"})),
            "{path}"
        );
    }
    let reader = agent();
    let (status, _) = status_json(
        reader
            .post(&daemon.url("/auth/developer/callback"))
            .send_form(&[("name", "Ada"), ("email", "ada@example.com")]),
    );
    assert_eq!(status, 200);
    let (status, body) = status_json(reader.get(&daemon.url("/api/verification")).call());
    assert_eq!(status, 200, "{body}");
    // No switch was read yet: it says so.
    assert_eq!(body["state"], "pending");
    assert_eq!(body["latest"], Value::Null);
    assert_eq!(body["interval_secs"], 30);
    let (status, _) = status_json(reader.post(&daemon.url("/api/verification")).call());
    assert_eq!(status, 405);
    let out = slice(dir.path(), &["verify"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("have not been read back and verified yet"),
        "{stderr}"
    );
    drop(daemon);

    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--verification-interval", "0"]);
    assert_eq!(verification(&daemon)["state"], "off");
    let out = slice(dir.path(), &["verify"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("verification is off"));
    drop(daemon);

    // Without a daemon there is nothing to ask.
    let out = slice(dir.path(), &["verify"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no sliced answers on"));
}

/// Leaks every switch port's frames reach when one entry floods everything.
const FLOODED_LEAKS: u32 = 8 * 7 * 2 + 8 * 7;

/// A daemon started with `flags`, eight hosts on one switch each alone in a slice, and
/// the switch tampered with to flood everything; returns once a report counted
/// [`FLOODED_LEAKS`], with that report (the network is kept alive with it).
fn flooded(dir: &std::path::Path, flags: &[&str]) -> (Daemon, Network, Value) {
    let mut args = vec!["--lldp-interval-ms", "100", "--verification-interval", "1"];
    args.extend_from_slice(flags);
    let daemon = Daemon::start_with(dir, &args);
    // Eight hosts on one switch, each alone in a slice of its own.
    for i in 1..=8u8 {
        daemon.add_host(
            &format!("s{i}"),
            &format!("0x1:{i}"),
            &format!("00:00:00:00:00:{i:02x}"),
        );
    }
    let mut network = Network::new();
    network.keeping_tables();
    let switch = network.connect(daemon.openflow, 1, Version::Of13, 8);
    until_verified(&daemon, "the eight hosts are proven apart", |answer| {
        proven(answer) && answer["latest"]["report"]["pairs_checked"] == 56
    });
    // Someone with switch access floods everything, and the switch keeps it: every
    // ordered pair leaks twice (frames addressed to the receiver, and the others) and
    // every port's unbound senders reach the seven other hosts.
    let mut flood = foreign_leak(0, openflow::port::FLOOD);
    flood.r#match.in_port = None;
    switch.tamper_add(flood, true);
    let answer = until_verified(&daemon, "every leak counted", |answer| {
        answer["latest"]["report"]["leaks_total"] == FLOODED_LEAKS
    });
    (daemon, network, answer)
}

#[test]
fn a_table_that_leaks_everything_is_reported_in_bounded_lists_with_totals() {
    let dir = tempfile::tempdir().unwrap();
    let (daemon, _network, answer) = flooded(dir.path(), &[]);
    let expected = FLOODED_LEAKS;
    let report = &answer["latest"]["report"];
    assert_eq!(report["list_limit"], 100, "{report:#}");
    assert_eq!(
        report["leaks"].as_array().map(Vec::len),
        Some(100),
        "{report:#}"
    );
    assert_eq!(
        (
            report["black_holes_total"].clone(),
            report["loops_total"].clone()
        ),
        (json!(0), json!(0))
    );
    assert!(
        eventually(WAIT, || metric(
            &daemon,
            "sliced_verification_violations{kind=\"leak\"}"
        ) == Some(f64::from(expected))),
        "the leak gauge counts them all"
    );
    let out = slice(dir.path(), &["verify"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("leak: ")).count(),
        100
    );
    assert!(
        stdout.contains("68 more leaks not shown: 168 found, the daemon lists the first 100"),
        "{stdout}"
    );
    assert!(
        stdout.contains("isolation not proven: 168 violations in 56 pairs checked"),
        "{stdout}"
    );
    assert!(
        stderr.contains("isolation not proven: 168 leaks, 0 black holes, 0 loops"),
        "{stderr}"
    );
}

#[test]
fn a_daemon_told_a_list_limit_lists_every_violation_up_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_daemon, _network, answer) = flooded(dir.path(), &["--verification-list-limit", "500"]);
    let report = &answer["latest"]["report"];
    assert_eq!(report["list_limit"], 500, "{report:#}");
    assert_eq!(
        report["leaks"].as_array().map(Vec::len),
        Some(FLOODED_LEAKS as usize),
        "{report:#}"
    );
    let out = slice(dir.path(), &["verify"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("leak: ")).count(),
        FLOODED_LEAKS as usize
    );
    assert!(!stdout.contains("not shown"), "{stdout}");
}
