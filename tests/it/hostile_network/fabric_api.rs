//! The fabric declared through the API (issue 33): durable, in force at once (a link the
//! declaration lacks goes with the request), refused when malformed or when the settings
//! declare the fabric. Emulated switches over real TCP, the real `sliced` on sled.

use super::links::off_fabric;
use super::{daemon, links, probes_out_of, WAIT};
use crate::common::switch::{eventually, Network};
use crate::common::{agent, status_json, Daemon};
use openflow::Version;
use serde_json::{json, Value};

fn declare(daemon: &Daemon, entries: &[&str]) -> (u16, Value) {
    status_json(
        agent()
            .put(&daemon.url("/topology/fabric"))
            .send_json(json!({ "declared": entries })),
    )
}

fn fabric_of(daemon: &Daemon) -> (Value, Value, Value) {
    let fabric = daemon.get_json("/topology/fabric");
    (
        fabric["mode"].clone(),
        fabric["source"].clone(),
        fabric["declared"].clone(),
    )
}

#[test]
fn a_fabric_declared_through_the_api_withdraws_a_relayed_link_at_once_and_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    // The default 30 s discovery window: long enough for hosts to relay a link in.
    let daemon = daemon(dir.path(), &[]);
    let mut network = Network::new();
    network.cable((1, 3), (2, 3));
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 3);
    let s2 = network.connect(daemon.openflow, 2, Version::Of13, 3);
    assert!(eventually(WAIT, || links(&daemon).len() == 2), "the cable");
    // Within the window the hosts behind port 2 relay each other's newest probes.
    let relay = || {
        if let (Some(from_1), Some(from_2)) =
            (probes_out_of(&s1, 2).pop(), probes_out_of(&s2, 2).pop())
        {
            s2.packet_in(2, from_1);
            s1.packet_in(2, from_2);
        }
    };
    assert!(
        eventually(WAIT, || {
            relay();
            links(&daemon).len() == 4
        }),
        "a relayed link within the window: {:?}",
        links(&daemon)
    );

    // Malformed declarations change nothing.
    for (entries, says) in [
        (&["0x1:3-0x1:3"][..], "a cable joins two different ports"),
        (
            &["0x1:3-0x2:3", "0x1:3-0x3:3"][..],
            "port 0x1:3 is declared twice",
        ),
        (&["1:3"][..], "\"1:3\""),
    ] {
        let (status, body) = declare(&daemon, entries);
        assert_eq!(status, 400, "{entries:?}: {body}");
        let error = body["error"].as_str().unwrap();
        assert!(error.contains(says), "{entries:?}: {error}");
    }
    assert_eq!(fabric_of(&daemon).0, "discovered");
    assert_eq!(links(&daemon).len(), 4);

    let (status, body) = declare(&daemon, &["0x2:3-0x1:3"]);
    assert_eq!((status, body), (200, json!({"declared": ["0x1:3-0x2:3"]})));
    // The relay goes on, still within the window, and is refused from now on.
    assert!(
        eventually(WAIT, || {
            relay();
            off_fabric(&daemon, 1) > 0 && links(&daemon).len() == 2
        }),
        "the relayed link goes and stays gone: {:?}",
        links(&daemon)
    );
    assert_eq!(
        fabric_of(&daemon),
        (json!("declared"), json!("api"), json!(["0x1:3-0x2:3"]))
    );
    drop((s1, s2, network));

    // Kept on disk: a restart finds it.
    daemon.terminate();
    let daemon = Daemon::start(dir.path());
    assert_eq!(
        fabric_of(&daemon),
        (json!("declared"), json!("api"), json!(["0x1:3-0x2:3"]))
    );
    // An empty declaration ends it: durable at the answer, and the controller's view
    // follows the store, as every instance of a cluster does.
    assert_eq!(declare(&daemon, &[]), (200, json!({"declared": []})));
    assert!(
        eventually(WAIT, || fabric_of(&daemon)
            == (json!("discovered"), Value::Null, json!([]))),
        "{:?}",
        fabric_of(&daemon)
    );
}

#[test]
fn settings_that_declare_the_fabric_refuse_the_api_and_outrank_the_store_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--fabric", "0x1:3-0x2:3"]);
    let (status, body) = declare(&daemon, &["0x1:4-0x2:4"]);
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("--fabric"),
        "{body}"
    );
    assert_eq!(
        fabric_of(&daemon),
        (json!("declared"), json!("settings"), json!(["0x1:3-0x2:3"]))
    );
    daemon.terminate();

    // Declared through the API (by another instance, in a cluster), then started with
    // other settings: the settings hold, as they do when the declaration comes while the
    // daemon runs, and the log names both.
    let daemon = Daemon::start(dir.path());
    assert_eq!(declare(&daemon, &["0x1:4-0x2:4"]).0, 200);
    daemon.terminate();
    let log = dir.path().join("daemon.log");
    let daemon =
        Daemon::start_filtered_with(dir.path(), &["--fabric", "0x1:3-0x2:3"], "warn", &log);
    assert_eq!(
        fabric_of(&daemon),
        (json!("declared"), json!("settings"), json!(["0x1:3-0x2:3"]))
    );
    daemon.terminate();
    let logged = std::fs::read_to_string(&log).unwrap();
    let warnings: Vec<&str> = logged
        .lines()
        .filter(|line| line.contains("the store holds another"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning: {logged}");
    assert!(
        !logged.contains("another instance declared"),
        "and no other: {logged}"
    );
    assert!(
        warnings[0].contains("0x1:3-0x2:3") && warnings[0].contains("0x1:4-0x2:4"),
        "names both: {}",
        warnings[0]
    );
}

#[test]
fn a_fabric_body_is_bounded_by_its_own_limit_and_its_entries_while_read() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let put = |body: String| {
        status_json(
            agent()
                .put(&daemon.url("/topology/fabric"))
                .set("Content-Type", "application/json")
                .send_string(&body),
        )
    };
    // The most entries, each as long as an entry gets, fit.
    let side = |n: u64| format!("0x{:x}:4294967295", u64::MAX - n);
    let entries: Vec<String> = (0..slice_core::fabric::MAX_FABRIC_ENTRIES as u64)
        .map(|n| format!("\"{}-{}\"", side(2 * n), side(2 * n + 1)))
        .collect();
    assert_eq!(
        entries[0].len(),
        2 + slice_core::fabric::LONGEST_FABRIC_ENTRY
    );
    let (status, body) = put(format!("{{\"declared\": [{}]}}", entries.join(", ")));
    assert_eq!(status, 200, "{}", body["error"]);
    // One more is refused, counted while the body is read.
    let empty = vec!["\"\""; slice_core::fabric::MAX_FABRIC_ENTRIES + 1];
    let (status, body) = put(format!("{{\"declared\": [{}]}}", empty.join(",")));
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("invalid request body: a fabric declaration holds at most 16384"),
        "{body}"
    );
    // Two mebibytes are refused before they are read as JSON: far more than any
    // declaration, and well under the limit of a whole declared state.
    let (status, body) = put(format!(
        "{{\"declared\": [{}]}}",
        vec!["\"\""; 700_000].join(",")
    ));
    assert_eq!(status, 413, "{body}");
    // Nothing of the refused ones was declared.
    assert_eq!(
        fabric_of(&daemon).2.as_array().unwrap().len(),
        slice_core::fabric::MAX_FABRIC_ENTRIES
    );
}
