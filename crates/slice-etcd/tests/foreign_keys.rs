//! Keys under the prefix that sliced did not write, written with etcdctl as another
//! writer of the prefix would: records without their slice or port, keys in another
//! spelling, a fabric declaration sliced would not write, and a `master` key that is no
//! member's. None is served, none reaches the
//! listeners (the controller) unless the REST view has it too, none stops the election.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use slice_core::{
    Change, DeclaredFabric, FabricDeclarations, Host, MacAddress, Membership, MembershipSource,
    Port, PortId, Slice, SliceError, SliceName, SliceRead, SliceWrite, StoreError,
};
use slice_etcd::test_server::{poll, LocalEtcd};
use slice_etcd::{ElectionConfig, EtcdStore, MasterElection, DEFAULT_LEASE_TTL, DEFAULT_PREFIX};

/// Longer than a change or an election takes on a loaded machine.
const SETTLE: Duration = Duration::from_secs(20);

fn name(text: &str) -> SliceName {
    text.parse().unwrap()
}

fn mac(last: u8) -> MacAddress {
    MacAddress::new([0, 0, 0, 0, 0, last])
}

fn open(etcd: &LocalEtcd) -> Arc<EtcdStore> {
    Arc::new(EtcdStore::open(&[etcd.endpoint()], DEFAULT_PREFIX).unwrap())
}

fn etcdctl(etcd: &LocalEtcd, args: &[&str]) -> String {
    etcd.etcdctl(None, args)
}

fn put(etcd: &LocalEtcd, key: &str) {
    etcdctl(etcd, &["put", &format!("{DEFAULT_PREFIX}{key}"), ""]);
}

/// The keys under the prefix, without it.
fn keys(etcd: &LocalEtcd) -> Vec<String> {
    etcdctl(etcd, &["get", "--prefix", "--keys-only", DEFAULT_PREFIX])
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| line.trim_start_matches(DEFAULT_PREFIX).to_owned())
        .collect()
}

/// A store with a listener that keeps what it hears as the controller does: a membership
/// built from the snapshot and every change after it.
struct Watched {
    store: Arc<EtcdStore>,
    membership: Arc<Mutex<Membership>>,
    heard: Arc<Mutex<Vec<Change>>>,
}

impl Watched {
    fn open(etcd: &LocalEtcd) -> Self {
        let store = open(etcd);
        let membership = Arc::new(Mutex::new(Membership::default()));
        let heard = Arc::new(Mutex::new(Vec::new()));
        let (index, sink) = (membership.clone(), heard.clone());
        store.subscribe(Box::new(move |change| {
            index.lock().unwrap().apply(change);
            sink.lock().unwrap().push(change.clone());
        }));
        *membership.lock().unwrap() = Membership::from_slices(&store.snapshot().unwrap());
        Self {
            store,
            membership,
            heard,
        }
    }

    fn heard(&self) -> Vec<Change> {
        std::mem::take(&mut *self.heard.lock().unwrap())
    }

    /// Waits until every revision so far is applied: a write returns once its own is, and
    /// the watch applies revisions in order.
    fn sync(&self) {
        self.store.create_slice(&name("sync")).unwrap();
        self.store.delete_slice(&name("sync")).unwrap();
        let _ = self.heard();
    }

    /// The REST view (the snapshot) and the listener's membership agree.
    fn assert_agree(&self) {
        let served = self.store.snapshot().unwrap();
        assert_eq!(
            summary(&self.membership.lock().unwrap()),
            summary(&Membership::from_slices(&served)),
            "the listener and the REST view disagree; REST: {served:?}"
        );
    }
}

/// What the controller asks of its membership.
fn summary(index: &Membership) -> (usize, usize, usize, Vec<(Host, Vec<SliceName>)>) {
    let mut members: Vec<(Host, Vec<SliceName>)> = index
        .members()
        .map(|host| (*host, index.slices_of(host).to_vec()))
        .collect();
    members.sort();
    (
        index.slice_count(),
        index.bound_port_count(),
        index.bound_mac_count(),
        members,
    )
}

fn ghost() -> Slice {
    Slice {
        name: name("ghost"),
        ports: vec![Port {
            id: PortId::new(1, 1),
            macs: vec![mac(1), mac(2)],
        }],
    }
}

#[test]
fn a_port_and_mac_addresses_without_their_slice_count_only_while_it_exists() {
    let etcd = LocalEtcd::start();
    let watched = Watched::open(&etcd);
    put(&etcd, "p/ghost/1-1");
    put(&etcd, "m/ghost/1-1/000000000001");
    // A MAC address whose port key is missing, in a slice that is not there either.
    put(&etcd, "m/ghost/2-2/000000000003");
    watched.sync();
    assert_eq!(watched.heard(), []);
    assert_eq!(watched.store.snapshot().unwrap(), []);
    assert!(matches!(
        watched.store.check_slice(&name("ghost")),
        Err(StoreError::Slice(SliceError::SliceNotFound(_)))
    ));
    assert_eq!(watched.store.skipped_keys(), 3);
    watched.assert_agree();
    // An instance that starts now agrees.
    assert_eq!(open(&etcd).snapshot().unwrap(), []);

    // Its slice written afterwards by the same other writer: what is under it counts.
    put(&etcd, "s/ghost");
    put(&etcd, "m/ghost/1-1/000000000002");
    let served = poll(
        SETTLE,
        || watched.store.snapshot().unwrap(),
        |served| *served == [ghost()],
    );
    assert_eq!(served, [ghost()]);
    let heard = watched.heard();
    assert_eq!(heard[0], Change::SliceCreated(name("ghost")), "{heard:?}");
    watched.assert_agree();
    assert_eq!(watched.store.skipped_keys(), 1, "the MAC address of 2-2");
    assert_eq!(open(&etcd).snapshot().unwrap(), [ghost()]);

    // The slice key deleted alone: nothing under it counts any more, on every instance.
    etcdctl(&etcd, &["del", &format!("{DEFAULT_PREFIX}s/ghost")]);
    poll(
        SETTLE,
        || watched.store.snapshot().unwrap(),
        |served| served.is_empty(),
    );
    assert_eq!(watched.heard(), [Change::SliceDeleted(ghost())]);
    watched.assert_agree();
    assert_eq!(watched.store.skipped_keys(), 4);
    assert_eq!(open(&etcd).snapshot().unwrap(), []);
}

#[test]
fn keys_in_another_spelling_are_not_served_and_go_with_their_slice() {
    let etcd = LocalEtcd::start();
    let watched = Watched::open(&etcd);
    watched.store.create_slice(&name("zombie")).unwrap();
    let _ = watched.heard();
    put(&etcd, "p/zombie/01-01");
    put(&etcd, "p/zombie/1-1");
    put(&etcd, "m/zombie/1-1/0000000000AB");
    put(&etcd, "m/zombie/1-1/0a0000000001");
    put(&etcd, "x/whatever");
    watched.sync();
    let zombie = Slice {
        name: name("zombie"),
        ports: vec![Port {
            id: PortId::new(1, 1),
            macs: vec![MacAddress::new([0x0a, 0, 0, 0, 0, 1])],
        }],
    };
    assert_eq!(
        watched.store.snapshot().unwrap(),
        std::slice::from_ref(&zombie)
    );
    assert_eq!(watched.store.skipped_keys(), 3);
    watched.assert_agree();
    // What GET shows, DELETE finds; what it does not show is gone with its slice.
    let deleted = watched.store.delete_slice(&name("zombie")).unwrap();
    assert_eq!(deleted, zombie);
    assert_eq!(keys(&etcd), ["x/whatever"]);
    assert_eq!(watched.store.skipped_keys(), 1);
    watched.assert_agree();
}

#[test]
fn what_sliced_creates_starts_without_what_another_writer_left_under_it() {
    let etcd = LocalEtcd::start();
    let watched = Watched::open(&etcd);
    let store = &watched.store;
    let fresh = name("fresh");
    put(&etcd, "p/fresh/1-1");
    put(&etcd, "m/fresh/1-1/000000000001");
    put(&etcd, "p/fresh/01-1");
    store.create_slice(&fresh).unwrap();
    assert_eq!(store.snapshot().unwrap(), [Slice::empty(fresh.clone())]);
    assert_eq!(keys(&etcd), ["s/fresh"]);

    // A port made by adding a MAC address: the one address, not what was left under it.
    put(&etcd, "m/fresh/2-2/000000000002");
    put(&etcd, "m/fresh/2-2/000000000003");
    put(&etcd, "m/fresh/2-2/000000000004");
    watched.sync();
    assert!(store.add_mac(&fresh, PortId::new(2, 2), mac(3)).unwrap());
    assert_eq!(store.macs(&fresh, PortId::new(2, 2)).unwrap(), [mac(3)]);
    // A port added alone.
    put(&etcd, "m/fresh/3-3/000000000005");
    store.add_port(&fresh, PortId::new(3, 3)).unwrap();
    assert_eq!(store.macs(&fresh, PortId::new(3, 3)).unwrap(), []);
    assert_eq!(
        keys(&etcd),
        [
            "m/fresh/2-2/000000000003",
            "p/fresh/2-2",
            "p/fresh/3-3",
            "s/fresh"
        ]
    );
    watched.assert_agree();

    // An apply ends equal to the declaration, over keys the plan writes itself too.
    put(&etcd, "p/planned/1-1");
    put(&etcd, "m/planned/1-1/000000000006");
    put(&etcd, "m/planned/1-1/000000000007");
    put(&etcd, "p/planned/2-2");
    watched.sync();
    let planned = Slice {
        name: name("planned"),
        ports: vec![Port {
            id: PortId::new(1, 1),
            macs: vec![mac(7)],
        }],
    };
    let mut declared = store.snapshot().unwrap();
    declared.push(planned);
    store.apply(&declared).unwrap();
    assert_eq!(store.snapshot().unwrap(), declared);
    assert_eq!(open(&etcd).snapshot().unwrap(), declared);
    assert_eq!(store.skipped_keys(), 0);
    watched.assert_agree();
}

#[test]
fn a_fabric_value_that_is_no_declaration_allows_no_link_until_a_valid_one() {
    let etcd = LocalEtcd::start();
    let watched = Watched::open(&etcd);
    let store = &watched.store;
    let key = format!("{DEFAULT_PREFIX}fabric");
    let declared = DeclaredFabric::parse(&["0x1:10-0x2:10"]).unwrap();
    store.declare_fabric(&declared).unwrap();
    assert_eq!(watched.heard(), [Change::FabricDeclared(declared.clone())]);

    // A valid line then a bad one: none of it is read, and no link may form (the fail
    // closed reading every instance agrees on), rather than links being discovered again.
    etcdctl(&etcd, &["put", &key, "0x1:10-0x2:10\nnot a port\n"]);
    let none = DeclaredFabric::unreadable();
    let read = poll(
        SETTLE,
        || store.declared_fabric().unwrap(),
        |read| *read == none,
    );
    assert_eq!(read, none);
    // Told with the read, under the copy's one lock.
    assert_eq!(watched.heard(), [Change::FabricDeclared(none.clone())]);
    assert_eq!(store.skipped_keys(), 1);
    let started_now = open(&etcd);
    assert_eq!(started_now.declared_fabric().unwrap(), none);
    assert_eq!(started_now.skipped_keys(), 1);
    // Another bad value over it tells nobody: the next revision told is a later write's.
    etcdctl(&etcd, &["put", &key, "0x1:1 0x2:1"]);
    store.create_slice(&name("later")).unwrap();
    assert_eq!(watched.heard(), [Change::SliceCreated(name("later"))]);
    assert_eq!(store.declared_fabric().unwrap(), none);
    assert_eq!(store.skipped_keys(), 1);

    let replaced = DeclaredFabric::parse(&["0x3:1", "0x4:1"]).unwrap();
    store.declare_fabric(&replaced).unwrap();
    assert_eq!(store.declared_fabric().unwrap(), replaced);
    assert_eq!(watched.heard(), [Change::FabricDeclared(replaced.clone())]);
    assert_eq!(store.skipped_keys(), 0);
    assert!(poll(
        SETTLE,
        || started_now.declared_fabric().unwrap() == replaced,
        |seen| *seen
    ));
    // The same text put again by another writer tells nobody.
    etcdctl(&etcd, &["put", &key, &replaced.to_text()]);
    store.create_slice(&name("after")).unwrap();
    assert_eq!(watched.heard(), [Change::SliceCreated(name("after"))]);
}

fn election(etcd: &LocalEtcd, id: &str) -> MasterElection {
    MasterElection::start(ElectionConfig {
        endpoints: vec![etcd.endpoint()],
        prefix: DEFAULT_PREFIX.to_owned(),
        id: id.to_owned(),
        http: format!("{id}:9292"),
        openflow: format!("{id}:6653"),
        lease_ttl: DEFAULT_LEASE_TTL,
        access: slice_etcd::Access::default(),
    })
    .unwrap()
}

fn master_within(election: &MasterElection, within: Duration) -> bool {
    poll(
        within,
        || election.leadership().borrow().is_master(),
        |master| *master,
    )
}

#[test]
fn a_master_key_without_a_lease_does_not_keep_anyone_standing_by() {
    let etcd = LocalEtcd::start();
    etcdctl(&etcd, &["put", &format!("{DEFAULT_PREFIX}master"), "evil"]);
    let a = election(&etcd, "a");
    assert!(
        master_within(&a, SETTLE),
        "standing by for a master key on no lease: {:?}",
        a.leadership().borrow()
    );
    let holder = etcdctl(&etcd, &["get", "--print-value-only", "/sliced/master"]);
    assert_eq!(holder.trim(), "a");
}

#[test]
fn a_master_key_on_a_lease_of_no_member_does_not_keep_anyone_standing_by() {
    let etcd = LocalEtcd::start();
    // `lease 694d8a2b1c3e4f5a granted with TTL(600s)`: a lease nobody lets expire soon.
    let granted = etcdctl(&etcd, &["lease", "grant", "600"]);
    let lease = granted.split_whitespace().nth(1).unwrap().to_owned();
    let key = format!("{DEFAULT_PREFIX}master");
    etcdctl(&etcd, &["put", &format!("--lease={lease}"), &key, "evil"]);
    // A member record of that name on another lease does not make it one.
    etcdctl(
        &etcd,
        &["put", &format!("{DEFAULT_PREFIX}members/evil"), "{}"],
    );
    let a = election(&etcd, "a");
    assert!(
        master_within(&a, SETTLE),
        "standing by for a master of no member: {:?}",
        a.leadership().borrow()
    );
}

#[test]
fn a_live_masters_key_is_left_alone() {
    let etcd = LocalEtcd::start();
    let (a, b) = (election(&etcd, "a"), election(&etcd, "b"));
    let one_master = |states: &[slice_core::Leadership; 2]| {
        states.iter().filter(|state| state.is_master()).count() == 1
            && states.iter().all(|state| state.generation().is_some())
    };
    let now = || {
        [
            a.leadership().borrow().clone(),
            b.leadership().borrow().clone(),
        ]
    };
    let settled = poll(SETTLE, now, one_master);
    assert!(one_master(&settled), "{settled:?}");
    // Several renewal rounds and claims later, the same master under the same generation.
    std::thread::sleep(DEFAULT_LEASE_TTL * 3);
    assert_eq!(now(), settled);
}
