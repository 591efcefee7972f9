//! What is etcd's alone: the watch that keeps each instance's copy current across a
//! restart of etcd, a lost etcd, and two instances sharing one etcd.

use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use slice_core::{
    Change, DeclaredFabric, FabricDeclarations, MacAddress, MembershipSource, PortId,
    SessionRevocations, SliceError, SliceName, SliceRead, SliceStore, SliceWrite, StoreError,
};
use slice_etcd::test_server::LocalEtcd;
use slice_etcd::{EtcdStore, DEFAULT_PREFIX};

/// Longer than any change takes to reach another instance on a loaded machine.
const PROPAGATION: Duration = Duration::from_secs(20);

fn name(text: &str) -> SliceName {
    text.parse().unwrap()
}

fn open(etcd: &LocalEtcd) -> Arc<EtcdStore> {
    Arc::new(EtcdStore::open(&[etcd.endpoint()], DEFAULT_PREFIX).unwrap())
}

/// Whether a create succeeded, or had succeeded in an earlier try whose answer was lost
/// (etcd may commit a write it could not confirm).
fn created(result: Result<(), StoreError>) -> bool {
    matches!(
        result,
        Ok(()) | Err(StoreError::Slice(SliceError::SliceExists(_)))
    )
}

/// Polls `check` until it holds; false when it never did within [`PROPAGATION`].
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + PROPAGATION;
    while !check() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn record_changes(store: &dyn SliceStore) -> Arc<Mutex<Vec<Change>>> {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    store.subscribe(Box::new(move |change| {
        sink.lock().unwrap().push(change.clone())
    }));
    heard
}

#[test]
fn two_instances_on_one_etcd_race_one_create_and_see_each_others_writes() {
    let etcd = LocalEtcd::start();
    let (a, b) = (open(&etcd), open(&etcd));
    let heard_by_b = record_changes(b.as_ref());
    let start = Arc::new(Barrier::new(2));
    let racers: Vec<_> = [a.clone(), b.clone()]
        .into_iter()
        .map(|store| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                store.create_slice(&name("contested"))
            })
        })
        .collect();
    let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    assert_eq!(results.iter().filter(|won| won.is_ok()).count(), 1);
    let lost = results.into_iter().find_map(Result::err).unwrap();
    assert!(
        matches!(&lost, StoreError::Slice(SliceError::SliceExists(s)) if *s == name("contested")),
        "{lost:?}"
    );
    let port = PortId::new(1, 1);
    let mac = MacAddress::new([0, 0, 0, 0, 0, 1]);
    a.add_port(&name("contested"), port).unwrap();
    // Another instance sees a write a moment later: until then, maybe not even the slice.
    assert!(eventually(
        || b.ports(&name("contested")).ok() == Some(vec![port])
    ));
    b.add_mac(&name("contested"), port, mac).unwrap();
    assert!(eventually(
        || a.macs(&name("contested"), port).ok() == Some(vec![mac])
    ));
    assert_eq!(a.snapshot().unwrap(), b.snapshot().unwrap());
    assert_eq!(
        *heard_by_b.lock().unwrap(),
        [
            Change::SliceCreated(name("contested")),
            Change::PortAdded {
                slice: name("contested"),
                port
            },
            Change::MacAdded {
                slice: name("contested"),
                port,
                mac
            },
        ],
        "b hears a's writes as well as its own, once each"
    );
}

#[test]
fn a_fabric_declared_through_one_instance_is_read_and_told_once_on_another() {
    let etcd = LocalEtcd::start();
    let (a, b) = (open(&etcd), open(&etcd));
    let heard_by_b = record_changes(b.as_ref());
    let version = b.content_version().unwrap();
    let declared = DeclaredFabric::parse(&["0x1:10-0x2:10", "0x3:1"]).unwrap();
    a.declare_fabric(&declared).unwrap();
    assert!(eventually(|| b.declared_fabric().unwrap() == declared));
    assert_eq!(b.content_version().unwrap(), version, "no slice changed");
    // Already in force on both: nothing is written, so nothing more is told. (A write
    // returns once its writer's copy has applied it, which would move its revision.)
    let revisions = (a.revision(), b.revision());
    a.declare_fabric(&declared).unwrap();
    b.declare_fabric(&declared).unwrap();
    assert_eq!((a.revision(), b.revision()), revisions, "nothing written");
    // b's own write comes back after every revision before it, told or not.
    b.create_slice(&name("after")).unwrap();
    assert_eq!(
        *heard_by_b.lock().unwrap(),
        [
            Change::FabricDeclared(declared.clone()),
            Change::SliceCreated(name("after"))
        ]
    );
    assert_eq!(open(&etcd).declared_fabric().unwrap(), declared);
}

/// What etcd holds at the fabric key, read past every instance's copy.
fn fabric_in_etcd(etcd: &LocalEtcd) -> String {
    let key = format!("{DEFAULT_PREFIX}fabric");
    etcd.etcdctl(None, &["get", "--print-value-only", &key])
}

#[test]
fn a_declaration_is_decided_by_etcd_not_by_a_copy_that_lags() {
    let etcd = LocalEtcd::start();
    let (a, b) = (open(&etcd), open(&etcd));
    let mine = DeclaredFabric::parse(&["0x1:10-0x2:10"]).unwrap();
    // b declares what its copy still holds right after a declared another: each time, its
    // answer means etcd holds b's, whether b's copy had heard of a's or not.
    for round in 1..=20u32 {
        let theirs = DeclaredFabric::parse(&[format!("0x9:{round}")]).unwrap();
        a.declare_fabric(&theirs).unwrap();
        b.declare_fabric(&mine).unwrap();
        assert_eq!(
            fabric_in_etcd(&etcd).trim_end(),
            mine.to_text().trim_end(),
            "round {round}"
        );
        assert_eq!(
            b.declared_fabric().unwrap(),
            mine,
            "b reads its own declaration"
        );
    }
    // An empty declaration over a value no copy reads as one deletes it, so that
    // etcd holds none.
    let key = format!("{DEFAULT_PREFIX}fabric");
    etcd.etcdctl(None, &["put", &key, "not a port"]);
    assert!(eventually(|| b.skipped_keys() == 1));
    b.declare_fabric(&DeclaredFabric::default()).unwrap();
    assert_eq!(fabric_in_etcd(&etcd), "", "the key is gone");
    assert!(eventually(|| a.skipped_keys() == 0 && b.skipped_keys() == 0));
}

#[test]
fn the_watch_resumes_after_etcd_restarts() {
    let mut etcd = LocalEtcd::start();
    let (a, b) = (open(&etcd), open(&etcd));
    a.create_slice(&name("before")).unwrap();
    assert!(eventually(|| b.check_slice(&name("before")).is_ok()));
    let heard_by_b = record_changes(b.as_ref());
    etcd.stop();
    etcd.restart();
    // The first write after the restart may find the client still reconnecting.
    assert!(eventually(|| created(a.create_slice(&name("after")))));
    assert!(eventually(
        || b.slices().unwrap() == [name("before"), name("after")]
    ));
    assert_eq!(
        *heard_by_b.lock().unwrap(),
        [Change::SliceCreated(name("after"))]
    );
}

#[test]
fn without_etcd_writes_are_unavailable_reads_answer_and_all_resumes_after() {
    let mut etcd = LocalEtcd::start();
    let store = open(&etcd);
    store.create_slice(&name("kept")).unwrap();
    store.add_port(&name("kept"), PortId::new(1, 1)).unwrap();
    etcd.stop();
    for write in [
        store.create_slice(&name("new")).map(drop),
        store.add_port(&name("kept"), PortId::new(2, 2)).map(drop),
        store.delete_slice(&name("kept")).map(drop),
        store.revoke_session(b"session", 200, 100),
    ] {
        assert!(
            matches!(write, Err(StoreError::Unavailable(_))),
            "{write:?}"
        );
    }
    // Reads come from the instance's copy, which still holds the last state.
    assert_eq!(store.slices().unwrap(), [name("kept")]);
    assert_eq!(store.ports(&name("kept")).unwrap(), [PortId::new(1, 1)]);
    assert!(!store.session_revoked(b"session", 50).unwrap());
    etcd.restart();
    assert!(eventually(|| created(store.create_slice(&name("new")))));
    assert_eq!(store.slices().unwrap(), [name("kept"), name("new")]);
}

#[test]
fn a_lost_quorum_makes_writes_unavailable_while_reads_answer_until_it_returns() {
    let mut members = LocalEtcd::cluster(3);
    // Connected to the member that stays up: what it answers without a quorum is tested,
    // not a refused connection to a stopped one.
    let store = EtcdStore::open(&[members[0].endpoint()], DEFAULT_PREFIX).unwrap();
    store.create_slice(&name("kept")).unwrap();
    store.probe().unwrap();
    // One member of three down changes nothing, once a leader is elected again (it may
    // have been the leader).
    members[1].stop();
    assert!(eventually(|| members[0].is_healthy()));
    store.create_slice(&name("two-of-three")).unwrap();
    members[2].stop();
    let write = store.create_slice(&name("lost"));
    assert!(
        matches!(write, Err(StoreError::Unavailable(_))),
        "{write:?}"
    );
    // Readiness sees it too, within its own short bound.
    let asked = Instant::now();
    let probed = store.probe();
    assert!(
        matches!(probed, Err(StoreError::Unavailable(_))),
        "{probed:?}"
    );
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(
        store.slices().unwrap(),
        [name("kept"), name("two-of-three")]
    );
    members[1].restart();
    assert!(eventually(|| created(store.create_slice(&name("back")))));
    store.probe().unwrap();
    // The refused write may still commit once the quorum is back, when the member kept it
    // in its log (which is why its error says it may have been applied); nothing else
    // can have happened.
    let slices = store.slices().unwrap();
    let lost_committed = [
        name("kept"),
        name("two-of-three"),
        name("lost"),
        name("back"),
    ];
    assert!(
        slices == [name("kept"), name("two-of-three"), name("back")] || slices == lost_committed,
        "{slices:?}"
    );
}

/// A TCP relay between one instance and etcd that the test can cut and heal, so that the
/// instance misses revisions while etcd and every other instance go on.
struct Relay {
    addr: std::net::SocketAddr,
    open: Arc<std::sync::atomic::AtomicBool>,
    streams: Arc<Mutex<Vec<std::net::TcpStream>>>,
}

impl Relay {
    fn to(target: std::net::SocketAddr) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let relay = Self {
            addr: listener.local_addr().unwrap(),
            open: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            streams: Arc::default(),
        };
        let (open, streams) = (relay.open.clone(), relay.streams.clone());
        // Lives as long as the test process: it only ever blocks in accept.
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !open.load(std::sync::atomic::Ordering::SeqCst) {
                    continue; // dropped: the connection is refused
                }
                let Ok(server) = std::net::TcpStream::connect(target) else {
                    continue;
                };
                let mut tracked = streams.lock().unwrap();
                tracked.push(client.try_clone().unwrap());
                tracked.push(server.try_clone().unwrap());
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        relay
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Breaks every relayed connection and refuses new ones.
    fn cut(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
        for stream in self.streams.lock().unwrap().drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    fn heal(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Compacts etcd's history up to its current revision.
fn compact(etcd: &LocalEtcd) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = etcd_client::Client::connect([etcd.endpoint()], None)
            .await
            .unwrap();
        let revision = client
            .get("/", None)
            .await
            .unwrap()
            .header()
            .unwrap()
            .revision();
        let options = etcd_client::CompactionOptions::new().with_physical();
        client.compact(revision, Some(options)).await.unwrap();
    });
}

#[test]
fn an_instance_that_missed_compacted_revisions_rereads_and_tells_the_difference() {
    let etcd = LocalEtcd::start();
    let target = etcd
        .endpoint()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let relay = Relay::to(target);
    let a = open(&etcd);
    let b = Arc::new(EtcdStore::open(&[relay.endpoint()], DEFAULT_PREFIX).unwrap());
    let (gone, port, mac) = (
        name("gone"),
        PortId::new(1, 1),
        MacAddress::new([0, 0, 0, 0, 0, 1]),
    );
    a.create_slice(&gone).unwrap();
    a.add_mac(&gone, port, mac).unwrap();
    a.create_slice(&name("stays")).unwrap();
    assert!(eventually(|| b.macs(&gone, port).ok() == Some(vec![mac])));
    let heard_by_b = record_changes(b.as_ref());

    relay.cut();
    a.delete_slice(&gone).unwrap();
    a.create_slice(&name("new")).unwrap();
    let fabric = DeclaredFabric::parse(&["0x1:1-0x2:1"]).unwrap();
    a.declare_fabric(&fabric).unwrap();
    compact(&etcd);
    relay.heal();

    assert!(eventually(
        || b.slices().unwrap() == [name("stays"), name("new")]
    ));
    assert_eq!(a.snapshot().unwrap(), b.snapshot().unwrap());
    assert_eq!(b.declared_fabric().unwrap(), fabric);
    assert_eq!(
        *heard_by_b.lock().unwrap(),
        [
            Change::SliceDeleted(slice_core::Slice {
                name: gone,
                ports: vec![slice_core::Port {
                    id: port,
                    macs: vec![mac]
                }],
            }),
            Change::SliceCreated(name("new")),
            Change::FabricDeclared(fabric),
        ]
    );
}
