//! The store contract (crates/slice-store-contract) run against etcd: each test starts an
//! etcd of its own, so that tests run in parallel and a reopen finds exactly its data.

use std::sync::Arc;

use slice_core::SliceStore;
use slice_etcd::test_server::LocalEtcd;
use slice_etcd::{EtcdStore, DEFAULT_PREFIX};
use slice_store_contract::{contract_tests, Backend};

struct Etcd {
    // Declared first so that the store goes before the server it talks to.
    store: Arc<EtcdStore>,
    server: LocalEtcd,
}

impl Backend for Etcd {
    fn fresh() -> Self {
        let server = LocalEtcd::start();
        let store = EtcdStore::open(&[server.endpoint()], DEFAULT_PREFIX).unwrap();
        Self {
            store: Arc::new(store),
            server,
        }
    }

    fn store(&self) -> Arc<dyn SliceStore> {
        self.store.clone()
    }

    fn reopen(self) -> Self {
        let Self { store, server } = self;
        drop(Arc::into_inner(store).expect("the test still holds a handle on the store"));
        let store = EtcdStore::open(&[server.endpoint()], DEFAULT_PREFIX).unwrap();
        Self {
            store: Arc::new(store),
            server,
        }
    }
}

contract_tests!(etcd, Etcd);
