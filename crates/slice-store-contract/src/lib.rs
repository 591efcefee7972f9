//! The store contract, written once against slice-core's `SliceStore` and run against every
//! backend: each test below is a generic function over [`Backend`], and
//! [`contract_tests!`] instantiates all of them for one backend. A backend's crate takes
//! this one as a dev-dependency, implements `Backend` for its fixture in an integration
//! test, and adds one `contract_tests!(module, Fixture);` line.
//!
//! What is one backend's alone (sled's group commit, its integrity checks, its file
//! permissions; etcd's watch, its quorum loss) is tested in that backend's own crate.

mod fabric;

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier, Mutex};

pub use fabric::a_declared_fabric_is_kept_told_and_survives_reopening;
use slice_core::{
    Change, Host, MacAddress, Membership, Plan, PlanError, Port, PortId, Slice, SliceError,
    SliceName, SliceStore, StoreError, Write, Written,
};

/// A backend under test.
pub trait Backend: Sized {
    /// A new, empty store of its own.
    fn fresh() -> Self;

    /// The store, shared like the daemon shares it.
    fn store(&self) -> Arc<dyn SliceStore>;

    /// Closes the store and opens the same data again, as a restarted daemon would; a
    /// backend whose data lives only as long as its handle returns itself. The caller
    /// holds no other handle on the store.
    fn reopen(self) -> Self;
}

/// Instantiates every contract test as a `#[test]` in a module `$module`, for the backend
/// `$backend` (a type that implements [`Backend`]).
#[macro_export]
macro_rules! contract_tests {
    ($module:ident, $backend:ty) => {
        $crate::contract_tests!(@each $module, $backend, [
            slices_list_in_creation_order_not_name_order,
            duplicates_conflict_with_the_spec_messages,
            ports_and_macs_keep_insertion_order,
            adding_a_mac_creates_its_port,
            reads_check_slice_then_port_then_mac,
            writes_check_slice_then_port_then_mac,
            deleting_twice_finds_nothing_the_second_time,
            deletes_cascade_return_what_they_held_and_leave_the_rest,
            a_failed_write_changes_nothing,
            the_content_version_changes_with_every_change_and_nothing_else,
            everything_survives_reopening_in_order,
            listeners_hear_every_committed_change_once_in_order,
            subscribing_before_the_snapshot_loses_no_concurrent_change,
            racing_creates_of_one_slice_admit_exactly_one,
            concurrent_mac_adds_to_one_port_all_land,
            a_revoked_session_stays_revoked_until_it_expires,
            applying_a_declared_state_makes_the_store_equal_to_it,
            applying_the_current_state_writes_nothing,
            a_declaration_that_names_something_twice_changes_nothing,
            writes_as_data_answer_like_the_blocking_methods,
            a_declared_fabric_is_kept_told_and_survives_reopening,
        ]);
    };
    (@each $module:ident, $backend:ty, [$($test:ident),* $(,)?]) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
                        $(
                #[test]
                fn $test() {
                    $crate::$test::<$backend>();
                }
            )*
        }
    };
}

// ---- helpers -----------------------------------------------------------------------------

fn name(text: &str) -> SliceName {
    text.parse().unwrap()
}

fn mac(last: u8) -> MacAddress {
    MacAddress::new([0, 0, 0, 0, 0, last])
}

fn slice_error<T: std::fmt::Debug>(result: Result<T, StoreError>) -> SliceError {
    match result {
        Err(StoreError::Slice(err)) => err,
        other => panic!("expected a slice-contract error, got {other:?}"),
    }
}

// ---- the contract ------------------------------------------------------------------------

pub fn slices_list_in_creation_order_not_name_order<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    assert!(store.slices().unwrap().is_empty());
    for slice in ["zeta", "alpha", "mid"] {
        store.create_slice(&name(slice)).unwrap();
    }
    assert_eq!(
        store.slices().unwrap(),
        [name("zeta"), name("alpha"), name("mid")]
    );
    let mut seen = Vec::new();
    store
        .read_slices(&mut |names| seen = names.cloned().collect())
        .unwrap();
    assert_eq!(seen, store.slices().unwrap());
}

pub fn duplicates_conflict_with_the_spec_messages<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let s = name("s");
    let port = PortId::new(0xab, 1);
    store.create_slice(&s).unwrap();
    assert_eq!(
        slice_error(store.create_slice(&s)).to_string(),
        "Slice s already exists"
    );
    store.add_port(&s, port).unwrap();
    assert_eq!(
        slice_error(store.add_port(&s, port)).to_string(),
        "Port 0xab:1 already exists"
    );
    store.add_mac(&s, port, mac(1)).unwrap();
    assert_eq!(
        slice_error(store.add_mac(&s, port, mac(1))).to_string(),
        "MAC address 00:00:00:00:00:01 already exists"
    );
    // A port that adding a MAC address created is there like any other.
    store.add_mac(&s, PortId::new(2, 2), mac(1)).unwrap();
    assert_eq!(
        slice_error(store.add_port(&s, PortId::new(2, 2))),
        SliceError::PortExists(PortId::new(2, 2))
    );
}

pub fn ports_and_macs_keep_insertion_order<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let s = name("s");
    store.create_slice(&s).unwrap();
    let ports = [PortId::new(9, 1), PortId::new(1, 7), PortId::new(5, 0)];
    for port in ports {
        store.add_port(&s, port).unwrap();
    }
    assert_eq!(store.ports(&s).unwrap(), ports);
    for last in [9, 3, 7] {
        store.add_mac(&s, ports[1], mac(last)).unwrap();
    }
    assert_eq!(store.macs(&s, ports[1]).unwrap(), [mac(9), mac(3), mac(7)]);
    assert!(store.macs(&s, ports[0]).unwrap().is_empty());
    // The same MAC address on two ports of a slice, or in two slices, is two entries.
    store.add_mac(&s, ports[0], mac(9)).unwrap();
    store.create_slice(&name("t")).unwrap();
    store.add_mac(&name("t"), ports[1], mac(9)).unwrap();
    assert_eq!(store.macs(&s, ports[1]).unwrap(), [mac(9), mac(3), mac(7)]);
}

pub fn adding_a_mac_creates_its_port<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let s = name("s");
    let port = PortId::new(1, 2);
    store.create_slice(&s).unwrap();
    store.add_port(&s, PortId::new(7, 7)).unwrap();
    assert!(store.add_mac(&s, port, mac(1)).unwrap(), "the port is new");
    assert!(!store.add_mac(&s, port, mac(2)).unwrap(), "the port exists");
    assert_eq!(store.ports(&s).unwrap(), [PortId::new(7, 7), port]);
    assert_eq!(store.macs(&s, port).unwrap(), [mac(1), mac(2)]);
    store.check_port(&s, port).unwrap();
}

pub fn reads_check_slice_then_port_then_mac<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let (s, missing) = (name("s"), name("missing"));
    let port = PortId::new(1, 1);
    store.create_slice(&s).unwrap();
    let slice_missing = SliceError::SliceNotFound(missing.clone());
    assert_eq!(slice_error(store.check_slice(&missing)), slice_missing);
    assert_eq!(slice_error(store.ports(&missing)), slice_missing);
    assert_eq!(slice_error(store.check_port(&missing, port)), slice_missing);
    assert_eq!(slice_error(store.macs(&missing, port)), slice_missing);
    assert_eq!(
        slice_error(store.check_mac(&missing, port, mac(1))),
        slice_missing
    );
    let port_missing = SliceError::PortNotFound(port);
    assert_eq!(slice_error(store.check_port(&s, port)), port_missing);
    assert_eq!(slice_error(store.macs(&s, port)), port_missing);
    assert_eq!(slice_error(store.check_mac(&s, port, mac(1))), port_missing);
    store.add_port(&s, port).unwrap();
    assert_eq!(
        slice_error(store.check_mac(&s, port, mac(1))),
        SliceError::MacNotFound(mac(1))
    );
    store.add_mac(&s, port, mac(1)).unwrap();
    store.check_slice(&s).unwrap();
    store.check_port(&s, port).unwrap();
    store.check_mac(&s, port, mac(1)).unwrap();
    // A MAC address is looked up on its own port only.
    store.add_port(&s, PortId::new(2, 2)).unwrap();
    assert_eq!(
        slice_error(store.check_mac(&s, PortId::new(2, 2), mac(1))),
        SliceError::MacNotFound(mac(1))
    );
}

pub fn writes_check_slice_then_port_then_mac<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let (s, missing) = (name("s"), name("missing"));
    let port = PortId::new(1, 1);
    store.create_slice(&s).unwrap();
    let slice_missing = SliceError::SliceNotFound(missing.clone());
    assert_eq!(slice_error(store.delete_slice(&missing)), slice_missing);
    assert_eq!(slice_error(store.add_port(&missing, port)), slice_missing);
    assert_eq!(
        slice_error(store.delete_port(&missing, port)),
        slice_missing
    );
    assert_eq!(
        slice_error(store.add_mac(&missing, port, mac(1))),
        slice_missing
    );
    assert_eq!(
        slice_error(store.delete_mac(&missing, port, mac(1))),
        slice_missing
    );
    let port_missing = SliceError::PortNotFound(port);
    assert_eq!(slice_error(store.delete_port(&s, port)), port_missing);
    assert_eq!(
        slice_error(store.delete_mac(&s, port, mac(1))),
        port_missing
    );
    store.add_port(&s, port).unwrap();
    assert_eq!(
        slice_error(store.delete_mac(&s, port, mac(1))),
        SliceError::MacNotFound(mac(1))
    );
    assert!(store.slices().unwrap() == [s.clone()] && store.ports(&s).unwrap() == [port]);
}

pub fn deleting_twice_finds_nothing_the_second_time<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let s = name("s");
    let port = PortId::new(1, 1);
    store.create_slice(&s).unwrap();
    store.add_mac(&s, port, mac(1)).unwrap();
    store.add_mac(&s, port, mac(2)).unwrap();
    store.delete_mac(&s, port, mac(1)).unwrap();
    assert_eq!(
        slice_error(store.delete_mac(&s, port, mac(1))),
        SliceError::MacNotFound(mac(1))
    );
    assert_eq!(store.macs(&s, port).unwrap(), [mac(2)]);
    store.delete_port(&s, port).unwrap();
    assert_eq!(
        slice_error(store.delete_port(&s, port)),
        SliceError::PortNotFound(port)
    );
    store.delete_slice(&s).unwrap();
    assert_eq!(
        slice_error(store.delete_slice(&s)),
        SliceError::SliceNotFound(s.clone())
    );
}

pub fn deletes_cascade_return_what_they_held_and_leave_the_rest<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let s = name("s");
    let (p1, p2) = (PortId::new(1, 1), PortId::new(2, 2));
    store.create_slice(&s).unwrap();
    store.create_slice(&name("other")).unwrap();
    store.add_mac(&name("other"), p1, mac(1)).unwrap();
    store.add_mac(&s, p1, mac(1)).unwrap();
    store.add_mac(&s, p1, mac(2)).unwrap();
    store.add_mac(&s, p2, mac(3)).unwrap();

    // Deleting a MAC address leaves its port in the slice (spec rule 2.6).
    store.delete_mac(&s, p1, mac(1)).unwrap();
    assert_eq!(store.macs(&s, p1).unwrap(), [mac(2)]);
    assert_eq!(store.ports(&s).unwrap(), [p1, p2]);

    let removed = store.delete_port(&s, p1).unwrap();
    assert_eq!(
        removed,
        Port {
            id: p1,
            macs: vec![mac(2)]
        }
    );
    assert_eq!(store.ports(&s).unwrap(), [p2]);
    // A port added again starts empty and goes to the end.
    store.add_port(&s, p1).unwrap();
    assert!(store.macs(&s, p1).unwrap().is_empty());
    assert_eq!(store.ports(&s).unwrap(), [p2, p1]);

    let removed = store.delete_slice(&s).unwrap();
    assert_eq!(
        removed,
        Slice {
            name: s.clone(),
            ports: vec![
                Port {
                    id: p2,
                    macs: vec![mac(3)]
                },
                Port {
                    id: p1,
                    macs: vec![]
                },
            ],
        }
    );
    assert_eq!(store.slices().unwrap(), [name("other")]);
    // Nothing of the old slice leaks into a new one of the same name, which lists last.
    store.create_slice(&s).unwrap();
    assert!(store.ports(&s).unwrap().is_empty());
    assert_eq!(store.slices().unwrap(), [name("other"), s.clone()]);
    // The other slice kept its port and MAC address.
    assert_eq!(store.macs(&name("other"), p1).unwrap(), [mac(1)]);
}

pub fn a_failed_write_changes_nothing<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let s = name("s");
    let port = PortId::new(1, 1);
    store.create_slice(&s).unwrap();
    store.add_mac(&s, port, mac(1)).unwrap();
    let before = store.snapshot().unwrap();
    let content = store.content_version().unwrap();
    slice_error(store.create_slice(&s));
    slice_error(store.add_port(&s, port));
    slice_error(store.add_mac(&s, port, mac(1)));
    slice_error(store.add_mac(&name("missing"), PortId::new(2, 2), mac(2)));
    slice_error(store.delete_mac(&s, port, mac(2)));
    slice_error(store.delete_port(&s, PortId::new(2, 2)));
    slice_error(store.delete_slice(&name("missing")));
    assert_eq!(store.snapshot().unwrap(), before);
    assert_eq!(store.content_version().unwrap(), content);
}

/// Every successful change, whichever way it is made, gives a content version not seen
/// before; reads and refused writes leave it as it is.
pub fn the_content_version_changes_with_every_change_and_nothing_else<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let (blue, port) = (name("blue"), PortId::new(1, 1));
    let mut seen = BTreeSet::from([store.content_version().unwrap()]);
    let mut changed = |store: &dyn SliceStore, what: &str| {
        let version = store.content_version().unwrap();
        assert!(
            seen.insert(version),
            "{what}: version {version} seen before"
        );
        // Reading changes nothing, and neither does a readiness probe of a working store.
        let _ = store.snapshot().unwrap();
        let _ = store.macs(&blue, port);
        store.probe().unwrap();
        assert_eq!(
            store.content_version().unwrap(),
            version,
            "{what}, then reads"
        );
    };
    store.create_slice(&blue).unwrap();
    changed(store.as_ref(), "slice created");
    store.add_port(&blue, port).unwrap();
    changed(store.as_ref(), "port added");
    store.add_mac(&blue, port, mac(1)).unwrap();
    changed(store.as_ref(), "MAC address added");
    let before = store.content_version().unwrap();
    slice_error(store.add_mac(&blue, port, mac(1)));
    assert_eq!(store.content_version().unwrap(), before, "a refused add");
    store.delete_mac(&blue, port, mac(1)).unwrap();
    changed(store.as_ref(), "MAC address deleted");
    submit(&store, Write::AddMac(blue.clone(), port, mac(2))).unwrap();
    changed(store.as_ref(), "MAC address added as data");
    store.delete_port(&blue, port).unwrap();
    changed(store.as_ref(), "port deleted");
    store.apply(&declared(&[("red", &[])])).unwrap();
    changed(store.as_ref(), "declaration applied");
    store.delete_slice(&name("red")).unwrap();
    changed(store.as_ref(), "slice deleted");
}

pub fn everything_survives_reopening_in_order<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    for slice in ["b", "a", "c"] {
        store.create_slice(&name(slice)).unwrap();
    }
    store
        .add_mac(&name("a"), PortId::new(2, 1), mac(2))
        .unwrap();
    store
        .add_mac(&name("a"), PortId::new(1, 1), mac(1))
        .unwrap();
    store
        .add_mac(&name("a"), PortId::new(1, 1), mac(0))
        .unwrap();
    store.create_slice(&name("gone")).unwrap();
    store.delete_slice(&name("gone")).unwrap();
    store.delete_slice(&name("c")).unwrap();
    store.create_slice(&name("c")).unwrap();
    store.revoke_session(b"session", 200, 100).unwrap();
    let expected = store.snapshot().unwrap();
    assert_eq!(expected[1].ports[1].macs, [mac(1), mac(0)]);
    drop(store);
    let backend = backend.reopen();
    let store = backend.store();
    assert_eq!(store.snapshot().unwrap(), expected);
    assert_eq!(store.slices().unwrap(), [name("b"), name("a"), name("c")]);
    assert!(store.session_revoked(b"session", 50).unwrap());
    // The order goes on from where it was: a new slice and port come last.
    store.create_slice(&name("d")).unwrap();
    store.add_port(&name("a"), PortId::new(0, 0)).unwrap();
    assert_eq!(store.slices().unwrap().last(), Some(&name("d")));
    assert_eq!(
        store.ports(&name("a")).unwrap(),
        [PortId::new(2, 1), PortId::new(1, 1), PortId::new(0, 0)]
    );
}

/// Subscribes a listener that records what it hears.
fn record_changes(store: &dyn SliceStore) -> Arc<Mutex<Vec<Change>>> {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    store.subscribe(Box::new(move |change| {
        sink.lock().unwrap().push(change.clone())
    }));
    heard
}

pub fn listeners_hear_every_committed_change_once_in_order<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let s = name("s");
    let port = PortId::new(1, 1);
    store.create_slice(&name("before")).unwrap();
    let heard = record_changes(store.as_ref());
    // A write returns only once it has been told: a 2xx means the controller knows.
    let told = || heard.lock().unwrap().len();
    store.create_slice(&s).unwrap();
    assert_eq!(told(), 1);
    store.add_port(&s, PortId::new(2, 2)).unwrap();
    assert_eq!(told(), 2);
    store.add_mac(&s, port, mac(1)).unwrap();
    slice_error(store.create_slice(&s)); // refused: nothing to hear
    store.add_mac(&s, port, mac(2)).unwrap();
    store.delete_mac(&s, port, mac(2)).unwrap();
    store.delete_port(&s, PortId::new(2, 2)).unwrap();
    store.revoke_session(b"session", 200, 100).unwrap(); // not a membership change
    store.delete_slice(&s).unwrap();
    assert_eq!(told(), 7);
    let heard = heard.lock().unwrap();
    assert_eq!(
        *heard,
        [
            Change::SliceCreated(s.clone()),
            Change::PortAdded {
                slice: s.clone(),
                port: PortId::new(2, 2)
            },
            Change::MacAdded {
                slice: s.clone(),
                port,
                mac: mac(1)
            },
            Change::MacAdded {
                slice: s.clone(),
                port,
                mac: mac(2)
            },
            Change::MacDeleted {
                slice: s.clone(),
                port,
                mac: mac(2)
            },
            Change::PortDeleted {
                slice: s.clone(),
                port: Port {
                    id: PortId::new(2, 2),
                    macs: vec![]
                }
            },
            Change::SliceDeleted(Slice {
                name: s.clone(),
                ports: vec![Port {
                    id: port,
                    macs: vec![mac(1)]
                }],
            }),
        ]
    );
}

/// Which slices every host in `hosts` belongs to, and how many slices there are: what the
/// controller asks of its index.
fn answers(index: &Membership, hosts: &[Host]) -> (usize, Vec<Vec<SliceName>>) {
    let of = |host| {
        let mut slices = index.slices_of(host).to_vec();
        slices.sort();
        slices
    };
    (index.slice_count(), hosts.iter().map(of).collect())
}

pub fn subscribing_before_the_snapshot_loses_no_concurrent_change<B: Backend>() {
    const WRITERS: u8 = 4;
    const ROUNDS: u8 = 12;
    let backend = B::fresh();
    let store = backend.store();
    let hosts: Vec<Host> = (0..WRITERS)
        .flat_map(|writer| {
            (0..ROUNDS).map(move |round| Host {
                port: PortId::new(u64::from(writer), u32::from(round % 3)),
                mac: mac(round),
            })
        })
        .collect();
    // Each writer churns a slice of its own while the controller's start-up runs.
    let start = Arc::new(Barrier::new(usize::from(WRITERS) + 1));
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (store, start) = (store.clone(), start.clone());
            std::thread::spawn(move || {
                let slice = name(&format!("w{writer}"));
                start.wait();
                for round in 0..ROUNDS {
                    let port = PortId::new(u64::from(writer), u32::from(round % 3));
                    match round % 4 {
                        0 => drop(store.create_slice(&slice)),
                        1 | 2 => drop(store.add_mac(&slice, port, mac(round))),
                        _ => drop(store.delete_port(&slice, PortId::new(u64::from(writer), 1))),
                    }
                    if round == ROUNDS / 2 {
                        drop(store.delete_slice(&slice));
                    }
                }
            })
        })
        .collect();
    start.wait();
    // The controller's start-up: subscribe, then snapshot.
    let heard = record_changes(store.as_ref());
    let mut index = Membership::from_slices(&store.snapshot().unwrap());
    for writer in writers {
        writer.join().unwrap();
    }
    for change in heard.lock().unwrap().iter() {
        index.apply(change);
    }
    let settled = Membership::from_slices(&store.snapshot().unwrap());
    assert_eq!(answers(&index, &hosts), answers(&settled, &hosts));
}

pub fn racing_creates_of_one_slice_admit_exactly_one<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let start = Arc::new(Barrier::new(16));
    let racers: Vec<_> = (0..16)
        .map(|_| {
            let (store, start) = (store.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                store.create_slice(&name("contested"))
            })
        })
        .collect();
    let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    assert_eq!(results.iter().filter(|won| won.is_ok()).count(), 1);
    for lost in results.into_iter().filter(Result::is_err) {
        assert_eq!(
            slice_error(lost),
            SliceError::SliceExists(name("contested"))
        );
    }
    assert_eq!(store.slices().unwrap(), [name("contested")]);
}

pub fn concurrent_mac_adds_to_one_port_all_land<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let s = name("s");
    let port = PortId::new(1, 1);
    store.create_slice(&s).unwrap();
    let start = Arc::new(Barrier::new(32));
    let adders: Vec<_> = (0..32u8)
        .map(|last| {
            let (store, s, start) = (store.clone(), s.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                store.add_mac(&s, port, mac(last)).unwrap()
            })
        })
        .collect();
    let created = adders
        .into_iter()
        .map(|adder| adder.join().unwrap())
        .filter(|created| *created)
        .count();
    assert_eq!(created, 1, "exactly one add creates the port");
    assert_eq!(store.ports(&s).unwrap(), [port]);
    let mut macs = store.macs(&s, port).unwrap();
    macs.sort();
    assert_eq!(macs, (0..32).map(mac).collect::<Vec<_>>());
}

pub fn a_revoked_session_stays_revoked_until_it_expires<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    assert!(!store.session_revoked(b"session-a", 100).unwrap());
    store.revoke_session(b"session-a", 200, 150).unwrap();
    assert!(store.session_revoked(b"session-a", 100).unwrap());
    assert!(!store.session_revoked(b"session-b", 100).unwrap());
    // Revoking twice is harmless.
    store.revoke_session(b"session-a", 200, 160).unwrap();
    assert!(store.session_revoked(b"session-a", 100).unwrap());
    drop(store);
    let backend = backend.reopen();
    let store = backend.store();
    assert!(store.session_revoked(b"session-a", 100).unwrap());
    // Past its expiry an entry may go, and the session check refuses such a session
    // anyway; a live one stays.
    store.revoke_session(b"session-b", 400, 300).unwrap();
    assert!(store.session_revoked(b"session-b", 250).unwrap());
    assert!(!store.session_revoked(b"session-c", 250).unwrap());
}

// ---- applying a declared state -------------------------------------------------------------

/// A port and the last octets of its MAC addresses.
type DeclaredPort<'a> = (PortId, &'a [u8]);

fn declared(slices: &[(&str, &[DeclaredPort])]) -> Vec<Slice> {
    slices
        .iter()
        .map(|(slice, ports)| Slice {
            name: name(slice),
            ports: ports
                .iter()
                .map(|(port, macs)| Port {
                    id: *port,
                    macs: macs.iter().map(|last| mac(*last)).collect(),
                })
                .collect(),
        })
        .collect()
}

/// Every host of every slice, for comparing what two indexes answer.
fn hosts_of(slices: &[Slice]) -> Vec<Host> {
    slices
        .iter()
        .flat_map(|slice| &slice.ports)
        .flat_map(|port| {
            port.macs.iter().map(|mac| Host {
                port: port.id,
                mac: *mac,
            })
        })
        .collect()
}

pub fn applying_a_declared_state_makes_the_store_equal_to_it<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let (p1, p2, p3) = (PortId::new(1, 1), PortId::new(1, 2), PortId::new(2, 1));
    for slice in ["gone", "blue", "red"] {
        store.create_slice(&name(slice)).unwrap();
    }
    store.add_mac(&name("blue"), p1, mac(1)).unwrap();
    store.add_mac(&name("blue"), p1, mac(9)).unwrap();
    store.add_mac(&name("blue"), p2, mac(2)).unwrap();
    store.add_mac(&name("gone"), p3, mac(3)).unwrap();
    let before = store.snapshot().unwrap();
    let heard = record_changes(store.as_ref());

    let want = declared(&[
        ("new", &[(p3, &[5, 4])]),
        ("blue", &[(p3, &[]), (p1, &[7, 1])]),
        ("red", &[]),
    ]);
    let plan = store.apply(&want).unwrap();
    assert_eq!(plan, Plan::between(&before, &want).unwrap());
    // What both held stays in its place, what is new comes in the declared order.
    let expected = declared(&[
        ("blue", &[(p1, &[1, 7]), (p3, &[])]),
        ("red", &[]),
        ("new", &[(p3, &[5, 4])]),
    ]);
    assert_eq!(store.snapshot().unwrap(), expected);
    // The listeners, told every change, end where the store is.
    let mut index = Membership::from_slices(&before);
    for change in heard.lock().unwrap().iter() {
        index.apply(change);
    }
    let everyone: Vec<Host> = hosts_of(&before)
        .into_iter()
        .chain(hosts_of(&expected))
        .collect();
    assert_eq!(
        answers(&index, &everyone),
        answers(&Membership::from_slices(&expected), &everyone)
    );
    drop(store);
    let backend = backend.reopen();
    assert_eq!(backend.store().snapshot().unwrap(), expected);
}

pub fn applying_the_current_state_writes_nothing<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    store.create_slice(&name("blue")).unwrap();
    store
        .add_mac(&name("blue"), PortId::new(1, 1), mac(1))
        .unwrap();
    let before = store.snapshot().unwrap();
    let content = store.content_version().unwrap();
    let heard = record_changes(store.as_ref());
    assert!(store.apply(&before).unwrap().is_empty());
    assert_eq!(store.snapshot().unwrap(), before);
    assert_eq!(store.content_version().unwrap(), content);
    assert!(heard.lock().unwrap().is_empty());
}

pub fn a_declaration_that_names_something_twice_changes_nothing<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    store.create_slice(&name("blue")).unwrap();
    let before = store.snapshot().unwrap();
    let twice = declared(&[("red", &[]), ("green", &[]), ("red", &[])]);
    match store.apply(&twice) {
        Err(StoreError::Plan(PlanError::DuplicateSlice(slice))) => assert_eq!(slice, name("red")),
        other => panic!("expected a duplicate slice, got {other:?}"),
    }
    assert_eq!(store.snapshot().unwrap(), before);
}

/// Carries `write` out as the REST application does: through the store's queue when it
/// has one (waiting for the callback), else with [`Write::perform`].
fn submit(store: &Arc<dyn SliceStore>, write: Write) -> Result<Written, StoreError> {
    match store.queue() {
        Some(queue) => {
            let (done, outcome) = std::sync::mpsc::channel();
            queue.submit(
                write,
                Box::new(move |result| {
                    let _ = done.send(result);
                }),
            );
            outcome
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("the queue answers every write")
        }
        None => write.perform(store.as_ref()),
    }
}

/// Every kind of write, handed over as data, answers what its blocking method would and
/// leaves the same state behind; its errors are the contract's.
pub fn writes_as_data_answer_like_the_blocking_methods<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    let (s, port, other) = (name("s"), PortId::new(1, 1), PortId::new(2, 2));
    assert_eq!(
        submit(&store, Write::CreateSlice(s.clone())).unwrap(),
        Written::Done
    );
    assert!(matches!(
        submit(&store, Write::CreateSlice(s.clone())),
        Err(StoreError::Slice(SliceError::SliceExists(_)))
    ));
    assert_eq!(
        submit(&store, Write::AddMac(s.clone(), port, mac(1))).unwrap(),
        Written::MacAdded { port_created: true }
    );
    assert_eq!(
        submit(&store, Write::AddMac(s.clone(), port, mac(2))).unwrap(),
        Written::MacAdded {
            port_created: false
        }
    );
    assert_eq!(
        submit(&store, Write::AddPort(s.clone(), other)).unwrap(),
        Written::Done
    );
    assert_eq!(
        submit(&store, Write::DeleteMac(s.clone(), port, mac(1))).unwrap(),
        Written::Done
    );
    assert!(matches!(
        submit(&store, Write::DeleteMac(s.clone(), port, mac(1))),
        Err(StoreError::Slice(SliceError::MacNotFound(_)))
    ));
    assert_eq!(
        submit(&store, Write::DeletePort(s.clone(), other)).unwrap(),
        Written::Port(Port {
            id: other,
            macs: vec![]
        })
    );
    let declared = vec![Slice {
        name: s.clone(),
        ports: vec![Port {
            id: port,
            macs: vec![mac(2), mac(3)],
        }],
    }];
    match submit(&store, Write::Apply(declared.clone())).unwrap() {
        Written::Plan(plan) => assert!(!plan.is_empty()),
        other => panic!("an apply answered {other:?}"),
    }
    assert_eq!(store.snapshot().unwrap(), declared);
    assert_eq!(
        submit(&store, Write::DeleteSlice(s.clone())).unwrap(),
        Written::Slice(declared[0].clone())
    );
    assert!(store.slices().unwrap().is_empty());
}
