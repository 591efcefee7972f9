//! The fabric declared through the API (`PUT /topology/fabric`), kept in a sled tree of
//! its own as one record: [`DeclaredFabric::to_text`], one entry a line.
//!
//! The writer thread writes it like any other record, in its round's flush, and only then
//! publishes it to readers and tells the listeners. A record that does not read back stops
//! the open: a daemon that guessed at the fabric could let a host fake a link.

use slice_core::DeclaredFabric;

use crate::job::Op;
use crate::{Error, Store};

pub(crate) const TREE: &str = "fabric";
const DECLARED_KEY: &[u8] = b"declared";

/// The declaration `tree` holds; the default when none was made.
pub(crate) fn load(tree: &sled::Tree) -> Result<DeclaredFabric, Error> {
    let Some(text) = tree.get(DECLARED_KEY)? else {
        return Ok(DeclaredFabric::default());
    };
    std::str::from_utf8(&text)
        .ok()
        .and_then(|text| DeclaredFabric::from_text(text).ok())
        .ok_or_else(|| Error::Corrupt("malformed fabric declaration".into()))
}

/// Puts `fabric` in `tree`, in place of the one there: an empty declaration removes the
/// record, so a store that never had one and one whose declaration ended read the same.
pub(crate) fn write(tree: &sled::Tree, fabric: &DeclaredFabric) -> Result<(), Error> {
    if fabric.is_declared() {
        tree.insert(DECLARED_KEY, fabric.to_text().as_bytes())?;
    } else {
        tree.remove(DECLARED_KEY)?;
    }
    Ok(())
}

impl Store {
    /// The committed declaration.
    pub(crate) fn declared_fabric(&self) -> DeclaredFabric {
        self.inner.fabric.read().clone()
    }

    /// Replaces the declaration; returns once it is on disk and told.
    pub(crate) fn declare_fabric(&self, fabric: &DeclaredFabric) -> Result<(), Error> {
        self.run(Op::DeclareFabric(fabric.clone())).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // That a declaration is kept, told and survives a reopen is the store contract's
    // (tests/contract.rs); refusing a damaged record is this backend's.

    #[test]
    fn a_damaged_declaration_stops_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let declared = DeclaredFabric::parse(&["0x1:1-0x2:1"]).unwrap();
        store.declare_fabric(&declared).unwrap();
        store
            .inner
            .db
            .open_tree(TREE)
            .unwrap()
            .insert(DECLARED_KEY, &b"0x1:1-not a port\n"[..])
            .unwrap();
        store.inner.db.flush().unwrap();
        drop(store);
        let err = Store::open(dir.path())
            .err()
            .expect("a damaged record refused");
        assert!(err.to_string().contains("fabric"), "{err}");
    }
}
