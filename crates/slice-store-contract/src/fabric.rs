//! The declared fabric: kept with the slices, durable, told to the listeners.

use slice_core::{Change, DeclaredFabric};

use crate::{name, record_changes, Backend};

fn fabric(lines: &[&str]) -> DeclaredFabric {
    DeclaredFabric::parse(lines).unwrap()
}

pub fn a_declared_fabric_is_kept_told_and_survives_reopening<B: Backend>() {
    let backend = B::fresh();
    let store = backend.store();
    assert_eq!(store.declared_fabric().unwrap(), DeclaredFabric::default());
    let heard = record_changes(store.as_ref());
    let declared = fabric(&["0x1:10-0x2:10", "0x3:1"]);
    store.declare_fabric(&declared).unwrap();
    // Read and told by the time the write returns, like a slice's.
    assert_eq!(store.declared_fabric().unwrap(), declared);
    assert_eq!(
        *heard.lock().unwrap(),
        [Change::FabricDeclared(declared.clone())]
    );
    // The same declaration again tells nobody; a slice write is not a fabric change.
    store.declare_fabric(&declared).unwrap();
    store.create_slice(&name("s")).unwrap();
    assert_eq!(heard.lock().unwrap().len(), 2);
    let version = store.content_version().unwrap();
    let replaced = fabric(&["0x1:11-0x2:11"]);
    store.declare_fabric(&replaced).unwrap();
    assert_eq!(
        store.content_version().unwrap(),
        version,
        "the slices did not change"
    );
    drop((store, heard));
    let backend = backend.reopen();
    let store = backend.store();
    assert_eq!(store.declared_fabric().unwrap(), replaced);
    assert_eq!(store.slices().unwrap(), [name("s")]);
    // An empty declaration ends it.
    let heard = record_changes(store.as_ref());
    store.declare_fabric(&DeclaredFabric::default()).unwrap();
    assert_eq!(store.declared_fabric().unwrap(), DeclaredFabric::default());
    assert_eq!(
        *heard.lock().unwrap(),
        [Change::FabricDeclared(DeclaredFabric::default())]
    );
    drop((store, heard));
    let backend = backend.reopen();
    assert_eq!(
        backend.store().declared_fabric().unwrap(),
        DeclaredFabric::default()
    );
}
