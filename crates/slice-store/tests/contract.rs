//! The store contract (crates/slice-store-contract) run against sled.

use std::sync::Arc;

use slice_core::SliceStore;
use slice_store_contract::{contract_tests, Backend};

/// Longer than sled ever takes to let go of a closed database's lock.
const REOPEN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// sled, in a temporary directory.
struct Sled {
    dir: tempfile::TempDir,
    store: Arc<slice_store::Store>,
}

impl Backend for Sled {
    fn fresh() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(slice_store::Store::open(dir.path()).unwrap());
        Self { dir, store }
    }

    fn store(&self) -> Arc<dyn SliceStore> {
        self.store.clone()
    }

    fn reopen(self) -> Self {
        let Self { dir, store } = self;
        drop(Arc::into_inner(store).expect("the test still holds a handle on the store"));
        // sled lets go of its file lock only when its last background task has dropped the
        // file, a moment after the `Db` is gone (a new process never sees this): wait for
        // it as the tool and the daemon wait for each other.
        let store = match slice_store::Store::open_waiting(dir.path(), REOPEN_WAIT, || None::<()>) {
            Ok(slice_store::Opened::Store(store)) => store,
            Ok(slice_store::Opened::Elsewhere(())) => unreachable!("nowhere else was looked"),
            Err(err) => panic!("cannot reopen the store: {err}"),
        };
        Self {
            dir,
            store: Arc::from(store),
        }
    }
}

contract_tests!(sled, Sled);
