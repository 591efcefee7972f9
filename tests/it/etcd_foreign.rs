//! Keys under the prefix that sliced did not write, put there with etcdctl while real
//! daemons run on the etcd: records without their slice, keys in another spelling, a
//! `master` key that is no member's. REST and the controller (`sliced_slices` and the
//! bound ports and MAC addresses on `GET /metrics`) always agree, every instance agrees,
//! the daemon keeps serving and stays master, and the metric counts what is skipped.

use std::time::Duration;

use serde_json::{json, Value};
use slice_etcd::test_server::LocalEtcd;

use crate::common::switch::eventually;
use crate::common::{agent, metric, status_json, Daemon};

/// Longer than a change takes to reach an instance on a loaded machine.
const PROPAGATION: Duration = Duration::from_secs(20);

fn start_on(etcd: &LocalEtcd, data_dir: &tempfile::TempDir) -> Daemon {
    Daemon::start_with(
        data_dir.path(),
        &["--etcd", &etcd.endpoint(), "--etcd-allow-plaintext"],
    )
}

fn put(etcd: &LocalEtcd, key: &str) {
    etcd.etcdctl(None, &["put", &format!("/sliced/{key}"), ""]);
}

fn get(daemon: &Daemon, path: &str) -> (u16, Value) {
    status_json(agent().get(&daemon.url(path)).call())
}

/// The slices REST lists, each with its ports and their MAC addresses; None while a
/// slice or port listed is gone by the time it is read (a deletion reaching the
/// instance between the reads), which an instance still catching up may show.
fn served(daemon: &Daemon) -> Option<Value> {
    let read = |path: &str| {
        let (status, body) = get(daemon, path);
        match status {
            200 => Some(body),
            404 => None,
            _ => panic!("GET {path}: {status} {body}"),
        }
    };
    let names: Vec<String> = (read("/slices")?.as_array().unwrap().iter())
        .map(|slice| slice["name"].as_str().unwrap().to_owned())
        .collect();
    let mut slices = Vec::new();
    for name in &names {
        let ports = read(&format!("/slices/{name}/ports"))?;
        let mut listed = Vec::new();
        for port in ports.as_array().unwrap() {
            let port = port["name"].as_str().unwrap();
            let macs = read(&format!("/slices/{name}/ports/{port}/mac_addresses"))?;
            let macs: Vec<Value> = (macs.as_array().unwrap().iter())
                .map(|mac| mac.get("name").unwrap_or(mac).clone())
                .collect();
            listed.push(json!({"port": port, "macs": macs}));
        }
        slices.push(json!({"name": name, "ports": listed}));
    }
    Some(Value::Array(slices))
}

/// What the controller holds, as `GET /metrics` counts it: slices, bound ports, bound MAC
/// addresses.
fn controller_counts(daemon: &Daemon) -> [Option<f64>; 3] {
    [
        "sliced_slices",
        "sliced_bound_ports",
        "sliced_bound_mac_addresses",
    ]
    .map(|name| metric(daemon, name))
}

/// The same counts, from what REST serves (no port is in two slices here).
fn rest_counts(served: &Value) -> [Option<f64>; 3] {
    let slices = served.as_array().unwrap();
    let ports = || {
        slices
            .iter()
            .flat_map(|slice| slice["ports"].as_array().unwrap())
    };
    let macs: usize = ports()
        .map(|port| port["macs"].as_array().unwrap().len())
        .sum();
    [slices.len(), ports().count(), macs].map(|count| Some(count as f64))
}

/// Waits until REST and the controller of `daemon` agree on `expected`, and the metric
/// counts `skipped` keys.
fn agree_on(daemon: &Daemon, expected: &Value, skipped: f64) {
    let agreed = eventually(PROPAGATION, || {
        served(daemon).as_ref() == Some(expected)
            && controller_counts(daemon) == rest_counts(expected)
            && metric(daemon, "sliced_etcd_foreign_keys") == Some(skipped)
    });
    assert!(
        agreed,
        "REST {:?}, controller {:?}, skipped {:?}; expected {expected} and {skipped} skipped",
        served(daemon),
        controller_counts(daemon),
        metric(daemon, "sliced_etcd_foreign_keys"),
    );
}

#[test]
fn keys_sliced_did_not_write_are_neither_served_nor_enforced_on_any_instance() {
    let etcd = LocalEtcd::start();
    // A master key on no lease, naming no member, before any instance starts.
    etcd.etcdctl(None, &["put", "/sliced/master", "evil"]);
    let dir_a = tempfile::tempdir().unwrap();
    let a = start_on(&etcd, &dir_a);
    a.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    let (status, body) = status_json(
        agent()
            .post(&a.url("/slices"))
            .send_json(json!({"name": "zombie"})),
    );
    assert_eq!(status, 201, "{body}");

    // A slice's port and MAC addresses without the slice, a MAC address without its
    // port, and a port and an address of `zombie` in another spelling.
    put(&etcd, "p/ghost/1-2");
    put(&etcd, "m/ghost/1-2/000000000002");
    put(&etcd, "m/ghost/2-1/000000000003");
    put(&etcd, "m/zombie/1-1/000000000004");
    put(&etcd, "p/zombie/01-01");
    put(&etcd, "m/zombie/1-1/0000000000AB");
    let expected = json!([
        {"name": "blue", "ports": [{"port": "0x1:1", "macs": ["00:00:00:00:00:01"]}]},
        {"name": "zombie", "ports": []},
    ]);
    agree_on(&a, &expected, 6.0);
    assert_eq!(get(&a, "/slices/ghost").0, 404);
    // What is not listed cannot be deleted either; the slice takes it all with it.
    let delete = |daemon: &Daemon, path: &str, body: Value| {
        status_json(agent().delete(&daemon.url(path)).send_json(body)).0
    };
    assert_eq!(
        delete(&a, "/slices/zombie/ports", json!({"dpid": 1, "port_no": 1})),
        404
    );

    // An instance started now sees the same, and both stay up.
    let dir_b = tempfile::tempdir().unwrap();
    let b = start_on(&etcd, &dir_b);
    agree_on(&b, &expected, 6.0);

    // The ghost's slice key written afterwards: its port and address count, everywhere.
    put(&etcd, "s/ghost");
    let with_ghost = json!([
        expected[0],
        expected[1],
        {"name": "ghost", "ports": [{"port": "0x1:2", "macs": ["00:00:00:00:00:02"]}]},
    ]);
    agree_on(&a, &with_ghost, 4.0);
    agree_on(&b, &with_ghost, 4.0);
    assert_eq!(delete(&b, "/slices", json!({"name": "zombie"})), 200);
    let keys = etcd.etcdctl(
        None,
        &["get", "--prefix", "--keys-only", "/sliced/p/zombie"],
    );
    assert_eq!(
        keys.trim(),
        "",
        "zombie's keys in another spelling went with it"
    );
    etcd.etcdctl(None, &["del", "/sliced/s/ghost"]);
    let only_blue = json!([expected[0]]);
    agree_on(&a, &only_blue, 3.0);
    agree_on(&b, &only_blue, 3.0);

    // Nobody stood by for `evil`: one of the two is master.
    let cluster = a.get_json("/cluster");
    let master = cluster["master"].as_str().unwrap_or_default();
    assert!(
        [
            a.get_json("/cluster")["instance"].clone(),
            b.get_json("/cluster")["instance"].clone()
        ]
        .contains(&json!(master)),
        "{cluster}"
    );
}
