//! The master election against a real etcd: one master among the instances, a new one
//! within the lease's time to live (plus a second) of the old one's death, generations
//! that only grow, a master that steps down by its own clock when etcd goes, the members'
//! records, and the session key the instances share.

use std::time::{Duration, Instant};

use slice_core::Leadership;
use slice_etcd::test_server::{poll, LocalEtcd};
use slice_etcd::{
    election, ElectionConfig, EtcdStore, MasterElection, DEFAULT_LEASE_TTL, DEFAULT_PREFIX,
};

/// Longer than an election takes on a loaded machine, for what has no deadline of its own.
const SETTLE: Duration = Duration::from_secs(20);

fn config(etcd: &LocalEtcd, id: &str) -> ElectionConfig {
    ElectionConfig {
        endpoints: vec![etcd.endpoint()],
        prefix: DEFAULT_PREFIX.to_owned(),
        id: id.to_owned(),
        http: format!("{id}:9292"),
        openflow: format!("{id}:6653"),
        lease_ttl: DEFAULT_LEASE_TTL,
        access: slice_etcd::Access::default(),
    }
}

fn start(etcd: &LocalEtcd, id: &str) -> MasterElection {
    MasterElection::start(config(etcd, id)).unwrap()
}

fn now_of(election: &MasterElection) -> Leadership {
    election.leadership().borrow().clone()
}

/// Waits until exactly one of `elections` is master and the others name it; its index
/// and generation.
fn settled(elections: &[&MasterElection]) -> (usize, u64) {
    settled_after(elections, 0)
}

/// [`settled`] on a generation newer than `older`.
fn settled_after(elections: &[&MasterElection], older: u64) -> (usize, u64) {
    let states = poll(
        SETTLE,
        || elections.iter().map(|e| now_of(e)).collect::<Vec<_>>(),
        |states| {
            let masters: Vec<&Leadership> = states.iter().filter(|s| s.is_master()).collect();
            let [Leadership::Master { generation }] = masters[..] else {
                return false;
            };
            *generation > older
                && states
                    .iter()
                    .all(|state| state.generation() == Some(*generation))
        },
    );
    let master = states
        .iter()
        .position(Leadership::is_master)
        .unwrap_or_else(|| panic!("no single master: {states:?}"));
    assert_eq!(
        states.iter().filter(|s| s.is_master()).count(),
        1,
        "{states:?}"
    );
    for (at, state) in states.iter().enumerate() {
        if at != master {
            assert_eq!(
                state,
                &Leadership::Standby {
                    master: Some(elections[master].id().to_owned()),
                    generation: states[master].generation(),
                }
            );
        }
    }
    (master, states[master].generation().unwrap())
}

#[test]
fn of_two_instances_on_one_etcd_exactly_one_is_master_and_both_are_listed() {
    let etcd = LocalEtcd::start();
    let (a, b) = (start(&etcd, "a"), start(&etcd, "b"));
    let (master, _) = settled(&[&a, &b]);
    let standby = if master == 0 { &b } else { &a };
    standby.set_switch_roles(election::switch_roles([(0x2, "slave"), (0x1, "slave")]));
    let members = poll(
        SETTLE,
        || a.members(),
        |members| members.len() == 2 && !members[1].switches.is_empty(),
    );
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(members[0].http, "a:9292");
    assert_eq!(members[1].openflow, "b:6653");
    let standby_record = &members[if master == 0 { 1 } else { 0 }];
    let roles: Vec<(u64, &str)> = standby_record
        .switches
        .iter()
        .map(|s| (s.dpid, s.role.as_str()))
        .collect();
    assert_eq!(roles, [(0x1, "slave"), (0x2, "slave")]);
    assert!(a.etcd_health().healthy);
}

#[test]
fn when_the_master_dies_the_other_is_master_within_the_ttl_and_a_second_with_a_newer_generation() {
    let etcd = LocalEtcd::start();
    let (a, b) = (start(&etcd, "a"), start(&etcd, "b"));
    let (master, generation) = settled(&[&a, &b]);
    let (dead, survivor) = if master == 0 { (a, b) } else { (b, a) };
    // Dropped without resigning: the lease is left to expire, as after a crash.
    drop(dead);
    let died = Instant::now();
    let state = poll(
        DEFAULT_LEASE_TTL + Duration::from_secs(1),
        || now_of(&survivor),
        Leadership::is_master,
    );
    let Leadership::Master { generation: newer } = state else {
        panic!(
            "not master {:?} after the master died: {state:?}",
            died.elapsed()
        );
    };
    assert!(newer > generation, "{newer} after {generation}");
    // Its record went with its lease.
    let members = poll(SETTLE, || survivor.members(), |members| members.len() == 1);
    assert_eq!(members.len(), 1, "{members:?}");
}

#[test]
fn a_master_that_resigns_is_replaced_at_once() {
    let etcd = LocalEtcd::start();
    let (a, b) = (start(&etcd, "a"), start(&etcd, "b"));
    let (master, _) = settled(&[&a, &b]);
    let (leaving, staying) = if master == 0 { (a, b) } else { (b, a) };
    leaving.resign();
    let state = poll(SETTLE, || now_of(&staying), Leadership::is_master);
    assert!(state.is_master(), "{state:?}");
}

#[test]
fn a_master_cut_off_from_etcd_steps_down_before_its_lease_can_expire_and_comes_back() {
    let mut etcd = LocalEtcd::start();
    let a = start(&etcd, "a");
    let (_, generation) = settled(&[&a]);
    etcd.stop();
    let stopped = Instant::now();
    // The last renewal etcd confirmed came before the stop, so the lease cannot expire
    // before `stopped + TTL`; the master must have stepped down by then.
    let state = poll(DEFAULT_LEASE_TTL, || now_of(&a), |state| !state.is_master());
    assert!(
        !state.is_master(),
        "still master {:?} after etcd went",
        stopped.elapsed()
    );
    assert!(!a.etcd_health().healthy);
    etcd.restart();
    let state = poll(SETTLE, || now_of(&a), Leadership::is_master);
    let Leadership::Master { generation: again } = state else {
        panic!("not master again after etcd came back: {state:?}");
    };
    // A restarted etcd extends the leases it kept, so the key may still be on the first
    // lease (the same generation) or, had the lease expired, on a new one.
    assert!(again >= generation, "{again} after {generation}");
}

#[test]
fn instances_share_one_session_key_made_by_the_first() {
    let etcd = LocalEtcd::start();
    let a = EtcdStore::open(&[etcd.endpoint()], DEFAULT_PREFIX).unwrap();
    let b = EtcdStore::open(&[etcd.endpoint()], DEFAULT_PREFIX).unwrap();
    let key = a.shared_session_key().unwrap();
    assert_eq!(key.len(), slice_etcd::SESSION_KEY_LEN);
    assert_eq!(b.shared_session_key().unwrap(), key);
    assert_eq!(a.shared_session_key().unwrap(), key);
    // Another prefix is another cluster, with a key of its own.
    let other = EtcdStore::open(&[etcd.endpoint()], "/other/").unwrap();
    assert_ne!(other.shared_session_key().unwrap(), key);
}

/// Writes `value` to the master key by hand, as an operator with etcdctl might.
fn overwrite_master_key(etcd: &LocalEtcd, value: Option<&str>) {
    let endpoint = etcd.endpoint();
    let value = value.map(str::to_owned);
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async move {
            let mut client = etcd_client::Client::connect([endpoint], None)
                .await
                .unwrap();
            let key = format!("{DEFAULT_PREFIX}master");
            match value {
                Some(value) => drop(client.put(key, value, None).await.unwrap()),
                None => drop(client.delete(key, None).await.unwrap()),
            }
        });
}

#[test]
fn a_master_whose_key_is_deleted_or_overwritten_by_hand_is_replaced_by_a_newer_one() {
    let etcd = LocalEtcd::start();
    let (a, b) = (start(&etcd, "a"), start(&etcd, "b"));
    let (_, generation) = settled(&[&a, &b]);
    overwrite_master_key(&etcd, None);
    let (_, newer) = settled_after(&[&a, &b], generation);
    assert!(newer > generation, "{newer} after {generation}");
    // A key on no lease, naming no member: nobody stands by for it (it would never
    // expire); it is removed and a master elected past it, under a newer generation.
    overwrite_master_key(&etcd, Some("intruder"));
    let (_, newest) = settled_after(&[&a, &b], newer);
    assert!(newest > newer, "{newest} after {newer}");
}
