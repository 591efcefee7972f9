//! One etcd member of three down changes nothing: the store opens, every write succeeds,
//! every instance keeps seeing the others' writes, and the master stays master. With the
//! client spreading requests over all members, each of these failed a share of the time.

use std::time::{Duration, Instant};

use slice_core::{Leadership, SliceName, SliceRead, SliceWrite};
use slice_etcd::test_server::{poll, LocalEtcd};
use slice_etcd::{ElectionConfig, EtcdStore, MasterElection, DEFAULT_LEASE_TTL, DEFAULT_PREFIX};

/// Longer than anything here takes on a loaded machine, for what has no deadline of its
/// own.
const SETTLE: Duration = Duration::from_secs(20);

/// Writes in a row that must all succeed: with requests spread over three members, one
/// of them down, twenty in a row succeeded by chance about once in a thousand runs.
const WRITES: usize = 20;

fn name(text: &str) -> SliceName {
    text.parse().unwrap()
}

/// Every member's endpoint, starting with member `first`.
fn endpoints_from(cluster: &[LocalEtcd], first: usize) -> Vec<String> {
    (0..cluster.len())
        .map(|at| cluster[(first + at) % cluster.len()].endpoint())
        .collect()
}

#[test]
fn a_store_opens_and_writes_with_its_first_member_down() {
    let mut cluster = LocalEtcd::cluster(3);
    cluster[0].stop();
    let store = EtcdStore::open(&endpoints_from(&cluster, 0), DEFAULT_PREFIX)
        .expect("two members of three are a quorum");
    for at in 0..WRITES {
        store
            .create_slice(&name(&format!("s{at}")))
            .unwrap_or_else(|err| panic!("write {at} failed with one member down: {err}"));
    }
    assert_ne!(store.endpoint_in_use(), cluster[0].endpoint());
}

#[test]
fn when_the_member_in_use_dies_writes_go_on_and_the_copy_follows_the_others() {
    let mut cluster = LocalEtcd::cluster(3);
    // Both talk to member 0 first; the watcher's copy is kept by a watch on member 0.
    let writer = EtcdStore::open(&endpoints_from(&cluster, 0), DEFAULT_PREFIX).unwrap();
    let watcher = EtcdStore::open(&endpoints_from(&cluster, 0), DEFAULT_PREFIX).unwrap();
    // A third instance on member 2, whose writes the watcher must keep hearing of.
    let elsewhere = EtcdStore::open(&endpoints_from(&cluster, 2), DEFAULT_PREFIX).unwrap();
    writer.create_slice(&name("before")).unwrap();
    cluster[0].stop();
    for at in 0..WRITES {
        writer
            .create_slice(&name(&format!("w{at}")))
            .unwrap_or_else(|err| panic!("write {at} failed after its member died: {err}"));
    }
    elsewhere.create_slice(&name("elsewhere")).unwrap();
    let seen = poll(
        SETTLE,
        || watcher.check_slice(&name("elsewhere")).is_ok(),
        |seen| *seen,
    );
    assert!(seen, "the watcher's copy stopped when its member died");
    assert_ne!(writer.endpoint_in_use(), cluster[0].endpoint());
}

fn election(cluster: &[LocalEtcd], first: usize, id: &str) -> MasterElection {
    MasterElection::start(ElectionConfig {
        endpoints: endpoints_from(cluster, first),
        prefix: DEFAULT_PREFIX.to_owned(),
        id: id.to_owned(),
        http: format!("{id}:9292"),
        openflow: format!("{id}:6653"),
        lease_ttl: DEFAULT_LEASE_TTL,
        access: slice_etcd::Access::default(),
    })
    .unwrap()
}

fn now_of(election: &MasterElection) -> Leadership {
    election.leadership().borrow().clone()
}

/// Which member is etcd's leader now.
fn leader(cluster: &[LocalEtcd]) -> usize {
    let endpoints: Vec<String> = cluster.iter().map(LocalEtcd::endpoint).collect();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async move {
            let mut ids = Vec::new();
            let mut leader = None;
            for endpoint in &endpoints {
                let mut client = etcd_client::Client::connect([endpoint], None)
                    .await
                    .unwrap();
                let status = client.status().await.unwrap();
                ids.push(status.header().map(|header| header.member_id()));
                leader = Some(status.leader());
            }
            ids.iter()
                .position(|id| *id == leader)
                .expect("etcd's leader is one of its members")
        })
}

/// Starts `a` on member `first` and waits until it is master; then `b`, a standby, on
/// the next member. `a`'s generation.
fn master_and_standby(
    cluster: &[LocalEtcd],
    first: usize,
) -> (MasterElection, MasterElection, u64) {
    let a = election(cluster, first, "a");
    let master = poll(SETTLE, || now_of(&a), Leadership::is_master);
    let Leadership::Master { generation } = master else {
        panic!("a alone never became master: {master:?}");
    };
    let b = election(cluster, first + 1, "b");
    let standby = poll(SETTLE, || now_of(&b), |state| state.generation().is_some());
    assert_eq!(standby.generation(), Some(generation), "{standby:?}");
    (a, b, generation)
}

/// Three lease lifetimes: long enough for a master that lost its lease to have been
/// replaced, and for a flapping election to have shown itself.
fn for_three_lease_lifetimes(mut check: impl FnMut()) {
    let until = Instant::now() + DEFAULT_LEASE_TTL * 3;
    while Instant::now() < until {
        check();
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_master_stays_master_when_a_follower_member_it_talks_to_dies() {
    let mut cluster = LocalEtcd::cluster(3);
    let follower = (leader(&cluster) + 1) % cluster.len();
    let (a, b, generation) = master_and_standby(&cluster, follower);
    cluster[follower].stop();
    for_three_lease_lifetimes(|| {
        assert_eq!(
            now_of(&a),
            Leadership::Master { generation },
            "the master changed when one etcd member of three died"
        );
        assert!(!now_of(&b).is_master(), "{:?}", now_of(&b));
    });
}

#[test]
fn when_etcds_leader_dies_the_master_at_most_pauses_and_keeps_its_generation() {
    let mut cluster = LocalEtcd::cluster(3);
    let etcd_leader = leader(&cluster);
    let (a, b, generation) = master_and_standby(&cluster, etcd_leader);
    cluster[etcd_leader].stop();
    // etcd elects a new leader in about a second, during which no renewal can be
    // confirmed: the master may stand by for that long, but its lease lives on, so
    // nobody else may take over and it comes back under the same generation.
    for_three_lease_lifetimes(|| {
        let state = now_of(&a);
        assert!(
            matches!(
                state,
                Leadership::Master { generation: g } if g == generation
            ) || state
                == Leadership::Standby {
                    master: None,
                    generation: None
                },
            "{state:?}"
        );
        assert!(!now_of(&b).is_master(), "{:?}", now_of(&b));
    });
    let state = poll(SETTLE, || now_of(&a), Leadership::is_master);
    assert_eq!(state, Leadership::Master { generation });
}
